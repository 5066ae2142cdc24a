# Runs the API generator at build time: schema/api/*.api -> ${TRTRACE_GEN_DIR}/...
# Target trtrace_api: the generated ABI header + id/names table, for capture, replay and tools.
set(TRTRACE_GEN_DIR ${PROJECT_BINARY_DIR}/generated)
file(GLOB TRTRACE_API_SPECS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/schema/api/*.api)
# The generator: apigen.py (entry point), apispec.py (parser), apimodel.py, one gen_*.py per output.
file(GLOB TRTRACE_APIGEN CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/schema/*.py)
set(TRTRACE_GEN_OUTPUTS
    ${TRTRACE_GEN_DIR}/trtrace/api_abi.h ${TRTRACE_GEN_DIR}/trtrace/api_table.h
    ${TRTRACE_GEN_DIR}/api_table.cpp ${TRTRACE_GEN_DIR}/capture_gen.inc
    ${TRTRACE_GEN_DIR}/capture_overrides.h ${TRTRACE_GEN_DIR}/capture_entries.inc
    ${TRTRACE_GEN_DIR}/replay_gen.inc ${TRTRACE_GEN_DIR}/replay_overrides.h
    ${TRTRACE_GEN_DIR}/conformance_gen.inc)
add_custom_command(
  OUTPUT ${TRTRACE_GEN_OUTPUTS}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/schema/apigen.py
          --spec ${PROJECT_SOURCE_DIR}/schema/api --out ${TRTRACE_GEN_DIR}
  DEPENDS ${TRTRACE_API_SPECS} ${PROJECT_SOURCE_DIR}/schema/api/ids.lock ${TRTRACE_APIGEN}
  COMMENT "Generating ABI, API ids, shim wrappers and player dispatch from schema/api"
  VERBATIM)
add_custom_target(trtrace_api_gen DEPENDS ${TRTRACE_GEN_OUTPUTS})
add_library(trtrace_api STATIC ${TRTRACE_GEN_DIR}/api_table.cpp)
target_include_directories(trtrace_api PUBLIC $<BUILD_INTERFACE:${TRTRACE_GEN_DIR}>)
add_dependencies(trtrace_api trtrace_api_gen)
