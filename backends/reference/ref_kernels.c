/* The kernel table: `supports` reads and checks a descriptor; `launch` does the same, then runs
 * the kernel at once (this plugin's streams are synchronous). */
#include <stddef.h>

#include "ref_internal.h"

static const char *op_name(pagoda_op_t op) {
    static const char *const names[] = {
        "invalid",  "matmul",          "embedding",   "rmsnorm",         "rope",
        "silu_mul", "add",             "argmax",      "softmax",         "kv_write",
        "paged_attention", "copy_blocks", "swap_blocks", "sample", "attention_merge",
        "softcap",  "moe_route",       "moe_matmul"};
    return op >= 0 && (size_t)op < sizeof names / sizeof names[0] ? names[op] : "unknown";
}

/* One op: read the caller's struct as this plugin knows it (MIN_SIZE: the bytes of ABI 1.0's
 * struct, whose fields every kernel needs; later fields read as 0 when a caller leaves them
 * out), check it, and run it when launching. */
#define REF_OP(ENUM, TYPE, MIN_SIZE, CHECK, RUN)                                                \
    case ENUM: {                                                                                \
        TYPE a;                                                                                 \
        pagoda_status_t s = ref_read_args(b, op_name(op), args, &a, sizeof a, MIN_SIZE);       \
        if (s == PAGODA_OK) s = CHECK(b, &a);                                                   \
        if (s == PAGODA_OK && launch) s = RUN;                                                  \
        return s;                                                                               \
    }

static pagoda_status_t dispatch(const ref_backend_t *b, pagoda_op_t op, const void *args,
                                int launch) {
    switch (op) {
        REF_OP(PAGODA_OP_MATMUL, pagoda_op_matmul_t, offsetof(pagoda_op_matmul_t, variant),
               ref_check_matmul, ref_run_matmul(b, &a))
        REF_OP(PAGODA_OP_EMBEDDING, pagoda_op_embedding_t, offsetof(pagoda_op_embedding_t, out_dtype),
               ref_check_embedding, ref_run_embedding(b, &a))
        REF_OP(PAGODA_OP_RMSNORM, pagoda_op_rmsnorm_t, offsetof(pagoda_op_rmsnorm_t, act_dtype),
               ref_check_rmsnorm, ref_run_rmsnorm(b, &a))
        REF_OP(PAGODA_OP_ROPE, pagoda_op_rope_t, offsetof(pagoda_op_rope_t, act_dtype),
               ref_check_rope, ref_run_rope(b, &a))
        REF_OP(PAGODA_OP_SILU_MUL, pagoda_op_silu_mul_t, offsetof(pagoda_op_silu_mul_t, act_dtype),
               ref_check_silu_mul, ref_run_silu_mul(b, &a))
        REF_OP(PAGODA_OP_ADD, pagoda_op_add_t, offsetof(pagoda_op_add_t, act_dtype), ref_check_add,
               ref_run_add(b, &a))
        REF_OP(PAGODA_OP_ARGMAX, pagoda_op_argmax_t, offsetof(pagoda_op_argmax_t, act_dtype),
               ref_check_argmax, ref_run_argmax(b, &a))
        REF_OP(PAGODA_OP_SOFTMAX, pagoda_op_softmax_t, offsetof(pagoda_op_softmax_t, act_dtype),
               ref_check_softmax, ref_run_softmax(b, &a))
        REF_OP(PAGODA_OP_KV_WRITE, pagoda_op_kv_write_t, offsetof(pagoda_op_kv_write_t, k_rope),
               ref_check_kv_write, ref_run_kv_write(b, &a))
        REF_OP(PAGODA_OP_PAGED_ATTENTION, pagoda_op_paged_attention_t,
               offsetof(pagoda_op_paged_attention_t, act_dtype), ref_check_paged_attention,
               ref_run_paged_attention(b, &a))
        REF_OP(PAGODA_OP_COPY_BLOCKS, pagoda_op_copy_blocks_t, sizeof(pagoda_op_copy_blocks_t),
               ref_check_copy_blocks, ref_run_copy_blocks(b, &a, "copy_blocks"))
        REF_OP(PAGODA_OP_SWAP_BLOCKS, pagoda_op_copy_blocks_t, sizeof(pagoda_op_copy_blocks_t),
               ref_check_swap_blocks, ref_run_copy_blocks(b, &a, "swap_blocks"))
        REF_OP(PAGODA_OP_SAMPLE, pagoda_op_sample_t, offsetof(pagoda_op_sample_t, logits_dtype),
               ref_check_sample, ref_run_sample(b, &a))
        REF_OP(PAGODA_OP_ATTENTION_MERGE, pagoda_op_attention_merge_t,
               sizeof(pagoda_op_attention_merge_t), ref_check_attention_merge,
               ref_run_attention_merge(b, &a))
        REF_OP(PAGODA_OP_SOFTCAP, pagoda_op_softcap_t, sizeof(pagoda_op_softcap_t),
               ref_check_softcap, ref_run_softcap(b, &a))
        REF_OP(PAGODA_OP_MOE_ROUTE, pagoda_op_moe_route_t, sizeof(pagoda_op_moe_route_t),
               ref_check_moe_route, ref_run_moe_route(b, &a))
        REF_OP(PAGODA_OP_MOE_MATMUL, pagoda_op_moe_matmul_t, sizeof(pagoda_op_moe_matmul_t),
               ref_check_moe_matmul, ref_run_moe_matmul(b, &a))
        case PAGODA_OP_INVALID: break;
    }
    /* An op from a newer header: unsupported, so that the host falls back (ops.h). */
    return ref_fail(b, PAGODA_ERR_UNSUPPORTED, "op %d is unknown to the reference backend", (int)op);
}

static pagoda_status_t supports(void *self, int32_t device, pagoda_op_t op, const void *args) {
    const ref_backend_t *b = self;
    if (device != 0)
        return ref_fail(b, PAGODA_ERR_NOT_FOUND, "device %d does not exist (reference:0 only)",
                        (int)device);
    return dispatch(b, op, args, 0);
}

static pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                              const void *args) {
    const ref_backend_t *b = self;
    if (stream == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "launch: stream is NULL");
    return dispatch(b, op, args, 1);
}

/* variant_name (ABI 1.6) is NULL: one kernel per op, no variants to time or pin. */
const pagoda_backend_kernels_t ref_kernels = {sizeof(pagoda_backend_kernels_t), supports, launch,
                                              NULL};
