# PAGODA_OP_SAMPLE on the CPU backend against the exact double-precision oracle that the
# conformance suite also compares every backend's draws with.
pagoda_add_test(test_cpu_sample
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_sample.c
          ${CMAKE_CURRENT_LIST_DIR}/../conformance/sample_oracle.c
  LABELS cpu)
target_include_directories(test_cpu_sample PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../conformance)
