# CPack runs this after staging the packages' files (CPACK_PRE_BUILD_SCRIPTS): every rpath goes
# (an executable in /usr/bin finds /usr/lib's libraries without one, and lintian rejects it).
file(GLOB_RECURSE _staged LIST_DIRECTORIES FALSE "${CPACK_TEMPORARY_DIRECTORY}/*")
foreach(_file ${_staged})
  if(NOT IS_SYMLINK "${_file}")
    file(READ "${_file}" _magic LIMIT 4 HEX)
    if(_magic STREQUAL "7f454c46")  # ELF
      file(RPATH_REMOVE FILE "${_file}")
    endif()
  endif()
endforeach()
