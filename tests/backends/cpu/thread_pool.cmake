# The CPU backend's thread pool, compiled into the test (it is internal to the plugin).
find_package(Threads REQUIRED)
pagoda_add_test(test_cpu_thread_pool LABELS cpu SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_thread_pool.cpp ${PROJECT_SOURCE_DIR}/backends/cpu/thread_pool.cpp)
target_include_directories(test_cpu_thread_pool PRIVATE ${PROJECT_SOURCE_DIR}/backends/cpu)
target_link_libraries(test_cpu_thread_pool PRIVATE Threads::Threads)
