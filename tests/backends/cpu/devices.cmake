# The CPU backend as a mesh of logical devices: per-device threads, memory budgets, kernels,
# collectives and fault injection, each test with its own config ("devices=4,...").
pagoda_add_test(test_cpu_devices SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_devices.c LABELS cpu)
target_link_libraries(test_cpu_devices PRIVATE Threads::Threads)
# DeviceScope inside the plugin: each host thread and each pool worker sees its own device's pool.
pagoda_add_test(test_cpu_device_scope LABELS cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_device_scope.cpp)
target_link_libraries(test_cpu_device_scope PRIVATE pagoda_backend_cpu_parts)
