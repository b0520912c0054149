# Debian packages of the install components, by CPack: `cmake --build build --target deb`
# writes build/deb/*.deb.
#   libpagoda0      runtime: libpagoda.so.0 and the backend plugins (the CPU one; the CUDA one is
#                   left out: it needs NVIDIA's libraries, which no Debian package carries)
#   libpagoda-dev   dev: headers, libpagoda.so, pagoda.pc, the CMake package, the layout printer
#   pagoda-tools    tools: the `pagoda` command, pagoda-conformance with the reference plugin
#                   (lib/pagoda/, out of discovery's way) and the bundled stories260K
# Library dependencies come from dpkg-shlibdeps; lintian finds no error in them
# (tests/install/check_debian_package.sh).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pagoda)
set(CPACK_PACKAGE_VENDOR "The Pagoda authors")
set(CPACK_PACKAGE_CONTACT "The Pagoda authors <maintainers@pagoda.dev>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/deb)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://pagoda.dev")
# The programs link the libpagoda of this very build: dpkg-shlibdeps reads its symbols from the
# staged runtime package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
  ${CPACK_PACKAGE_DIRECTORY}/_CPack_Packages/Linux/DEB/pagoda-${PROJECT_VERSION}-Linux/runtime/usr/${CMAKE_INSTALL_LIBDIR})

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libpagoda0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The shlibs file (for packages linking libpagoda.so.0), and ldconfig run as a trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
# Descriptions: a summary line, then paragraphs under 80 columns (CPack indents them).
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "embeddable LLM serving library
Pagoda serves large language models behind a small, stable C ABI: a paged
KV cache, continuous batching, tensor and pipeline parallelism planned over
a mesh of devices.

This package holds the shared library and its CPU backend plugin.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpagoda-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libpagoda0 (= ${PROJECT_VERSION}-1)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "embeddable LLM serving library - development files
Pagoda serves large language models behind a small, stable C ABI.

This package holds the C headers, the pkg-config file, the CMake package
(find_package(Pagoda)) and pagoda-abi-layout, which prints the layout of
every public struct for the authors of language bindings.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME pagoda-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libpagoda0 (= ${PROJECT_VERSION}-1)")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "embeddable LLM serving library - command-line tools
Pagoda serves large language models behind a small, stable C ABI.

This package holds the pagoda command (generate, serve an OpenAI-compatible
HTTP API, plan, profile, list devices), pagoda-conformance (checks a backend
plugin against the CPU backend, op by op) with the reference plugin in plain C
that it passes, and the bundled stories260K model.")

# Every package carries its copyright and changelog, where Debian keeps them.
set(_deb_doc ${CMAKE_BINARY_DIR}/debian-doc)
file(MAKE_DIRECTORY ${_deb_doc})
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/copyright ${_deb_doc}/copyright COPYONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in ${_deb_doc}/changelog.Debian @ONLY)
add_custom_command(OUTPUT ${_deb_doc}/changelog.Debian.gz
  COMMAND gzip -9nf --keep ${_deb_doc}/changelog.Debian
  DEPENDS ${_deb_doc}/changelog.Debian)
add_custom_target(pagoda_debian_doc DEPENDS ${_deb_doc}/changelog.Debian.gz)
foreach(_component runtime dev tools)
  string(TOUPPER ${_component} _upper)
  install(FILES ${_deb_doc}/copyright ${_deb_doc}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${_upper}_PACKAGE_NAME}
    COMPONENT ${_component} EXCLUDE_FROM_ALL)
endforeach()

# Installed programs find libpagoda through an rpath relative to themselves, so any prefix works;
# in /usr the linker's own path finds it and Debian forbids the rpath. Removed from the staged
# files before packaging.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/debian/strip_rpath.cmake)

include(CPack)

add_custom_target(deb
  COMMAND cpack --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Building the Debian packages into ${CPACK_PACKAGE_DIRECTORY}"
  VERBATIM)
add_dependencies(deb pagoda pagoda-backend-cpu pagoda_debian_doc)
foreach(_program pagoda-cli pagoda-conformance pagoda-abi-layout)
  if(TARGET ${_program})
    add_dependencies(deb ${_program})
  endif()
endforeach()
