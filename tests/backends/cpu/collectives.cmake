# Collectives of the CPU backend: ranks as threads of one process, and as 2 and 4 processes
# over shared memory (host scope).
pagoda_add_test(test_cpu_collectives SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_collectives.c LABELS cpu)
target_link_libraries(test_cpu_collectives PRIVATE Threads::Threads)
pagoda_test_processes(4 test_cpu_collectives)  # stalled-rank timeouts among them
