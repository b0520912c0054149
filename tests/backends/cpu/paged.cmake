# Paged-KV kernels of the CPU backend: KV_WRITE, PAGED_ATTENTION (against a double-precision
# attention over contiguous K/V) and COPY_BLOCKS / SWAP_BLOCKS.
pagoda_add_test(test_cpu_kv_write SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_kv_write.c LABELS cpu)
pagoda_add_test(test_cpu_paged_attention
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_paged_attention.c LABELS cpu)
pagoda_add_test(test_cpu_copy_blocks SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_copy_blocks.c LABELS cpu)
# Cache parallelism: PAGED_ATTENTION over one KV shard with its log-sum-exp (soft-capped too),
# merged by ATTENTION_MERGE; and ATTENTION_MERGE on its own.
pagoda_add_test(test_cpu_paged_attention_shards
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_paged_attention_shards.c LABELS cpu)
pagoda_add_test(test_cpu_attention_merge
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cpu_attention_merge.c LABELS cpu)
