# Tools some tests need (cargo, go, mpirun, promtool, ...). On a developer's machine a missing
# one leaves its tests out, said in a status line; under CI (the environment's CI set, as
# .ci/run sets it) the configure step fails naming it, so that no check vanishes quietly.

# pagoda_tool_missing(<message>): the tests <message> describes cannot be registered.
function(pagoda_tool_missing message)
  if(DEFINED ENV{CI} AND NOT "$ENV{CI}" STREQUAL "" AND NOT "$ENV{CI}" STREQUAL "false")
    message(FATAL_ERROR "${message} (CI needs them; scripts/install-deps.sh installs the tool)")
  endif()
  message(STATUS "Pagoda: ${message}")
endfunction()

# pagoda_find_tool(<var> <program> <what it is for> [find_program options...]): <var> holds the
# program's path, or is false after pagoda_tool_missing said so.
function(pagoda_find_tool var program purpose)
  find_program(${var} ${program} ${ARGN})
  if(NOT ${var})
    pagoda_tool_missing("${program} not found: ${purpose} are not registered")
  endif()
endfunction()
