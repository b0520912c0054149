# Dense kernels of the CPU backend (matmul, embedding, norms, RoPE, elementwise, rowwise), each
# against a double-precision reference on seeded random data.
pagoda_add_test(test_cpu_matmul SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_matmul.c LABELS cpu)
pagoda_add_test(test_cpu_norm_rope SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_norm_rope.c LABELS cpu)
pagoda_add_test(test_cpu_elementwise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_elementwise.c LABELS cpu)
pagoda_add_test(test_cpu_rowwise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_rowwise.c LABELS cpu)
pagoda_add_test(test_cpu_dense_args SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_dense_args.c LABELS cpu)
