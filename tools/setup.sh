#!/usr/bin/env bash
# Idempotent project setup: Debian packages, the project-local Python environment with the
# pinned TensorRT-RTX wheels, and NVIDIA's reference shim (compare-only, never shipped).
# Everything lands under .deps/ (ignored by git); re-running skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.deps
mkdir -p "$deps"
log() { printf '[setup] %s\n' "$*" >&2; }

# --- Debian packages ---------------------------------------------------------------------------
apt_pkgs=(cmake g++ make pkg-config python3-venv libflatbuffers-dev flatbuffers-compiler
          libzstd-dev libxxhash-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          libsimdjson-dev clang libclang-rt-14-dev time clang-format
          libcurl4-openssl-dev libssl-dev          # registry/: push and pull (HTTP, TLS, SHA-256)
          docker-registry apache2-utils openssl)   # tests/test_registry.py: the registry, htpasswd, a certificate
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- Python environments with TensorRT-RTX (pinned), one prefix per library version ---------------
# .deps/venv holds 1.6.1 (the default), .deps/venv-1.7 holds 1.7.1; each is pinned by its own file.
make_venv() {  # make_venv <prefix> <requirements file>
  local venv=$1 req=$2 stamp=$1/.trtrace-requirements
  cmp -s "$req" "$stamp" 2>/dev/null && return 0
  log "creating Python environment $venv (pinned: ${req#$root/})"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
}
venv=$deps/venv
make_venv "$venv" "$root/tools/requirements.txt"
make_venv "$deps/venv-1.7" "$root/tools/requirements-1.7.txt"

# --- .deps/venv-torch: Torch-TensorRT-RTX 2.14 over TensorRT-RTX 1.6.1 (tests/test_torch_frontend.py) ---
# Large (3 GB to download, 5.8 GB installed: torch's CUDA wheels), so a failure warns and that test
# skips instead of stopping the setup; TRTRACE_SETUP_TORCH=0 leaves it out. No pip cache: it would
# keep another 3 GB.
torch_venv() {
  local venv=$deps/venv-torch req=$root/tools/requirements-torch.txt
  cmp -s "$req" "$venv/.trtrace-requirements" 2>/dev/null && return 0
  if [ "${TRTRACE_SETUP_TORCH:-1}" = 0 ]; then log "TRTRACE_SETUP_TORCH=0: not creating $venv"; return 0; fi
  log "creating Python environment $venv (pinned: ${req#$root/}; about 3 GB to download)"
  if { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } &&
     "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir -r "$req"; then
    cp "$req" "$venv/.trtrace-requirements"
  else
    log "WARNING: could not install ${req#$root/}; the Torch-TensorRT-RTX tests will be skipped"
  fi
}
torch_venv

# --- NVIDIA's reference shims (compare-only; separate prefixes, no dependencies) --------------------
# EP 0.4.0 bundles TensorRT-RTX 1.6.1 and its shim, EP 0.5.0 bundles 1.7.1 and its shim.
nv_install() {  # nv_install <prefix> <package==version>
  [ -f "$1/.done" ] && return 0
  log "installing NVIDIA reference shim package $2 into $1"
  if "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$1" "$2"; then
    touch "$1/.done"
  else
    log "WARNING: could not install $2; comparisons against NVIDIA's shim will be skipped"
  fi
}
nv_prefix=$deps/nvidia-ep
nv_install "$nv_prefix" onnxruntime-ep-nv-tensorrt-rtx-cu13==0.4.0
nv_install "$deps/nvidia-ep-0.5" onnxruntime-ep-nv-tensorrt-rtx-cu13==0.5.0
# --- ONNX backend test networks (the corpus runner's inputs, tests/corpus/) ------------------------
# The onnx 1.17.0 wheel is the last that ships node/ test models. Only its data subtree is unpacked;
# the venv keeps its pinned onnx. The wheel's content is checked against a pinned SHA-256.
onnx_data=$deps/onnx-1.17-data
onnx_whl=onnx-1.17.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
onnx_sha=4a183c6178be001bf398260e5ac2c927dc43e7746e8638d6c05c20e321f8c949
if [ ! -f "$onnx_data/.done" ]; then
  log "unpacking the onnx 1.17.0 backend test networks into $onnx_data"
  dl=$(mktemp -d)
  if "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
       --python-version 3.11 --platform manylinux2014_x86_64 -d "$dl" onnx==1.17.0 &&
     echo "$onnx_sha  $dl/$onnx_whl" | sha256sum -c --quiet -; then
    rm -rf "$onnx_data.tmp"
    "$venv/bin/python" - "$dl/$onnx_whl" "$onnx_data.tmp" <<'PY'
import pathlib, sys, zipfile
prefix = "onnx/backend/test/data/"
keep = ("node/", "pytorch-converted/", "pytorch-operator/", "simple/", "light/")
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        rel = info.filename[len(prefix):]
        if info.filename.startswith(prefix) and rel.startswith(keep) and not info.is_dir():
            dest = pathlib.Path(sys.argv[2], rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(info))
PY
    rm -rf "$onnx_data" && mv "$onnx_data.tmp" "$onnx_data" && touch "$onnx_data/.done"
  else
    log "WARNING: could not fetch onnx==1.17.0; the corpus (make corpus, tests/corpus) will be skipped"
  fi
  rm -rf "$dl"
fi

# NVIDIA's shim links libcuda.so.1; on a machine without a driver the CUDA toolkit's stub stands in
# (it is only needed so the dynamic loader can resolve the shim; CPU-only builds never call it).
stub_dir=$deps/cudastub
if [ ! -e "$stub_dir/libcuda.so.1" ]; then
  for s in /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so; do
    if [ -f "$s" ]; then mkdir -p "$stub_dir"; ln -sf "$s" "$stub_dir/libcuda.so.1"; break; fi
  done
fi
# --- build/env.sh (1.6, the default) and build/env-1.7.sh: one file to source for the toolchain -------
write_env() {  # write_env <file> <venv> <NVIDIA EP prefix> <version label>
  local venv=$2 site trt_dir nv_shim
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  trt_dir=$site/tensorrt_rtx_libs
  nv_shim=$3/onnxruntime_ep_nv_tensorrt_rtx/libtensorrt_shim.so
  [ -f "$nv_shim" ] || nv_shim=
  cat > "$1" <<ENV
# Generated by tools/setup.sh -- source it: python3 imports tensorrt_rtx $4, trtrace tools on PATH.
export TRTRACE_ROOT="$root"
export VIRTUAL_ENV="$venv"
export PATH="$root/build/bin:$venv/bin:\$PATH"
export TRTRACE_PYTHON="$venv/bin/python"
export TRTRACE_TRT_VERSION="$4"
export TRTRACE_TRT_LIBDIR="$trt_dir"
export TRTRACE_TRT_LIB="$trt_dir/libtensorrt_rtx.so.1"
export TRTRACE_ONNXPARSER_LIB="$trt_dir/libtensorrt_onnxparser_rtx.so.1"
export TRTRACE_NVIDIA_SHIM="$nv_shim"
export TRTRACE_CUDA_STUB_DIR="$stub_dir"
ENV
}
mkdir -p "$root/build"
write_env "$root/build/env.sh" "$venv" "$nv_prefix" 1.6
write_env "$root/build/env-1.7.sh" "$deps/venv-1.7" "$deps/nvidia-ep-0.5" 1.7
log "wrote build/env.sh (TensorRT-RTX 1.6) and build/env-1.7.sh (1.7)"
log "setup complete"
