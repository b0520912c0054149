# The CPU backend's graphs: recording a stream and replaying it.
pagoda_add_test(test_cpu_graph SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_graph.c LABELS cpu)
