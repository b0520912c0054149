# Dense kernels of the CPU backend (matmul, embedding, norms, RoPE, elementwise, rowwise), each
# against a double-precision reference on seeded random data.
pagoda_add_test(test_cpu_matmul SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_matmul.c LABELS cpu)
pagoda_add_test(test_cpu_norm_rope SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_norm_rope.c LABELS cpu)
pagoda_add_test(test_cpu_elementwise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_elementwise.c LABELS cpu)
pagoda_add_test(test_cpu_rowwise SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_rowwise.c LABELS cpu)
pagoda_add_test(test_cpu_dense_args SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_dense_args.c LABELS cpu)
# Quantized block weights: the test decodes with the reference decoders the plugins link
# (src/formats).
pagoda_add_test(test_cpu_quant_matmul LABELS cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_quant_matmul.cpp)
target_link_libraries(test_cpu_quant_matmul PRIVATE pagoda_formats)
# ABI 1.8's dense ops for Gemma-family models: the GELU (tanh) gate, SOFTCAP, EMBEDDING's scale.
pagoda_add_test(test_cpu_gemma_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_gemma_ops.c LABELS cpu)
# ABI 1.8's mixture-of-experts ops: MOE_ROUTE, and MOE_MATMUL on every weight type (C++: the
# block weights are decoded by the reference decoders, src/formats).
pagoda_add_test(test_cpu_moe_route SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_moe_route.c LABELS cpu)
pagoda_add_test(test_cpu_moe_matmul LABELS cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_moe_matmul.cpp)
target_link_libraries(test_cpu_moe_matmul PRIVATE pagoda_formats)
