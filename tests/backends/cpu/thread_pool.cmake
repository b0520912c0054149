# The CPU backend's thread pool, from the plugin's own objects (it is internal to the plugin).
pagoda_add_test(test_cpu_thread_pool LABELS cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_thread_pool.cpp)
target_link_libraries(test_cpu_thread_pool PRIVATE pagoda_backend_cpu_parts)
