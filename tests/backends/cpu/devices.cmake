# The CPU backend as a mesh of logical devices: per-device threads, memory budgets, kernels,
# collectives and fault injection, each test with its own config ("devices=4,...").
pagoda_add_test(test_cpu_devices SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_devices.c LABELS cpu)
target_link_libraries(test_cpu_devices PRIVATE Threads::Threads)
# DeviceScope inside the plugin: each host thread and each pool worker sees its own device's pool.
pagoda_add_test(test_cpu_device_scope LABELS cpu SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/test_cpu_device_scope.cpp
  ${PROJECT_SOURCE_DIR}/backends/cpu/cpu_backend.cpp
  ${PROJECT_SOURCE_DIR}/backends/cpu/memory_budget.cpp
  ${PROJECT_SOURCE_DIR}/backends/cpu/thread_pool.cpp)
target_include_directories(test_cpu_device_scope PRIVATE ${PROJECT_SOURCE_DIR}/backends/cpu
  ${PROJECT_SOURCE_DIR}/backends/common)
target_link_libraries(test_cpu_device_scope PRIVATE Threads::Threads)
