/* Freezes the shipped layouts of the public ABI (STYLE.md #7): every field's offset and size,
 * every function-pointer slot's offset and signature, and every enumerator's value.
 *
 * Appending is allowed, so a struct may grow (FROZEN_MIN_SIZE) and new fields, slots and values
 * need no line here (add one when they ship). Anything else that fails here is an ABI break:
 * restore the layout, or add a new name (`_v2`) beside the old one.
 *
 * CTest compiles this file (tests/abi/CMakeLists.txt); compiling is the test. The numbers are
 * those of the LP64 ABIs that Pagoda ships on (x86_64 and aarch64 Linux).
 */
#include <stddef.h>

#include "pagoda/pagoda.h"

#if !defined(__LP64__)
#error "the frozen layouts are those of LP64 targets"
#endif

/* A data field: where it starts and how many bytes it takes. */
#define FROZEN_FIELD(type, field, offset, size)                                               \
    _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved");            \
    _Static_assert(sizeof(((type *)0)->field) == (size), #type "." #field " changed size")

/* A function-pointer slot: where it starts and its exact type (the variadic part). */
#define FROZEN_SLOT(type, field, offset, ...)                                                 \
    _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved");            \
    _Static_assert(_Generic(((type *)0)->field, __VA_ARGS__: 1, default: 0),                  \
                   #type "." #field " changed signature")

/* A struct may only grow (fields are appended). */
#define FROZEN_MIN_SIZE(type, size) \
    _Static_assert(sizeof(type) >= (size), #type " shrank")

/* An enumerator or constant keeps its value. */
#define FROZEN_VALUE(name, value) _Static_assert((name) == (value), #name " changed value")

/* ---- Constants -------------------------------------------------------------------------- */

FROZEN_VALUE(PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION), 1);
FROZEN_VALUE(PAGODA_DEVICE_HOST_ACCESSIBLE, 1u);
FROZEN_VALUE(PAGODA_DEVICE_USES_HOST_WEIGHTS, 2u);
FROZEN_VALUE(PAGODA_COMM_UNIQUE_ID_BYTES, 128);
FROZEN_VALUE(PAGODA_MATMUL_ACCUMULATE, 1u);
FROZEN_VALUE(PAGODA_EVENT_TIMING, 1u);
_Static_assert(sizeof(PAGODA_BACKEND_ENTRY_SYMBOL) == sizeof("pagoda_backend_entry"),
               "PAGODA_BACKEND_ENTRY_SYMBOL changed");

/* The entry point's type, which every plugin exports. */
_Static_assert(_Generic((pagoda_backend_entry_fn)0,
                        pagoda_status_t (*)(const pagoda_backend_host_t *, const char *,
                                            const pagoda_backend_iface_t **): 1,
                        default: 0),
               "pagoda_backend_entry_fn changed signature");

/* ---- Enumerations ----------------------------------------------------------------------- */

/* pagoda_status_t (status.h) */
FROZEN_VALUE(PAGODA_OK, 0);
FROZEN_VALUE(PAGODA_ERR_INVALID_ARGUMENT, 1);
FROZEN_VALUE(PAGODA_ERR_OUT_OF_MEMORY, 2);
FROZEN_VALUE(PAGODA_ERR_NOT_FOUND, 3);
FROZEN_VALUE(PAGODA_ERR_IO, 4);
FROZEN_VALUE(PAGODA_ERR_FORMAT, 5);
FROZEN_VALUE(PAGODA_ERR_UNSUPPORTED, 6);
FROZEN_VALUE(PAGODA_ERR_ABI_MISMATCH, 7);
FROZEN_VALUE(PAGODA_ERR_NOT_A_PLUGIN, 8);
FROZEN_VALUE(PAGODA_ERR_BACKEND, 9);
FROZEN_VALUE(PAGODA_ERR_INVALID_HANDLE, 10);
FROZEN_VALUE(PAGODA_ERR_ALREADY_EXISTS, 11);
FROZEN_VALUE(PAGODA_ERR_CANCELLED, 12);
FROZEN_VALUE(PAGODA_ERR_EMPTY, 13);
FROZEN_VALUE(PAGODA_ERR_INTERNAL, 14);

/* pagoda_dtype_t (dtype.h) */
FROZEN_VALUE(PAGODA_DTYPE_INVALID, 0);
FROZEN_VALUE(PAGODA_DTYPE_F32, 1);
FROZEN_VALUE(PAGODA_DTYPE_F16, 2);
FROZEN_VALUE(PAGODA_DTYPE_BF16, 3);
FROZEN_VALUE(PAGODA_DTYPE_I32, 4);
FROZEN_VALUE(PAGODA_DTYPE_I64, 5);
FROZEN_VALUE(PAGODA_DTYPE_I8, 6);
FROZEN_VALUE(PAGODA_DTYPE_U8, 7);

/* pagoda_op_t (ops.h) */
FROZEN_VALUE(PAGODA_OP_INVALID, 0);
FROZEN_VALUE(PAGODA_OP_MATMUL, 1);
FROZEN_VALUE(PAGODA_OP_EMBEDDING, 2);
FROZEN_VALUE(PAGODA_OP_RMSNORM, 3);
FROZEN_VALUE(PAGODA_OP_ROPE, 4);
FROZEN_VALUE(PAGODA_OP_SILU_MUL, 5);
FROZEN_VALUE(PAGODA_OP_ADD, 6);
FROZEN_VALUE(PAGODA_OP_ARGMAX, 7);
FROZEN_VALUE(PAGODA_OP_SOFTMAX, 8);
FROZEN_VALUE(PAGODA_OP_KV_WRITE, 9);
FROZEN_VALUE(PAGODA_OP_PAGED_ATTENTION, 10);
FROZEN_VALUE(PAGODA_OP_COPY_BLOCKS, 11);
FROZEN_VALUE(PAGODA_OP_SWAP_BLOCKS, 12);
FROZEN_VALUE(PAGODA_OP_SAMPLE, 13);
FROZEN_VALUE(PAGODA_OP_ATTENTION_MERGE, 14);
FROZEN_VALUE(PAGODA_OP_SOFTCAP, 15);
FROZEN_VALUE(PAGODA_OP_MOE_ROUTE, 16);
FROZEN_VALUE(PAGODA_OP_MOE_MATMUL, 17);
FROZEN_VALUE(PAGODA_MOE_SOFTMAX_TOPK, 0);
FROZEN_VALUE(PAGODA_MOE_SOFTMAX_TOPK_NORM, 1);
FROZEN_VALUE(PAGODA_GLU_SILU, 0);
FROZEN_VALUE(PAGODA_GLU_GELU_TANH, 1);

/* pagoda_rope_layout_t (ops.h) */
FROZEN_VALUE(PAGODA_ROPE_HALF_SPLIT, 0);
FROZEN_VALUE(PAGODA_ROPE_INTERLEAVED, 1);

/* pagoda_rope_scaling_t (ops.h) */
FROZEN_VALUE(PAGODA_ROPE_SCALING_NONE, 0);
FROZEN_VALUE(PAGODA_ROPE_SCALING_LINEAR, 1);
FROZEN_VALUE(PAGODA_ROPE_SCALING_LLAMA3, 2);

/* pagoda_kv_layout_t (ops.h) */
FROZEN_VALUE(PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN, 0);

/* pagoda_swap_direction_t (ops.h) */
FROZEN_VALUE(PAGODA_SWAP_OUT, 0);
FROZEN_VALUE(PAGODA_SWAP_IN, 1);

/* pagoda_log_level_t (log.h) */
FROZEN_VALUE(PAGODA_LOG_DEBUG, 0);
FROZEN_VALUE(PAGODA_LOG_INFO, 1);
FROZEN_VALUE(PAGODA_LOG_WARN, 2);
FROZEN_VALUE(PAGODA_LOG_ERROR, 3);
FROZEN_VALUE(PAGODA_LOG_OFF, 4);

/* pagoda_device_kind_t (plugin.h) */
FROZEN_VALUE(PAGODA_DEVICE_CPU, 0);
FROZEN_VALUE(PAGODA_DEVICE_GPU, 1);

/* pagoda_copy_kind_t (plugin.h) */
FROZEN_VALUE(PAGODA_COPY_HOST_TO_DEVICE, 0);
FROZEN_VALUE(PAGODA_COPY_DEVICE_TO_HOST, 1);
FROZEN_VALUE(PAGODA_COPY_DEVICE_TO_DEVICE, 2);
FROZEN_VALUE(PAGODA_COPY_HOST_TO_HOST, 3);

/* pagoda_reduce_op_t (plugin.h) */
FROZEN_VALUE(PAGODA_REDUCE_SUM, 0);
FROZEN_VALUE(PAGODA_REDUCE_MAX, 1);
FROZEN_VALUE(PAGODA_REDUCE_MIN, 2);

/* ---- Structures ------------------------------------------------------------------------- */

/* pagoda_backend_host_t (plugin.h) */
FROZEN_FIELD(pagoda_backend_host_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_backend_host_t, abi_version, 4, 4);
FROZEN_FIELD(pagoda_backend_host_t, ctx, 8, 8);
FROZEN_SLOT(pagoda_backend_host_t, log, 16,
            void (*)(void *, pagoda_log_level_t, const char *));
FROZEN_SLOT(pagoda_backend_host_t, set_error, 24,
            void (*)(void *, const char *));
FROZEN_SLOT(pagoda_backend_host_t, host_alloc, 32,
            void *(*)(void *, size_t, size_t));
FROZEN_SLOT(pagoda_backend_host_t, host_free, 40,
            void (*)(void *, void *));
FROZEN_MIN_SIZE(pagoda_backend_host_t, 48);

/* pagoda_device_info_t (plugin.h) */
FROZEN_FIELD(pagoda_device_info_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_device_info_t, kind, 4, 4);
FROZEN_FIELD(pagoda_device_info_t, flags, 8, 4);
FROZEN_FIELD(pagoda_device_info_t, compute_units, 12, 4);
FROZEN_FIELD(pagoda_device_info_t, total_memory, 16, 8);
FROZEN_FIELD(pagoda_device_info_t, free_memory, 24, 8);
FROZEN_FIELD(pagoda_device_info_t, name, 32, 128);
FROZEN_FIELD(pagoda_device_info_t, arch, 160, 32);
FROZEN_MIN_SIZE(pagoda_device_info_t, 192);

/* pagoda_backend_kernels_t (plugin.h) */
FROZEN_FIELD(pagoda_backend_kernels_t, struct_size, 0, 4);
FROZEN_SLOT(pagoda_backend_kernels_t, supports, 8,
            pagoda_status_t (*)(void *, int32_t, pagoda_op_t, const void *));
FROZEN_SLOT(pagoda_backend_kernels_t, launch, 16,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, pagoda_op_t, const void *));
FROZEN_MIN_SIZE(pagoda_backend_kernels_t, 24);

/* pagoda_comm_unique_id_t (plugin.h) */
FROZEN_FIELD(pagoda_comm_unique_id_t, bytes, 0, 128);
FROZEN_MIN_SIZE(pagoda_comm_unique_id_t, 128);

/* pagoda_backend_collectives_t (plugin.h) */
FROZEN_FIELD(pagoda_backend_collectives_t, struct_size, 0, 4);
FROZEN_SLOT(pagoda_backend_collectives_t, get_unique_id, 8,
            pagoda_status_t (*)(void *, pagoda_comm_unique_id_t *));
FROZEN_SLOT(pagoda_backend_collectives_t, comm_create, 16,
            pagoda_status_t (*)(void *, int32_t, const pagoda_comm_unique_id_t *, int32_t, int32_t,
                                pagoda_backend_comm_t **));
FROZEN_SLOT(pagoda_backend_collectives_t, comm_destroy, 24,
            void (*)(void *, pagoda_backend_comm_t *));
FROZEN_SLOT(pagoda_backend_collectives_t, comm_abort, 32,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *));
FROZEN_SLOT(pagoda_backend_collectives_t, all_reduce, 40,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *,
                                const void *, void *, size_t, pagoda_dtype_t, pagoda_reduce_op_t));
FROZEN_SLOT(pagoda_backend_collectives_t, all_gather, 48,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *,
                                const void *, void *, size_t, pagoda_dtype_t));
FROZEN_SLOT(pagoda_backend_collectives_t, reduce_scatter, 56,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *,
                                const void *, void *, size_t, pagoda_dtype_t, pagoda_reduce_op_t));
FROZEN_SLOT(pagoda_backend_collectives_t, broadcast, 64,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *,
                                const void *, void *, size_t, pagoda_dtype_t, int32_t));
FROZEN_SLOT(pagoda_backend_collectives_t, send, 72,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *,
                                const void *, size_t, pagoda_dtype_t, int32_t));
FROZEN_SLOT(pagoda_backend_collectives_t, recv, 80,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_backend_stream_t *, void *,
                                size_t, pagoda_dtype_t, int32_t));
FROZEN_SLOT(pagoda_backend_collectives_t, group_start, 88,
            pagoda_status_t (*)(void *));
FROZEN_SLOT(pagoda_backend_collectives_t, group_end, 96,
            pagoda_status_t (*)(void *));
FROZEN_SLOT(pagoda_backend_collectives_t, comm_get_async_error, 104,
            pagoda_status_t (*)(void *, pagoda_backend_comm_t *, pagoda_status_t *));
FROZEN_SLOT(pagoda_backend_collectives_t, get_unique_id_ex, 112,
            pagoda_status_t (*)(void *, const pagoda_comm_options_t *, pagoda_comm_unique_id_t *));
FROZEN_SLOT(pagoda_backend_collectives_t, comm_create_ex, 120,
            pagoda_status_t (*)(void *, int32_t, const pagoda_comm_unique_id_t *, int32_t, int32_t,
                                const pagoda_comm_options_t *, pagoda_backend_comm_t **));
FROZEN_MIN_SIZE(pagoda_backend_collectives_t, 128);

/* pagoda_comm_options_t (plugin.h, ABI 1.7) */
FROZEN_FIELD(pagoda_comm_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_comm_options_t, scope, 4, 4);
FROZEN_FIELD(pagoda_comm_options_t, timeout_ms, 8, 8);
FROZEN_VALUE(PAGODA_COMM_SCOPE_PROCESS, 0);
FROZEN_VALUE(PAGODA_COMM_SCOPE_HOST, 1);
FROZEN_VALUE(PAGODA_COMM_SCOPE_NETWORK, 2);

/* pagoda_backend_iface_t (plugin.h) */
FROZEN_FIELD(pagoda_backend_iface_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_backend_iface_t, abi_version, 4, 4);
FROZEN_FIELD(pagoda_backend_iface_t, name, 8, 8);
FROZEN_FIELD(pagoda_backend_iface_t, description, 16, 8);
FROZEN_FIELD(pagoda_backend_iface_t, self, 24, 8);
FROZEN_SLOT(pagoda_backend_iface_t, destroy, 32,
            void (*)(void *));
FROZEN_SLOT(pagoda_backend_iface_t, device_count, 40,
            pagoda_status_t (*)(void *, int32_t *));
FROZEN_SLOT(pagoda_backend_iface_t, device_info, 48,
            pagoda_status_t (*)(void *, int32_t, pagoda_device_info_t *));
FROZEN_SLOT(pagoda_backend_iface_t, buffer_alloc, 56,
            pagoda_status_t (*)(void *, int32_t, size_t, void **));
FROZEN_SLOT(pagoda_backend_iface_t, buffer_free, 64,
            void (*)(void *, int32_t, void *));
FROZEN_SLOT(pagoda_backend_iface_t, host_buffer_alloc, 72,
            pagoda_status_t (*)(void *, size_t, void **));
FROZEN_SLOT(pagoda_backend_iface_t, host_buffer_free, 80,
            void (*)(void *, void *));
FROZEN_SLOT(pagoda_backend_iface_t, stream_create, 88,
            pagoda_status_t (*)(void *, int32_t, pagoda_backend_stream_t **));
FROZEN_SLOT(pagoda_backend_iface_t, stream_destroy, 96,
            void (*)(void *, pagoda_backend_stream_t *));
FROZEN_SLOT(pagoda_backend_iface_t, stream_synchronize, 104,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *));
FROZEN_SLOT(pagoda_backend_iface_t, event_create, 112,
            pagoda_status_t (*)(void *, int32_t, uint32_t, pagoda_backend_event_t **));
FROZEN_SLOT(pagoda_backend_iface_t, event_destroy, 120,
            void (*)(void *, pagoda_backend_event_t *));
FROZEN_SLOT(pagoda_backend_iface_t, event_record, 128,
            pagoda_status_t (*)(void *, pagoda_backend_event_t *, pagoda_backend_stream_t *));
FROZEN_SLOT(pagoda_backend_iface_t, stream_wait_event, 136,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, pagoda_backend_event_t *));
FROZEN_SLOT(pagoda_backend_iface_t, event_synchronize, 144,
            pagoda_status_t (*)(void *, pagoda_backend_event_t *));
FROZEN_SLOT(pagoda_backend_iface_t, copy, 152,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, void *, const void *, size_t,
                                pagoda_copy_kind_t));
FROZEN_SLOT(pagoda_backend_iface_t, memset, 160,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, void *, int, size_t));
FROZEN_FIELD(pagoda_backend_iface_t, kernels, 168, 8);
FROZEN_FIELD(pagoda_backend_iface_t, collectives, 176, 8);
FROZEN_SLOT(pagoda_backend_iface_t, stream_query, 184,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, uint32_t *));
FROZEN_SLOT(pagoda_backend_iface_t, event_query, 192,
            pagoda_status_t (*)(void *, pagoda_backend_event_t *, uint32_t *));
FROZEN_SLOT(pagoda_backend_iface_t, event_elapsed, 200,
            pagoda_status_t (*)(void *, pagoda_backend_event_t *, pagoda_backend_event_t *,
                                float *));
/* ABI 1.1 */
FROZEN_SLOT(pagoda_backend_iface_t, graph_capture_begin, 208,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *));
FROZEN_SLOT(pagoda_backend_iface_t, graph_capture_end, 216,
            pagoda_status_t (*)(void *, pagoda_backend_stream_t *, pagoda_backend_graph_t **));
FROZEN_SLOT(pagoda_backend_iface_t, graph_launch, 224,
            pagoda_status_t (*)(void *, pagoda_backend_graph_t *, pagoda_backend_stream_t *));
FROZEN_SLOT(pagoda_backend_iface_t, graph_destroy, 232, void (*)(void *, pagoda_backend_graph_t *));
FROZEN_MIN_SIZE(pagoda_backend_iface_t, 240);

/* pagoda_op_matmul_t (ops.h) */
FROZEN_FIELD(pagoda_op_matmul_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_matmul_t, flags, 4, 4);
FROZEN_FIELD(pagoda_op_matmul_t, x_dtype, 8, 4);
FROZEN_FIELD(pagoda_op_matmul_t, w_dtype, 12, 4);
FROZEN_FIELD(pagoda_op_matmul_t, y_dtype, 16, 4);
FROZEN_FIELD(pagoda_op_matmul_t, m, 24, 8);
FROZEN_FIELD(pagoda_op_matmul_t, n, 32, 8);
FROZEN_FIELD(pagoda_op_matmul_t, k, 40, 8);
FROZEN_FIELD(pagoda_op_matmul_t, x, 48, 8);
FROZEN_FIELD(pagoda_op_matmul_t, ldx, 56, 8);
FROZEN_FIELD(pagoda_op_matmul_t, w, 64, 8);
FROZEN_FIELD(pagoda_op_matmul_t, ldw, 72, 8);
FROZEN_FIELD(pagoda_op_matmul_t, bias, 80, 8);
FROZEN_FIELD(pagoda_op_matmul_t, y, 88, 8);
FROZEN_FIELD(pagoda_op_matmul_t, ldy, 96, 8);
FROZEN_MIN_SIZE(pagoda_op_matmul_t, 104);

/* pagoda_op_embedding_t (ops.h) */
FROZEN_FIELD(pagoda_op_embedding_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_embedding_t, table_dtype, 4, 4);
FROZEN_FIELD(pagoda_op_embedding_t, vocab_size, 8, 8);
FROZEN_FIELD(pagoda_op_embedding_t, dim, 16, 8);
FROZEN_FIELD(pagoda_op_embedding_t, n_tokens, 24, 8);
FROZEN_FIELD(pagoda_op_embedding_t, table, 32, 8);
FROZEN_FIELD(pagoda_op_embedding_t, ids, 40, 8);
FROZEN_FIELD(pagoda_op_embedding_t, out, 48, 8);
FROZEN_FIELD(pagoda_op_embedding_t, ldo, 56, 8);
FROZEN_MIN_SIZE(pagoda_op_embedding_t, 64);

/* pagoda_op_rmsnorm_t (ops.h) */
FROZEN_FIELD(pagoda_op_rmsnorm_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_rmsnorm_t, weight_dtype, 4, 4);
FROZEN_FIELD(pagoda_op_rmsnorm_t, rows, 8, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, dim, 16, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, eps, 24, 4);
FROZEN_FIELD(pagoda_op_rmsnorm_t, x, 32, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, ldx, 40, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, residual, 48, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, ld_residual, 56, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, weight, 64, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, out, 72, 8);
FROZEN_FIELD(pagoda_op_rmsnorm_t, ldo, 80, 8);
FROZEN_MIN_SIZE(pagoda_op_rmsnorm_t, 88);

/* pagoda_op_rope_t (ops.h) */
FROZEN_FIELD(pagoda_op_rope_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_rope_t, layout, 4, 4);
FROZEN_FIELD(pagoda_op_rope_t, scaling, 8, 4);
FROZEN_FIELD(pagoda_op_rope_t, n_tokens, 16, 8);
FROZEN_FIELD(pagoda_op_rope_t, n_heads, 24, 8);
FROZEN_FIELD(pagoda_op_rope_t, head_dim, 32, 8);
FROZEN_FIELD(pagoda_op_rope_t, rot_dim, 40, 8);
FROZEN_FIELD(pagoda_op_rope_t, x, 48, 8);
FROZEN_FIELD(pagoda_op_rope_t, token_stride, 56, 8);
FROZEN_FIELD(pagoda_op_rope_t, positions, 64, 8);
FROZEN_FIELD(pagoda_op_rope_t, theta, 72, 4);
FROZEN_FIELD(pagoda_op_rope_t, factor, 76, 4);
FROZEN_FIELD(pagoda_op_rope_t, low_freq_factor, 80, 4);
FROZEN_FIELD(pagoda_op_rope_t, high_freq_factor, 84, 4);
FROZEN_FIELD(pagoda_op_rope_t, original_max_position, 88, 8);
FROZEN_FIELD(pagoda_op_rope_t, freq_factors, 96, 8);
FROZEN_MIN_SIZE(pagoda_op_rope_t, 104);

/* pagoda_op_silu_mul_t (ops.h) */
FROZEN_FIELD(pagoda_op_silu_mul_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_silu_mul_t, rows, 8, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, dim, 16, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, gate, 24, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, up, 32, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, ld_in, 40, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, out, 48, 8);
FROZEN_FIELD(pagoda_op_silu_mul_t, ldo, 56, 8);
FROZEN_MIN_SIZE(pagoda_op_silu_mul_t, 64);

/* pagoda_op_add_t (ops.h) */
FROZEN_FIELD(pagoda_op_add_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_add_t, n, 8, 8);
FROZEN_FIELD(pagoda_op_add_t, a, 16, 8);
FROZEN_FIELD(pagoda_op_add_t, b, 24, 8);
FROZEN_FIELD(pagoda_op_add_t, out, 32, 8);
FROZEN_MIN_SIZE(pagoda_op_add_t, 40);

/* pagoda_op_argmax_t (ops.h) */
FROZEN_FIELD(pagoda_op_argmax_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_argmax_t, rows, 8, 8);
FROZEN_FIELD(pagoda_op_argmax_t, cols, 16, 8);
FROZEN_FIELD(pagoda_op_argmax_t, x, 24, 8);
FROZEN_FIELD(pagoda_op_argmax_t, ldx, 32, 8);
FROZEN_FIELD(pagoda_op_argmax_t, out, 40, 8);
FROZEN_MIN_SIZE(pagoda_op_argmax_t, 48);

/* pagoda_op_softmax_t (ops.h) */
FROZEN_FIELD(pagoda_op_softmax_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_softmax_t, rows, 8, 8);
FROZEN_FIELD(pagoda_op_softmax_t, cols, 16, 8);
FROZEN_FIELD(pagoda_op_softmax_t, scale, 24, 4);
FROZEN_FIELD(pagoda_op_softmax_t, x, 32, 8);
FROZEN_FIELD(pagoda_op_softmax_t, ldx, 40, 8);
FROZEN_FIELD(pagoda_op_softmax_t, out, 48, 8);
FROZEN_FIELD(pagoda_op_softmax_t, ldo, 56, 8);
FROZEN_MIN_SIZE(pagoda_op_softmax_t, 64);

/* pagoda_op_kv_write_t (ops.h) */
FROZEN_FIELD(pagoda_op_kv_write_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_kv_write_t, layout, 4, 4);
FROZEN_FIELD(pagoda_op_kv_write_t, cache_dtype, 8, 4);
FROZEN_FIELD(pagoda_op_kv_write_t, n_tokens, 16, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, n_kv_heads, 24, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, head_dim, 32, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, block_size, 40, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, num_blocks, 48, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, k, 56, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, k_token_stride, 64, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, v, 72, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, v_token_stride, 80, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, k_cache, 88, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, v_cache, 96, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, slot_mapping, 104, 8);
FROZEN_FIELD(pagoda_op_kv_write_t, k_rope, 112, 8);
FROZEN_MIN_SIZE(pagoda_op_kv_write_t, 120);

/* pagoda_op_paged_attention_t (ops.h) */
FROZEN_FIELD(pagoda_op_paged_attention_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, layout, 4, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, cache_dtype, 8, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, causal, 12, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, n_seqs, 16, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, n_q_heads, 24, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, n_kv_heads, 32, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, head_dim, 40, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, block_size, 48, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, num_blocks, 56, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, max_blocks_per_seq, 64, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, max_context_len, 72, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, scale, 80, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, sliding_window, 84, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, q, 88, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, q_token_stride, 96, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, k_cache, 104, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, v_cache, 112, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, block_tables, 120, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, context_lens, 128, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, query_start, 136, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, out, 144, 8);
FROZEN_FIELD(pagoda_op_paged_attention_t, out_token_stride, 152, 8);
/* ABI 1.1 */
FROZEN_FIELD(pagoda_op_paged_attention_t, act_dtype, 160, 4);
/* ABI 1.2: cache parallelism */
FROZEN_FIELD(pagoda_op_paged_attention_t, kv_shards, 164, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, kv_shard, 168, 4);
FROZEN_FIELD(pagoda_op_paged_attention_t, lse, 176, 8);
FROZEN_MIN_SIZE(pagoda_op_paged_attention_t, 184);

/* pagoda_op_copy_blocks_t (ops.h) */
FROZEN_FIELD(pagoda_op_copy_blocks_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_copy_blocks_t, direction, 4, 4);
FROZEN_FIELD(pagoda_op_copy_blocks_t, n_caches, 8, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, src_caches, 16, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, dst_caches, 24, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, block_bytes, 32, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, n_pairs, 40, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, block_pairs, 48, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, src_num_blocks, 56, 8);
FROZEN_FIELD(pagoda_op_copy_blocks_t, dst_num_blocks, 64, 8);
FROZEN_MIN_SIZE(pagoda_op_copy_blocks_t, 72);

/* pagoda_op_attention_merge_t (ops.h, ABI 1.2) */
FROZEN_FIELD(pagoda_op_attention_merge_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_op_attention_merge_t, n_parts, 8, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, n_tokens, 16, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, n_heads, 24, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, head_dim, 32, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, parts, 40, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, lse, 48, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, out, 56, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, out_token_stride, 64, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, lse_out, 72, 8);
FROZEN_FIELD(pagoda_op_attention_merge_t, act_dtype, 80, 4);
FROZEN_MIN_SIZE(pagoda_op_attention_merge_t, 88);


/* ---- Serving and planning API (model.h, tokenizer.h, mesh.h, kv_cache.h, request.h, engine.h, engine_stats.h, plan.h) */
/* pagoda_model_options_t (model.h) */
FROZEN_FIELD(pagoda_model_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_model_options_t, progress, 8, 8);
FROZEN_FIELD(pagoda_model_options_t, progress_user, 16, 8);
FROZEN_MIN_SIZE(pagoda_model_options_t, 24);

/* pagoda_model_info_t (model.h) */
FROZEN_FIELD(pagoda_model_info_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_model_info_t, architecture, 4, 32);
FROZEN_FIELD(pagoda_model_info_t, vocab_size, 40, 8);
FROZEN_FIELD(pagoda_model_info_t, hidden_size, 48, 8);
FROZEN_FIELD(pagoda_model_info_t, intermediate_size, 56, 8);
FROZEN_FIELD(pagoda_model_info_t, n_layers, 64, 8);
FROZEN_FIELD(pagoda_model_info_t, n_heads, 72, 8);
FROZEN_FIELD(pagoda_model_info_t, n_kv_heads, 80, 8);
FROZEN_FIELD(pagoda_model_info_t, head_dim, 88, 8);
FROZEN_FIELD(pagoda_model_info_t, max_position, 96, 8);
FROZEN_FIELD(pagoda_model_info_t, n_parameters, 104, 8);
FROZEN_FIELD(pagoda_model_info_t, bos_token_id, 112, 4);
FROZEN_FIELD(pagoda_model_info_t, eos_token_id, 116, 4);
FROZEN_MIN_SIZE(pagoda_model_info_t, 120);

/* pagoda_tokenizer_info_t (tokenizer.h) */
FROZEN_FIELD(pagoda_tokenizer_info_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, vocab_size, 4, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, bos_token_id, 8, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, eos_token_id, 12, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, unk_token_id, 16, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, pad_token_id, 20, 4);
FROZEN_FIELD(pagoda_tokenizer_info_t, model, 24, 16);
FROZEN_MIN_SIZE(pagoda_tokenizer_info_t, 40);
FROZEN_VALUE(PAGODA_TOKENIZE_ADD_SPECIAL, 1u);
FROZEN_VALUE(PAGODA_TOKENIZE_PARSE_SPECIAL, 2u);
FROZEN_VALUE(PAGODA_DETOKENIZE_SKIP_SPECIAL, 1u);

/* pagoda_chat_template_options_t (tokenizer.h) */
FROZEN_FIELD(pagoda_chat_template_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_chat_template_options_t, add_generation_prompt, 4, 4);
FROZEN_FIELD(pagoda_chat_template_options_t, chat_template, 8, 8);
FROZEN_FIELD(pagoda_chat_template_options_t, template_name, 16, 8);
FROZEN_FIELD(pagoda_chat_template_options_t, tools_json, 24, 8);
FROZEN_FIELD(pagoda_chat_template_options_t, context_json, 32, 8);
FROZEN_MIN_SIZE(pagoda_chat_template_options_t, 40);

/* pagoda_mesh_options_t (mesh.h) */
FROZEN_FIELD(pagoda_mesh_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_mesh_options_t, devices, 8, 8);
FROZEN_FIELD(pagoda_mesh_options_t, axes, 16, 8);
FROZEN_FIELD(pagoda_mesh_options_t, rank, 24, 4);
FROZEN_FIELD(pagoda_mesh_options_t, world_size, 28, 4);
FROZEN_FIELD(pagoda_mesh_options_t, rendezvous, 32, 8);
FROZEN_FIELD(pagoda_mesh_options_t, bootstrap, 40, 8);
FROZEN_FIELD(pagoda_mesh_options_t, bootstrap_user, 48, 8);
FROZEN_FIELD(pagoda_mesh_options_t, timeout_ms, 56, 8);
FROZEN_MIN_SIZE(pagoda_mesh_options_t, 64);

/* pagoda_kv_cache_options_t (kv_cache.h) */
FROZEN_FIELD(pagoda_kv_cache_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_kv_cache_options_t, block_size, 4, 4);
FROZEN_FIELD(pagoda_kv_cache_options_t, dtype, 8, 4);
FROZEN_FIELD(pagoda_kv_cache_options_t, num_blocks, 16, 8);
FROZEN_FIELD(pagoda_kv_cache_options_t, memory_bytes, 24, 8);
FROZEN_FIELD(pagoda_kv_cache_options_t, swap_bytes, 32, 8);
FROZEN_FIELD(pagoda_kv_cache_options_t, prefix_caching, 40, 4);
FROZEN_MIN_SIZE(pagoda_kv_cache_options_t, 48);

/* pagoda_kv_cache_stats_t (kv_cache.h) */
FROZEN_FIELD(pagoda_kv_cache_stats_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_kv_cache_stats_t, block_size, 4, 4);
FROZEN_FIELD(pagoda_kv_cache_stats_t, blocks_total, 8, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, blocks_used, 16, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, blocks_free, 24, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, slots_used, 32, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, sequences, 40, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, bytes_per_block, 48, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, blocks_cached, 56, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, slots_wasted, 64, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, swap_blocks_total, 72, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, swap_blocks_used, 80, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, prefix_queries, 88, 8);
FROZEN_FIELD(pagoda_kv_cache_stats_t, prefix_hits, 96, 8);
FROZEN_MIN_SIZE(pagoda_kv_cache_stats_t, 104);

/* pagoda_request_options_t (request.h) */
FROZEN_FIELD(pagoda_request_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_request_options_t, flags, 4, 4);
FROZEN_FIELD(pagoda_request_options_t, max_tokens, 8, 4);
FROZEN_FIELD(pagoda_request_options_t, temperature, 12, 4);
FROZEN_FIELD(pagoda_request_options_t, top_k, 16, 4);
FROZEN_FIELD(pagoda_request_options_t, top_p, 20, 4);
FROZEN_FIELD(pagoda_request_options_t, min_p, 24, 4);
FROZEN_FIELD(pagoda_request_options_t, repetition_penalty, 28, 4);
FROZEN_FIELD(pagoda_request_options_t, presence_penalty, 32, 4);
FROZEN_FIELD(pagoda_request_options_t, frequency_penalty, 36, 4);
FROZEN_FIELD(pagoda_request_options_t, seed, 40, 8);
FROZEN_FIELD(pagoda_request_options_t, stop_token_ids, 48, 8);
FROZEN_FIELD(pagoda_request_options_t, n_stop_token_ids, 56, 8);
FROZEN_FIELD(pagoda_request_options_t, stop_strings, 64, 8);
FROZEN_FIELD(pagoda_request_options_t, n_stop_strings, 72, 8);
FROZEN_FIELD(pagoda_request_options_t, logprobs, 80, 4);
FROZEN_FIELD(pagoda_request_options_t, prompt_logprobs, 84, 4);
FROZEN_FIELD(pagoda_request_options_t, n, 88, 4);
FROZEN_FIELD(pagoda_request_options_t, best_of, 92, 4);
FROZEN_FIELD(pagoda_request_options_t, beam_width, 96, 4);
FROZEN_FIELD(pagoda_request_options_t, length_penalty, 100, 4);
FROZEN_FIELD(pagoda_request_options_t, early_stopping, 104, 4);
FROZEN_FIELD(pagoda_request_options_t, priority, 108, 4);
FROZEN_FIELD(pagoda_request_options_t, logit_bias, 112, 8);
FROZEN_FIELD(pagoda_request_options_t, n_logit_bias, 120, 8);
FROZEN_FIELD(pagoda_request_options_t, bad_words_token_ids, 128, 8);
FROZEN_FIELD(pagoda_request_options_t, bad_words_lengths, 136, 8);
FROZEN_FIELD(pagoda_request_options_t, n_bad_words, 144, 8);
FROZEN_FIELD(pagoda_request_options_t, allowed_token_ids, 152, 8);
FROZEN_FIELD(pagoda_request_options_t, n_allowed_token_ids, 160, 8);
FROZEN_SLOT(pagoda_request_options_t, logits_processor, 168,
    int32_t (*)(void *, uint64_t, int32_t, const int32_t *, size_t, size_t, float *, size_t));
FROZEN_FIELD(pagoda_request_options_t, logits_processor_user, 176, 8);
FROZEN_FIELD(pagoda_request_options_t, min_tokens, 184, 4);
FROZEN_FIELD(pagoda_request_options_t, constraint_kind, 188, 4);
FROZEN_FIELD(pagoda_request_options_t, constraint, 192, 8);
FROZEN_FIELD(pagoda_request_options_t, pooling, 200, 4);
FROZEN_FIELD(pagoda_request_options_t, embedding_normalize, 204, 4);
FROZEN_MIN_SIZE(pagoda_request_options_t, 208);

/* pagoda_logit_bias_t (request.h) */
FROZEN_FIELD(pagoda_logit_bias_t, token_id, 0, 4);
FROZEN_FIELD(pagoda_logit_bias_t, bias, 4, 4);
FROZEN_MIN_SIZE(pagoda_logit_bias_t, 8);

/* pagoda_logprob_t (request.h) */
FROZEN_FIELD(pagoda_logprob_t, token_id, 0, 4);
FROZEN_FIELD(pagoda_logprob_t, logprob, 4, 4);
FROZEN_MIN_SIZE(pagoda_logprob_t, 8);

/* pagoda_output_t (request.h) */
FROZEN_FIELD(pagoda_output_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_output_t, request_id, 8, 8);
FROZEN_FIELD(pagoda_output_t, finish_reason, 16, 4);
FROZEN_FIELD(pagoda_output_t, status, 20, 4);
FROZEN_FIELD(pagoda_output_t, error, 24, 8);
FROZEN_FIELD(pagoda_output_t, token_ids, 32, 8);
FROZEN_FIELD(pagoda_output_t, n_tokens, 40, 8);
FROZEN_FIELD(pagoda_output_t, text, 48, 8);
FROZEN_FIELD(pagoda_output_t, text_len, 56, 8);
FROZEN_FIELD(pagoda_output_t, logprobs, 64, 8);
FROZEN_FIELD(pagoda_output_t, top_logprobs, 72, 8);
FROZEN_FIELD(pagoda_output_t, n_top_logprobs, 80, 4);
FROZEN_FIELD(pagoda_output_t, n_prompt_tokens, 88, 8);
FROZEN_FIELD(pagoda_output_t, n_generated, 96, 8);
FROZEN_FIELD(pagoda_output_t, prompt_logprobs, 104, 8);
FROZEN_FIELD(pagoda_output_t, prompt_top_logprobs, 112, 8);
FROZEN_FIELD(pagoda_output_t, n_prompt_top_logprobs, 120, 4);
FROZEN_FIELD(pagoda_output_t, sequence_index, 124, 4);
FROZEN_FIELD(pagoda_output_t, cumulative_logprob, 128, 4);
FROZEN_FIELD(pagoda_output_t, request_finished, 132, 4);
FROZEN_FIELD(pagoda_output_t, embedding, 136, 8);
FROZEN_FIELD(pagoda_output_t, n_embedding, 144, 8);
FROZEN_MIN_SIZE(pagoda_output_t, 152);

/* pagoda_engine_options_t (engine.h) */
FROZEN_FIELD(pagoda_engine_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_engine_options_t, max_num_seqs, 4, 4);
FROZEN_FIELD(pagoda_engine_options_t, max_num_batched_tokens, 8, 4);
FROZEN_FIELD(pagoda_engine_options_t, on_output, 16, 8);
FROZEN_FIELD(pagoda_engine_options_t, on_output_user, 24, 8);
FROZEN_FIELD(pagoda_engine_options_t, preemption, 32, 4);
FROZEN_FIELD(pagoda_engine_options_t, kv_reservation, 36, 4);
FROZEN_FIELD(pagoda_engine_options_t, decode_graphs, 40, 4);
FROZEN_FIELD(pagoda_engine_options_t, device_sampling, 44, 4);
FROZEN_FIELD(pagoda_engine_options_t, activation_dtype, 48, 4);
FROZEN_FIELD(pagoda_engine_options_t, pipeline_micro_batches, 56, 8);
FROZEN_MIN_SIZE(pagoda_engine_options_t, 64);

/* pagoda_engine_stats_t (engine_stats.h) */
FROZEN_FIELD(pagoda_engine_stats_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_engine_stats_t, requests_waiting, 8, 8);
FROZEN_FIELD(pagoda_engine_stats_t, requests_running, 16, 8);
FROZEN_FIELD(pagoda_engine_stats_t, requests_swapped, 24, 8);
FROZEN_FIELD(pagoda_engine_stats_t, requests_finished, 32, 8);
FROZEN_FIELD(pagoda_engine_stats_t, preemptions_recompute, 40, 8);
FROZEN_FIELD(pagoda_engine_stats_t, preemptions_swap, 48, 8);
FROZEN_FIELD(pagoda_engine_stats_t, steps, 56, 8);
FROZEN_FIELD(pagoda_engine_stats_t, prompt_tokens, 64, 8);
FROZEN_FIELD(pagoda_engine_stats_t, generated_tokens, 72, 8);
FROZEN_FIELD(pagoda_engine_stats_t, batched_sequences, 80, 8);
FROZEN_FIELD(pagoda_engine_stats_t, graph_steps, 88, 8);
FROZEN_FIELD(pagoda_engine_stats_t, device_sampled_tokens, 96, 8);
FROZEN_MIN_SIZE(pagoda_engine_stats_t, 104);

/* pagoda_device_stats_t (engine_stats.h) */
FROZEN_FIELD(pagoda_device_stats_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_device_stats_t, device, 4, 32);
FROZEN_FIELD(pagoda_device_stats_t, stage, 36, 4);
FROZEN_FIELD(pagoda_device_stats_t, tp_rank, 40, 4);
FROZEN_FIELD(pagoda_device_stats_t, tp_size, 44, 4);
FROZEN_FIELD(pagoda_device_stats_t, first_layer, 48, 8);
FROZEN_FIELD(pagoda_device_stats_t, end_layer, 56, 8);
FROZEN_FIELD(pagoda_device_stats_t, kv_heads, 64, 8);
FROZEN_FIELD(pagoda_device_stats_t, weight_bytes, 72, 8);
FROZEN_FIELD(pagoda_device_stats_t, kv_bytes, 80, 8);
FROZEN_FIELD(pagoda_device_stats_t, layer_weight_bytes, 88, 8);
FROZEN_FIELD(pagoda_device_stats_t, kvp_rank, 96, 4);
FROZEN_FIELD(pagoda_device_stats_t, kvp_size, 100, 4);
FROZEN_MIN_SIZE(pagoda_device_stats_t, 104);

/* pagoda_histogram_t (engine_stats.h): fixed, it has no struct_size and never grows. */
FROZEN_VALUE(PAGODA_HISTOGRAM_MAX_BOUNDS, 32);
FROZEN_FIELD(pagoda_histogram_t, n_bounds, 0, 4);
FROZEN_FIELD(pagoda_histogram_t, upper_bounds, 8, 256);
FROZEN_FIELD(pagoda_histogram_t, cumulative_counts, 264, 256);
FROZEN_FIELD(pagoda_histogram_t, count, 520, 8);
FROZEN_FIELD(pagoda_histogram_t, sum, 528, 8);
_Static_assert(sizeof(pagoda_histogram_t) == 536, "pagoda_histogram_t changed size");

/* pagoda_engine_metrics_t (engine_stats.h) */
FROZEN_FIELD(pagoda_engine_metrics_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_running, 8, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_waiting, 16, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_swapped, 24, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, kv_blocks_used, 32, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, kv_blocks_total, 40, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, kv_cache_usage, 48, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, prompt_tokens, 56, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, prompt_tokens_computed, 64, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, generation_tokens, 72, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_finished_stop, 80, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_finished_length, 88, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_finished_aborted, 96, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, requests_finished_error, 104, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, preemptions_recompute, 112, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, preemptions_swap, 120, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, prefix_cache_queries, 128, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, prefix_cache_hits, 136, 8);
FROZEN_FIELD(pagoda_engine_metrics_t, time_to_first_token, 144, 536);
FROZEN_FIELD(pagoda_engine_metrics_t, inter_token_latency, 680, 536);
FROZEN_FIELD(pagoda_engine_metrics_t, e2e_request_latency, 1216, 536);
FROZEN_FIELD(pagoda_engine_metrics_t, request_queue_time, 1752, 536);
FROZEN_MIN_SIZE(pagoda_engine_metrics_t, 2288);

/* pagoda_device_sampling_t (engine.h) */
FROZEN_VALUE(PAGODA_DEVICE_SAMPLING_AUTO, 0);
FROZEN_VALUE(PAGODA_DEVICE_SAMPLING_ON, 1);
FROZEN_VALUE(PAGODA_DEVICE_SAMPLING_OFF, 2);

/* pagoda_decode_graphs_t (engine.h) */
FROZEN_VALUE(PAGODA_DECODE_GRAPHS_AUTO, 0);
FROZEN_VALUE(PAGODA_DECODE_GRAPHS_ON, 1);
FROZEN_VALUE(PAGODA_DECODE_GRAPHS_OFF, 2);

/* pagoda_finish_reason_t (engine.h) */
FROZEN_VALUE(PAGODA_FINISH_NONE, 0);
FROZEN_VALUE(PAGODA_FINISH_LENGTH, 1);
FROZEN_VALUE(PAGODA_FINISH_STOP_TOKEN, 2);
FROZEN_VALUE(PAGODA_FINISH_STOP_STRING, 3);
FROZEN_VALUE(PAGODA_FINISH_ABORTED, 4);
FROZEN_VALUE(PAGODA_FINISH_ERROR, 5);

/* pagoda_preemption_t (engine.h) */
FROZEN_VALUE(PAGODA_PREEMPT_AUTO, 0);
FROZEN_VALUE(PAGODA_PREEMPT_RECOMPUTE, 1);
FROZEN_VALUE(PAGODA_PREEMPT_SWAP, 2);

/* pagoda_kv_reservation_t (engine.h) */
FROZEN_VALUE(PAGODA_KV_PAGED, 0);
FROZEN_VALUE(PAGODA_KV_CONTIGUOUS, 1);
FROZEN_VALUE(PAGODA_REQUEST_IGNORE_EOS, 1u);
FROZEN_VALUE(PAGODA_REQUEST_KEEP_SPECIAL_TEXT, 2u);
FROZEN_VALUE(PAGODA_REQUEST_INCLUDE_STOP_STRING, 4u);
FROZEN_VALUE(PAGODA_REQUEST_NO_SPECIAL_TOKENS, 8u);
FROZEN_VALUE(PAGODA_REQUEST_FRESH_SEED, 16u);
FROZEN_VALUE(PAGODA_REQUEST_EMBED, 32u);

/* pagoda_pooling_t, pagoda_embedding_normalize_t (request.h) */
FROZEN_VALUE(PAGODA_POOLING_MODEL, 0);
FROZEN_VALUE(PAGODA_POOLING_LAST, 1);
FROZEN_VALUE(PAGODA_POOLING_MEAN, 2);
FROZEN_VALUE(PAGODA_EMBEDDING_NORMALIZE_MODEL, 0);
FROZEN_VALUE(PAGODA_EMBEDDING_NORMALIZE_L2, 1);
FROZEN_VALUE(PAGODA_EMBEDDING_NORMALIZE_NONE, 2);

/* pagoda_constraint_kind_t (constraint.h) */
FROZEN_VALUE(PAGODA_CONSTRAINT_NONE, 0);
FROZEN_VALUE(PAGODA_CONSTRAINT_GRAMMAR, 1);
FROZEN_VALUE(PAGODA_CONSTRAINT_REGEX, 2);
FROZEN_VALUE(PAGODA_CONSTRAINT_JSON_SCHEMA, 3);
FROZEN_VALUE(PAGODA_CONSTRAINT_JSON_OBJECT, 4);

/* pagoda_plan_options_t (plan.h) */
FROZEN_FIELD(pagoda_plan_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_plan_options_t, objective, 4, 4);
FROZEN_FIELD(pagoda_plan_options_t, micro_batches, 8, 4);
FROZEN_FIELD(pagoda_plan_options_t, stages, 12, 4);
FROZEN_FIELD(pagoda_plan_options_t, tensor_parallel, 16, 4);
FROZEN_FIELD(pagoda_plan_options_t, device, 24, 8);
FROZEN_FIELD(pagoda_plan_options_t, cost_file, 32, 8);
FROZEN_FIELD(pagoda_plan_options_t, mesh_shape, 40, 8);
FROZEN_FIELD(pagoda_plan_options_t, step_tokens, 48, 8);
FROZEN_FIELD(pagoda_plan_options_t, context_tokens, 56, 8);
FROZEN_FIELD(pagoda_plan_options_t, kv_tokens, 64, 8);
FROZEN_FIELD(pagoda_plan_options_t, prompt_tokens, 72, 8);
FROZEN_FIELD(pagoda_plan_options_t, granularity, 80, 8);
FROZEN_FIELD(pagoda_plan_options_t, epsilon_seconds, 88, 8);
FROZEN_MIN_SIZE(pagoda_plan_options_t, 96);

/* pagoda_plan_stage_t (plan.h) */
FROZEN_FIELD(pagoda_plan_stage_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_plan_stage_t, first_layer, 8, 8);
FROZEN_FIELD(pagoda_plan_stage_t, end_layer, 16, 8);
FROZEN_FIELD(pagoda_plan_stage_t, nodes, 24, 4);
FROZEN_FIELD(pagoda_plan_stage_t, devices, 28, 4);
FROZEN_FIELD(pagoda_plan_stage_t, tensor_parallel, 32, 4);
FROZEN_FIELD(pagoda_plan_stage_t, has_embedding, 36, 4);
FROZEN_FIELD(pagoda_plan_stage_t, has_head, 40, 4);
FROZEN_FIELD(pagoda_plan_stage_t, seconds, 48, 8);
FROZEN_FIELD(pagoda_plan_stage_t, memory_bytes, 56, 8);
FROZEN_MIN_SIZE(pagoda_plan_stage_t, 64);

/* pagoda_plan_summary_t (plan.h) */
FROZEN_FIELD(pagoda_plan_summary_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_plan_summary_t, n_stages, 8, 8);
FROZEN_FIELD(pagoda_plan_summary_t, latency_seconds, 16, 8);
FROZEN_FIELD(pagoda_plan_summary_t, max_stage_seconds, 24, 8);
FROZEN_FIELD(pagoda_plan_summary_t, throughput_per_second, 32, 8);
FROZEN_FIELD(pagoda_plan_summary_t, objective_seconds, 40, 8);
FROZEN_FIELD(pagoda_plan_summary_t, n_slices, 48, 8);
FROZEN_FIELD(pagoda_plan_summary_t, sliced_prefill_seconds, 56, 8);
FROZEN_FIELD(pagoda_plan_summary_t, uniform_prefill_seconds, 64, 8);
FROZEN_MIN_SIZE(pagoda_plan_summary_t, 72);

/* pagoda_simulate_options_t (plan.h) */
FROZEN_FIELD(pagoda_simulate_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_simulate_options_t, rate_per_model, 8, 8);
FROZEN_FIELD(pagoda_simulate_options_t, total_rate, 16, 8);
FROZEN_FIELD(pagoda_simulate_options_t, cv, 24, 8);
FROZEN_FIELD(pagoda_simulate_options_t, slo_seconds, 32, 8);
FROZEN_FIELD(pagoda_simulate_options_t, duration_seconds, 40, 8);
FROZEN_FIELD(pagoda_simulate_options_t, seed, 48, 8);
FROZEN_FIELD(pagoda_simulate_options_t, overhead_seconds, 56, 8);
FROZEN_FIELD(pagoda_simulate_options_t, reject_late, 64, 4);
FROZEN_MIN_SIZE(pagoda_simulate_options_t, 72);

/* pagoda_plan_objective_t (plan.h) */
FROZEN_VALUE(PAGODA_PLAN_LATENCY, 0);
FROZEN_VALUE(PAGODA_PLAN_THROUGHPUT, 1);

/* pagoda_server_options_t (server.h) */
FROZEN_FIELD(pagoda_server_options_t, struct_size, 0, 4);
FROZEN_FIELD(pagoda_server_options_t, port, 4, 4);
FROZEN_FIELD(pagoda_server_options_t, host, 8, 8);
FROZEN_FIELD(pagoda_server_options_t, api_key, 16, 8);
FROZEN_FIELD(pagoda_server_options_t, cors_allowed_origins, 24, 8);
FROZEN_FIELD(pagoda_server_options_t, max_header_bytes, 32, 8);
FROZEN_FIELD(pagoda_server_options_t, max_body_bytes, 40, 8);
FROZEN_FIELD(pagoda_server_options_t, idle_timeout_ms, 48, 8);
FROZEN_FIELD(pagoda_server_options_t, request_timeout_ms, 56, 8);
FROZEN_FIELD(pagoda_server_options_t, drain_timeout_ms, 64, 8);
FROZEN_MIN_SIZE(pagoda_server_options_t, 72);
