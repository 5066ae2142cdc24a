# install(): the tools (bin/trtrace, bin/tensorrt_player), the shim and the C interface (lib/),
# component "runtime" (what the Python wheel holds), and for C++ consumers the headers, the static
# reader library and an exported package config (lib/cmake/trtrace), component "development":
#   find_package(trtrace CONFIG REQUIRED)  ->  trtrace::trace, trtrace::api, trtrace::c
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS trtrace tensorrt_player RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS tensorrt_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)

# The reader's dependencies are linked under their pkg-config names; the config file recreates them.
set_target_properties(trtrace_trace PROPERTIES EXPORT_NAME trace)
set_target_properties(trtrace_api PROPERTIES EXPORT_NAME api)
set_target_properties(trtrace_schema_fbs PROPERTIES EXPORT_NAME schema_fbs)
set_target_properties(trtrace_c PROPERTIES EXPORT_NAME c)
target_include_directories(trtrace_trace INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_include_directories(trtrace_api INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_include_directories(trtrace_c INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS trtrace_c EXPORT trtraceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(TARGETS trtrace_trace trtrace_api trtrace_schema_fbs EXPORT trtraceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/trace/include/trtrace DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development)
install(FILES ${PROJECT_SOURCE_DIR}/trace/capi/trtrace_c.h ${TRTRACE_GEN_DIR}/trtrace/api_table.h
              ${TRTRACE_GEN_DIR}/trtrace/api_abi.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trtrace COMPONENT development)
install(EXPORT trtraceTargets NAMESPACE trtrace:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trtrace
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/trtraceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/trtraceConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trtrace
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/trtraceConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/trtraceConfig.cmake ${PROJECT_BINARY_DIR}/trtraceConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trtrace COMPONENT development)
