/* Descriptor checks: the shared pieces, then MATMUL, EMBEDDING and the dense row ops. The order
 * of the checks matters where a descriptor has several faults: a host sees the same status from
 * every backend (tests/backends/conformance compares them), so each op checks its fields in the
 * order the CPU backend does (backends/common/op_checks_*.cpp). */
#include <math.h>
#include <stdio.h>

#include "ref_checks.h"

int64_t ref_packed_or(int64_t ld, int64_t row_len) { return ld == 0 ? row_len : ld; }

int64_t ref_act_bytes(pagoda_dtype_t t) { return ref_act(t) == PAGODA_DTYPE_F32 ? 4 : 2; }

pagoda_status_t ref_check_pointer(const ref_backend_t *b, const char *op, const char *field,
                                  const void *p) {
    if (p != NULL) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, field);
}

/* INVALID (0) is a field nobody filled in; any other unknown value may be a type a newer ABI
 * or another backend handles, so it is only unsupported here. */
static pagoda_status_t dtype_error(const ref_backend_t *b, const char *op, const char *field,
                                   int64_t d, const char *allowed) {
    if (d == PAGODA_DTYPE_INVALID)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s is not set (must be %s)", op,
                        field, allowed);
    return ref_fail(b, PAGODA_ERR_UNSUPPORTED, "%s: %s = %s (%lld) is not supported (must be %s)",
                    op, field, ref_dtype_name(d), (long long)d, allowed);
}

pagoda_status_t ref_check_weight_dtype(const ref_backend_t *b, const char *op, const char *field,
                                       int64_t d) {
    return ref_is_plain(d) ? PAGODA_OK : dtype_error(b, op, field, d, "f32, bf16 or f16");
}

pagoda_status_t ref_check_row_weight_dtype(const ref_backend_t *b, const char *op,
                                           const char *field, int64_t d, int64_t row_len,
                                           int64_t ld) {
    if (ref_is_plain(d)) return PAGODA_OK;
    if (!ref_is_block(d))
        return dtype_error(b, op, field, d, "f32, bf16, f16 or a quantized block type");
    const int64_t block = ref_block_values((pagoda_dtype_t)d);
    if (row_len % block == 0 && ld % block == 0) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                    "%s: rows of %lld values at stride %lld are not whole %s blocks of %lld", op,
                    (long long)row_len, (long long)ld, ref_dtype_name(d), (long long)block);
}

pagoda_status_t ref_check_act_dtype(const ref_backend_t *b, const char *op, const char *field,
                                    int64_t d) {
    if (d == PAGODA_DTYPE_INVALID || ref_is_plain(d)) return PAGODA_OK;
    return dtype_error(b, op, field, d, "f32 (or 0), bf16 or f16");
}

pagoda_status_t ref_check_positive(const ref_backend_t *b, const char *op, const char *field,
                                   int64_t v) {
    if (v > 0) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s = %lld must be positive", op, field,
                    (long long)v);
}

pagoda_status_t ref_check_stride(const ref_backend_t *b, const char *op, const char *field,
                                 int64_t ld, int64_t row_len) {
    if (ld == 0 || ld >= row_len) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                    "%s: %s = %lld is smaller than the row length %lld", op, field, (long long)ld,
                    (long long)row_len);
}

pagoda_status_t ref_check_token_stride(const ref_backend_t *b, const char *op, const char *field,
                                       int64_t stride, int64_t row) {
    if (stride == 0 || stride >= row) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                    "%s: %s %lld is smaller than a token's %lld elements", op, field,
                    (long long)stride, (long long)row);
}

pagoda_status_t ref_check_extent(const ref_backend_t *b, const char *op, const char *name,
                                 int64_t rows, int64_t ld, int64_t row_len, int64_t elem_bytes) {
    int64_t last = 0, elems = 0, bytes = 0;
    if (__builtin_mul_overflow(rows - 1, ld, &last) ||
        __builtin_add_overflow(last, row_len, &elems) ||
        __builtin_mul_overflow(elems, elem_bytes, &bytes))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: %s of %lld rows with stride %lld does not fit in the address space",
                        op, name, (long long)rows, (long long)ld);
    return PAGODA_OK;
}

pagoda_status_t ref_check_weight_extent(const ref_backend_t *b, const char *op,
                                        const char *name, pagoda_dtype_t dtype, int64_t rows,
                                        int64_t ld, int64_t row_len) {
    const int64_t values = ref_block_values(dtype);
    return ref_check_extent(b, op, name, rows, ld / values, row_len / values,
                            ref_block_bytes(dtype));
}

pagoda_status_t ref_check_finite(const ref_backend_t *b, const char *op, const char *field,
                                 double v) {
    if (isfinite(v)) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s = %g is not finite", op, field, v);
}

pagoda_status_t ref_check_kv_cache(const ref_backend_t *b, const char *op, int64_t layout,
                                   int64_t dtype, int64_t n_kv_heads, int64_t head_dim,
                                   int64_t block_size, int64_t num_blocks) {
    if (layout != PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                        "%s: layout %lld is not supported (only PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)",
                        op, (long long)layout);
    if (!ref_is_plain(dtype))
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                        "%s: cache_dtype %s is not supported (f32, bf16 or f16)", op,
                        ref_dtype_name(dtype));
    if (n_kv_heads <= 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: n_kv_heads %lld must be positive", op,
                        (long long)n_kv_heads);
    if (head_dim <= 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: head_dim %lld must be positive", op,
                        (long long)head_dim);
    if (block_size < 1 || block_size > REF_MAX_BLOCK_SIZE)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: block_size %lld is outside 1..128",
                        op, (long long)block_size);
    if (num_blocks < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: num_blocks %lld is negative", op,
                        (long long)num_blocks);
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n_kv_heads, head_dim, &bytes) ||
        __builtin_mul_overflow(bytes, block_size * ref_block_bytes((pagoda_dtype_t)dtype),
                               &bytes) ||
        __builtin_mul_overflow(bytes, num_blocks, &bytes))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: the cache of %lld blocks is too large",
                        op, (long long)num_blocks);
    return PAGODA_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* MATMUL and EMBEDDING                                                                         */
/* ------------------------------------------------------------------------------------------ */

pagoda_status_t ref_check_matmul(const ref_backend_t *b, const pagoda_op_matmul_t *a) {
    const char *op = "matmul";
    const uint32_t known = PAGODA_MATMUL_ACCUMULATE | PAGODA_MATMUL_QUANTIZE_X |
                           PAGODA_MATMUL_QUANTIZE_X_BLOCK | PAGODA_MATMUL_ROUND_W;
    /* This plugin has one kernel per op, so no variants (variant_name is NULL). */
    if (a->variant < 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: variant = %d is negative", op,
                        (int)a->variant);
    if (a->variant > 0)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                        "%s: variant = %d, but this backend has no matmul variants", op,
                        (int)a->variant);
    if ((a->flags & ~known) != 0)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED, "%s: flags = %u has bits this backend does not know",
                        op, (unsigned)a->flags);
    REF_CHECK(ref_check_positive(b, op, "m", a->m));
    REF_CHECK(ref_check_positive(b, op, "n", a->n));
    REF_CHECK(ref_check_positive(b, op, "k", a->k));
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->k));
    REF_CHECK(ref_check_stride(b, op, "ldw", a->ldw, a->k));
    REF_CHECK(ref_check_stride(b, op, "ldy", a->ldy, a->n));
    /* x_dtype and y_dtype date from ABI 1.0: 0 there is a field nobody filled in. */
    REF_CHECK(ref_check_weight_dtype(b, op, "x_dtype", a->x_dtype));
    REF_CHECK(ref_check_row_weight_dtype(b, op, "w_dtype", a->w_dtype, a->k,
                                         ref_packed_or(a->ldw, a->k)));
    REF_CHECK(ref_check_weight_dtype(b, op, "y_dtype", a->y_dtype));
    /* The leave-taking flags (ops.h) are accepted and declined: this plugin computes exactly. */
    if ((a->flags & PAGODA_MATMUL_QUANTIZE_X) != 0 && !ref_is_block(a->w_dtype))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: PAGODA_MATMUL_QUANTIZE_X with w_dtype %s: block weights only", op,
                        ref_dtype_name(a->w_dtype));
    if ((a->flags & PAGODA_MATMUL_QUANTIZE_X_BLOCK) != 0 && (a->flags & PAGODA_MATMUL_QUANTIZE_X) == 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: PAGODA_MATMUL_QUANTIZE_X_BLOCK without PAGODA_MATMUL_QUANTIZE_X", op);
    if ((a->flags & PAGODA_MATMUL_ROUND_W) != 0 &&
        (!ref_is_block(a->w_dtype) ||
         (a->x_dtype != PAGODA_DTYPE_BF16 && a->x_dtype != PAGODA_DTYPE_F16)))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: PAGODA_MATMUL_ROUND_W with w_dtype %s and x_dtype %s: block weights "
                        "and bf16/f16 activations only",
                        op, ref_dtype_name(a->w_dtype), ref_dtype_name(a->x_dtype));
    REF_CHECK(ref_check_extent(b, op, "x", a->m, ref_packed_or(a->ldx, a->k), a->k,
                               ref_block_bytes(a->x_dtype)));
    REF_CHECK(ref_check_weight_extent(b, op, "w", a->w_dtype, a->n, ref_packed_or(a->ldw, a->k),
                                      a->k));
    return ref_check_extent(b, op, "y", a->m, ref_packed_or(a->ldy, a->n), a->n,
                            ref_block_bytes(a->y_dtype));
}

pagoda_status_t ref_check_embedding(const ref_backend_t *b, const pagoda_op_embedding_t *a) {
    const char *op = "embedding";
    REF_CHECK(ref_check_positive(b, op, "vocab_size", a->vocab_size));
    REF_CHECK(ref_check_positive(b, op, "dim", a->dim));
    REF_CHECK(ref_check_positive(b, op, "n_tokens", a->n_tokens));
    REF_CHECK(ref_check_row_weight_dtype(b, op, "table_dtype", a->table_dtype, a->dim, a->dim));
    REF_CHECK(ref_check_act_dtype(b, op, "out_dtype", a->out_dtype));
    REF_CHECK(ref_check_stride(b, op, "ldo", a->ldo, a->dim));
    REF_CHECK(ref_check_finite(b, op, "scale", a->scale));
    REF_CHECK(ref_check_weight_extent(b, op, "table", a->table_dtype, a->vocab_size, a->dim,
                                      a->dim));
    return ref_check_extent(b, op, "out", a->n_tokens, ref_packed_or(a->ldo, a->dim), a->dim,
                            ref_act_bytes(a->out_dtype));
}

/* ------------------------------------------------------------------------------------------ */
/* The dense row ops                                                                            */
/* ------------------------------------------------------------------------------------------ */

pagoda_status_t ref_check_rmsnorm(const ref_backend_t *b, const pagoda_op_rmsnorm_t *a) {
    const char *op = "rmsnorm";
    REF_CHECK(ref_check_weight_dtype(b, op, "weight_dtype", a->weight_dtype));
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, op, "rows", a->rows));
    REF_CHECK(ref_check_positive(b, op, "dim", a->dim));
    if (!(a->eps >= 0.0f) || !isfinite(a->eps))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: eps = %g must be finite and not negative", op, (double)a->eps);
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->dim));
    REF_CHECK(ref_check_stride(b, op, "ld_residual", a->ld_residual, a->dim));
    REF_CHECK(ref_check_stride(b, op, "ldo", a->ldo, a->dim));
    const int64_t act = ref_act_bytes(a->act_dtype);
    REF_CHECK(ref_check_extent(b, op, "x", a->rows, ref_packed_or(a->ldx, a->dim), a->dim, act));
    REF_CHECK(ref_check_extent(b, op, "residual", a->rows, ref_packed_or(a->ld_residual, a->dim),
                               a->dim, 4));
    return ref_check_extent(b, op, "out", a->rows, ref_packed_or(a->ldo, a->dim), a->dim, act);
}

pagoda_status_t ref_check_silu_mul(const ref_backend_t *b, const pagoda_op_silu_mul_t *a) {
    const char *op = "silu_mul";
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    if (a->activation != PAGODA_GLU_SILU && a->activation != PAGODA_GLU_GELU_TANH)
        return ref_fail(b, PAGODA_ERR_UNSUPPORTED,
                        "%s: activation = %lld is not an activation this backend knows", op,
                        (long long)a->activation);
    REF_CHECK(ref_check_positive(b, op, "rows", a->rows));
    REF_CHECK(ref_check_positive(b, op, "dim", a->dim));
    REF_CHECK(ref_check_stride(b, op, "ld_in", a->ld_in, a->dim));
    REF_CHECK(ref_check_stride(b, op, "ldo", a->ldo, a->dim));
    const int64_t act = ref_act_bytes(a->act_dtype);
    REF_CHECK(ref_check_extent(b, op, "gate", a->rows, ref_packed_or(a->ld_in, a->dim), a->dim,
                               act));
    return ref_check_extent(b, op, "out", a->rows, ref_packed_or(a->ldo, a->dim), a->dim, act);
}

pagoda_status_t ref_check_add(const ref_backend_t *b, const pagoda_op_add_t *a) {
    REF_CHECK(ref_check_act_dtype(b, "add", "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, "add", "n", a->n));
    return ref_check_extent(b, "add", "a", 1, a->n, a->n, ref_act_bytes(a->act_dtype));
}

pagoda_status_t ref_check_argmax(const ref_backend_t *b, const pagoda_op_argmax_t *a) {
    const char *op = "argmax";
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, op, "rows", a->rows));
    REF_CHECK(ref_check_positive(b, op, "cols", a->cols));
    if (a->cols > INT32_MAX)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: cols = %lld does not fit the int32 indices of out", op,
                        (long long)a->cols);
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->cols));
    return ref_check_extent(b, op, "x", a->rows, ref_packed_or(a->ldx, a->cols), a->cols,
                            ref_act_bytes(a->act_dtype));
}

pagoda_status_t ref_check_softmax(const ref_backend_t *b, const pagoda_op_softmax_t *a) {
    const char *op = "softmax";
    REF_CHECK(ref_check_act_dtype(b, op, "act_dtype", a->act_dtype));
    REF_CHECK(ref_check_positive(b, op, "rows", a->rows));
    REF_CHECK(ref_check_positive(b, op, "cols", a->cols));
    REF_CHECK(ref_check_finite(b, op, "scale", a->scale));
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->cols));
    REF_CHECK(ref_check_stride(b, op, "ldo", a->ldo, a->cols));
    const int64_t act = ref_act_bytes(a->act_dtype);
    REF_CHECK(ref_check_extent(b, op, "x", a->rows, ref_packed_or(a->ldx, a->cols), a->cols, act));
    return ref_check_extent(b, op, "out", a->rows, ref_packed_or(a->ldo, a->cols), a->cols, act);
}

pagoda_status_t ref_check_softcap(const ref_backend_t *b, const pagoda_op_softcap_t *a) {
    const char *op = "softcap";
    REF_CHECK(ref_check_act_dtype(b, op, "dtype", a->dtype));
    REF_CHECK(ref_check_positive(b, op, "n", a->n));
    if (!(a->cap > 0.0f) || !isfinite(a->cap))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: cap = %g must be positive and finite",
                        op, (double)a->cap);
    return ref_check_extent(b, op, "x", 1, a->n, a->n, ref_act_bytes(a->dtype));
}

pagoda_status_t ref_check_sample(const ref_backend_t *b, const pagoda_op_sample_t *a) {
    const char *op = "sample";
    REF_CHECK(ref_check_act_dtype(b, op, "logits_dtype", a->logits_dtype));
    REF_CHECK(ref_check_positive(b, op, "rows", a->rows));
    REF_CHECK(ref_check_positive(b, op, "cols", a->cols));
    if (a->cols > INT32_MAX)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "%s: cols = %lld does not fit the int32 ids of out", op, (long long)a->cols);
    REF_CHECK(ref_check_stride(b, op, "ldx", a->ldx, a->cols));
    return ref_check_extent(b, op, "logits", a->rows, ref_packed_or(a->ldx, a->cols), a->cols,
                            ref_act_bytes(a->logits_dtype));
}
