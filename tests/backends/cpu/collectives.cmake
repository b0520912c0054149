# In-process collectives of the CPU backend: ranks are threads.
pagoda_add_test(test_cpu_collectives SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_collectives.c LABELS cpu)
target_link_libraries(test_cpu_collectives PRIVATE Threads::Threads)
pagoda_test_processes(4 test_cpu_collectives)  # 2 and 4 processes, stalled-rank timeouts
