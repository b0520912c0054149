# The CPU backend's device half of the plugin ABI: memory, copies, streams and events.
pagoda_add_test(test_cpu_device SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_device.c LABELS cpu)
