# Entry points: `make demo` (capture -> replay of a real network) and `make test`.
# Each target installs what is missing (tools/setup.sh is idempotent) and builds first.
#   make test         the whole suite three ways: normal build, ASan+UBSan build, short libFuzzer run
#   make check        the normal build's suite only (the quick loop while developing)
#   make fuzz         the libFuzzer targets for FUZZ_SECONDS each (FUZZ_JOBS processes per target)
#   make wheel        dist/trtrace-*.whl (pip-installable: shim, player, CLI, Python package; tools/wheel.sh)
#   make corpus       every ONNX network of the corpus through both capture paths -> docs/corpus.md
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
FUZZ_TARGETS = fuzz_seedgen fuzz_trace_reader fuzz_blob_decoder fuzz_json_reader fuzz_replay fuzz_capi fuzz_export fuzz_registry

.PHONY: setup build check test sanitize fuzz fuzz-build demo bench corpus wheel clean
setup:
	@bash tools/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

check: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) || { bash $(CURDIR)/tools/failures.sh .; exit 1; }

# The same suite on an AddressSanitizer + UndefinedBehaviorSanitizer build (tests preload the
# sanitizer runtime into Python apps that load the shim; see tests/conftest.py).
sanitize: setup
	@cmake -S . -B $(ASAN_BUILD) -DTRTRACE_SANITIZE=address,undefined $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && TRTRACE_ASAN_RUNTIME=$$($(CXX) -print-file-name=libasan.so) \
	  ASAN_OPTIONS=strict_string_checks=1:detect_stack_use_after_return=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS) || { bash $(CURDIR)/tools/failures.sh .; exit 1; }

fuzz-build: setup
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTRTRACE_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(FUZZ_TARGETS)

fuzz: fuzz-build
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_JOBS)

test: check
	@$(MAKE) --no-print-directory sanitize
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20 FUZZ_JOBS=1

demo: build
	@bash tools/demo.sh $(BUILD)

bench: build
	@bash bench/run.sh $(BUILD)

# The whole corpus (tests/corpus/run_corpus.py): both capture paths and every tool, one line per
# network as it finishes, on 1.6 (docs/corpus.md, $(BUILD)/corpus/results.json) then on 1.7
# (docs/corpus-1.7.md, $(BUILD)/corpus-1.7/) when .deps/venv-1.7 exists. Exit 1 on any defect.
corpus: build
	@.deps/venv/bin/python tests/corpus/run_corpus.py --jobs $(JOBS) --out $(BUILD)/corpus --md docs/corpus.md; rc=$$?; \
	  if [ -x .deps/venv-1.7/bin/python ]; then .deps/venv-1.7/bin/python tests/corpus/run_corpus.py --jobs $(JOBS) \
	    --out $(BUILD)/corpus-1.7 --md docs/corpus-1.7.md || rc=1; fi; exit $$rc

wheel: setup
	@bash tools/wheel.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
