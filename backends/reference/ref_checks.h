/* The pieces the descriptor checks are built from (ref_checks.c), shared by ref_checks_*.c.
 * Each returns PAGODA_OK or the failure it reported: "<op>: <field> = <value> <what is wrong>".
 * Which status a fault gets follows ops.h: a value that no backend could accept (a size below
 * 1, a stride shorter than its row) is PAGODA_ERR_INVALID_ARGUMENT; a value this plugin does not
 * know but a newer one might (an enum value, a type, a flag) is PAGODA_ERR_UNSUPPORTED. */
#ifndef PAGODA_REFERENCE_CHECKS_H
#define PAGODA_REFERENCE_CHECKS_H

#include "ref_internal.h"

/* Returns from the enclosing function when a check fails. */
#define REF_CHECK(expr)                                 \
    do {                                                \
        const pagoda_status_t ref_check_ = (expr);      \
        if (ref_check_ != PAGODA_OK) return ref_check_; \
    } while (0)

#define REF_MAX_BLOCK_SIZE 128 /* ops.h: "Tokens per block (1–128)" */
#define REF_MOE_MAX_EXPERTS 1024
#define REF_MOE_MAX_TOP_K 64

pagoda_status_t ref_check_weight_dtype(const ref_backend_t *b, const char *op, const char *field,
                                       int64_t d);
pagoda_status_t ref_check_row_weight_dtype(const ref_backend_t *b, const char *op,
                                           const char *field, int64_t d, int64_t row_len,
                                           int64_t ld);
pagoda_status_t ref_check_act_dtype(const ref_backend_t *b, const char *op, const char *field,
                                    int64_t d);
pagoda_status_t ref_check_positive(const ref_backend_t *b, const char *op, const char *field,
                                   int64_t v);
pagoda_status_t ref_check_stride(const ref_backend_t *b, const char *op, const char *field,
                                 int64_t ld, int64_t row_len);
pagoda_status_t ref_check_token_stride(const ref_backend_t *b, const char *op, const char *field,
                                       int64_t stride, int64_t row);
/* A `rows` × `row_len` array with row stride `ld` of `elem_bytes` elements is addressable. */
pagoda_status_t ref_check_extent(const ref_backend_t *b, const char *op, const char *name,
                                 int64_t rows, int64_t ld, int64_t row_len, int64_t elem_bytes);
/* The same for a weight of `dtype` (plain or block), counted in blocks. */
pagoda_status_t ref_check_weight_extent(const ref_backend_t *b, const char *op,
                                        const char *name, pagoda_dtype_t dtype, int64_t rows,
                                        int64_t ld, int64_t row_len);
pagoda_status_t ref_check_finite(const ref_backend_t *b, const char *op, const char *field,
                                 double v);
/* The fields describing a paged KV cache, as KV_WRITE and PAGED_ATTENTION carry them. */
pagoda_status_t ref_check_kv_cache(const ref_backend_t *b, const char *op, int64_t layout,
                                   int64_t dtype, int64_t n_kv_heads, int64_t head_dim,
                                   int64_t block_size, int64_t num_blocks);
/* Bytes per element of an activation type field that passed ref_check_act_dtype. */
int64_t ref_act_bytes(pagoda_dtype_t t);

#endif /* PAGODA_REFERENCE_CHECKS_H */
