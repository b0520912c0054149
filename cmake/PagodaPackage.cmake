# The installed package: the CMake config (find_package(Pagoda) -> Pagoda::pagoda) and pagoda.pc.
# The library, headers, plugins and the `pagoda` command install themselves where they are
# defined; this file adds the files that describe them to other build systems.
include(CMakePackageConfigHelpers)

set(PAGODA_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Pagoda)

install(EXPORT PagodaTargets NAMESPACE Pagoda:: DESTINATION ${PAGODA_CMAKE_PACKAGE_DIR} COMPONENT dev)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/PagodaConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/PagodaConfig.cmake
  INSTALL_DESTINATION ${PAGODA_CMAKE_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# Within one major version only functions, fields and values are appended (STYLE.md #7), so
# any 0.x library serves a host built against an older 0.y; the SONAME says the same.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/PagodaConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/PagodaConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/PagodaConfigVersion.cmake
  DESTINATION ${PAGODA_CMAKE_PACKAGE_DIR} COMPONENT dev)

# pagoda.pc finds the prefix from its own location (${pcfiledir}), so `cmake --install
# --prefix <anywhere>` gives a working file without reconfiguring.
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# bindir and libexecdir tell the bindings' tests where the `pagoda` command and the layout
# printer are.
set(_pc_dirs LIBDIR INCLUDEDIR BINDIR LIBEXECDIR)
set(_pc_relative TRUE)
foreach(_d ${_pc_dirs})
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(_pc_relative FALSE)
  endif()
endforeach()
if(_pc_relative)
  file(RELATIVE_PATH _pc_up /prefix/${_pc_dir} /prefix)
  string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
  set(PAGODA_PC_PREFIX "\${pcfiledir}/${_pc_up}")
  foreach(_d ${_pc_dirs})
    set(PAGODA_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endforeach()
else()
  set(PAGODA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  foreach(_d ${_pc_dirs})
    set(PAGODA_PC_${_d} "${CMAKE_INSTALL_FULL_${_d}}")
  endforeach()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/pagoda.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pagoda.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pagoda.pc DESTINATION ${_pc_dir} COMPONENT dev)
