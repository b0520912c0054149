/* The reference plugin's shared declarations: its state, error reporting, element types and
 * the per-op checks and kernels, each family in its own file. Everything here is plain C11 with
 * naive loops: the point is to be read (docs/BACKENDS.md walks through it), not to be fast. */
#ifndef PAGODA_REFERENCE_INTERNAL_H
#define PAGODA_REFERENCE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pagoda/plugin.h"

/* The plugin's state. `self` in every table slot points here; the interface table lives inside
 * it so that destroy frees both. */
typedef struct ref_backend {
    pagoda_backend_iface_t iface;
    pagoda_backend_host_t host; /* a copy of the host's table, valid until destroy */
} ref_backend_t;

/* Streams and events: the plugin runs every op when it is launched, so a stream only records
 * its device and an event the moment it was recorded. */
struct pagoda_backend_stream {
    int32_t device;
};
struct pagoda_backend_event {
    int32_t device;
    int timing;      /* created with PAGODA_EVENT_TIMING */
    int recorded;    /* event_record ran */
    double seconds;  /* when, on a monotonic clock */
};

/* Sets the calling thread's error through the host's set_error ("reference: " + message) and
 * returns `status`, so that a failing path reads `return ref_fail(b, STATUS, "...", ...);`. */
pagoda_status_t ref_fail(const ref_backend_t *b, pagoda_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------------------------------------ */
/* Element types (ref_dtype.c)                                                                 */
/* ------------------------------------------------------------------------------------------ */

float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_f16(float f);   /* round to nearest even */
float ref_bf16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);  /* round to nearest even; NaN stays NaN */

/* Element `i` of an F32, BF16 or F16 array, widened to f32. */
float ref_load(const void *p, pagoda_dtype_t t, int64_t i);
/* Rounds `v` once to `t` (F32, BF16 or F16) and stores it as element `i`. */
void ref_store(void *p, pagoda_dtype_t t, int64_t i, float v);

/* A plain weight type: F32, BF16 or F16. */
int ref_is_plain(int64_t t);
/* One of GGUF's block types this plugin decodes (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). */
int ref_is_block(int64_t t);
/* Values and bytes per block: 1 and the element size for the plain types. 0 for others. */
int64_t ref_block_values(pagoda_dtype_t t);
int64_t ref_block_bytes(pagoda_dtype_t t);
/* Bytes of a row of `values` values (whole blocks for a block type). */
int64_t ref_row_bytes(pagoda_dtype_t t, int64_t values);
/* The lower-case name, for messages. */
const char *ref_dtype_name(int64_t t);
/* 0 (a caller of ABI 1.0) means F32 in the activation fields appended in ABI 1.1. */
pagoda_dtype_t ref_act(pagoda_dtype_t t);

/* Decodes `n` values of a weight row (plain or block type; n whole blocks) into f32
 * (ref_blocks.c holds the block formats, ggml's reference decoders value for value). */
void ref_decode_row(pagoda_dtype_t t, const void *row, int64_t n, float *out);

/* ------------------------------------------------------------------------------------------ */
/* Descriptor checks (ref_checks*.c): what ops.h requires of a descriptor whose pointers may   */
/* be NULL. `supports` runs only these; `launch` runs them, then the kernel.                   */
/* ------------------------------------------------------------------------------------------ */

/* Copies the caller's struct (its struct_size bytes, at least `min_size`) into `out` (`size`
 * bytes, the struct as this plugin knows it), zeroing fields an older caller left out and
 * refusing fields a newer caller set that this plugin does not know. */
pagoda_status_t ref_read_args(const ref_backend_t *b, const char *what, const void *args,
                              void *out, size_t size, size_t min_size);

pagoda_status_t ref_check_matmul(const ref_backend_t *b, const pagoda_op_matmul_t *a);
pagoda_status_t ref_check_embedding(const ref_backend_t *b, const pagoda_op_embedding_t *a);
pagoda_status_t ref_check_rmsnorm(const ref_backend_t *b, const pagoda_op_rmsnorm_t *a);
pagoda_status_t ref_check_rope_rotation(const ref_backend_t *b, const char *op,
                                        const char *prefix, const pagoda_op_rope_t *a);
pagoda_status_t ref_check_rope(const ref_backend_t *b, const pagoda_op_rope_t *a);
pagoda_status_t ref_check_silu_mul(const ref_backend_t *b, const pagoda_op_silu_mul_t *a);
pagoda_status_t ref_check_add(const ref_backend_t *b, const pagoda_op_add_t *a);
pagoda_status_t ref_check_argmax(const ref_backend_t *b, const pagoda_op_argmax_t *a);
pagoda_status_t ref_check_softmax(const ref_backend_t *b, const pagoda_op_softmax_t *a);
pagoda_status_t ref_check_softcap(const ref_backend_t *b, const pagoda_op_softcap_t *a);
pagoda_status_t ref_check_sample(const ref_backend_t *b, const pagoda_op_sample_t *a);
pagoda_status_t ref_check_kv_write(const ref_backend_t *b, const pagoda_op_kv_write_t *a);
pagoda_status_t ref_check_paged_attention(const ref_backend_t *b,
                                          const pagoda_op_paged_attention_t *a);
pagoda_status_t ref_check_attention_merge(const ref_backend_t *b,
                                          const pagoda_op_attention_merge_t *a);
pagoda_status_t ref_check_copy_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a);
pagoda_status_t ref_check_swap_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a);
pagoda_status_t ref_check_moe_route(const ref_backend_t *b, const pagoda_op_moe_route_t *a);
pagoda_status_t ref_check_moe_matmul(const ref_backend_t *b, const pagoda_op_moe_matmul_t *a);

/* Helpers the checks and kernels share (ref_checks.c). */
pagoda_status_t ref_check_pointer(const ref_backend_t *b, const char *op, const char *field,
                                  const void *p);
int64_t ref_packed_or(int64_t ld, int64_t row_len);

/* ------------------------------------------------------------------------------------------ */
/* Kernels, run after the checks passed (ref_ops_*.c). Each checks its pointers and the data   */
/* it reads (ids, slots, block tables) before it writes anything.                              */
/* ------------------------------------------------------------------------------------------ */

pagoda_status_t ref_run_matmul(const ref_backend_t *b, const pagoda_op_matmul_t *a);
pagoda_status_t ref_run_embedding(const ref_backend_t *b, const pagoda_op_embedding_t *a);
pagoda_status_t ref_run_rmsnorm(const ref_backend_t *b, const pagoda_op_rmsnorm_t *a);
pagoda_status_t ref_run_rope(const ref_backend_t *b, const pagoda_op_rope_t *a);
pagoda_status_t ref_run_silu_mul(const ref_backend_t *b, const pagoda_op_silu_mul_t *a);
pagoda_status_t ref_run_add(const ref_backend_t *b, const pagoda_op_add_t *a);
pagoda_status_t ref_run_argmax(const ref_backend_t *b, const pagoda_op_argmax_t *a);
pagoda_status_t ref_run_softmax(const ref_backend_t *b, const pagoda_op_softmax_t *a);
pagoda_status_t ref_run_softcap(const ref_backend_t *b, const pagoda_op_softcap_t *a);
pagoda_status_t ref_run_sample(const ref_backend_t *b, const pagoda_op_sample_t *a);
pagoda_status_t ref_run_kv_write(const ref_backend_t *b, const pagoda_op_kv_write_t *a);
pagoda_status_t ref_run_paged_attention(const ref_backend_t *b,
                                        const pagoda_op_paged_attention_t *a);
pagoda_status_t ref_run_attention_merge(const ref_backend_t *b,
                                        const pagoda_op_attention_merge_t *a);
pagoda_status_t ref_run_copy_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a,
                                    const char *op);
pagoda_status_t ref_run_moe_route(const ref_backend_t *b, const pagoda_op_moe_route_t *a);
pagoda_status_t ref_run_moe_matmul(const ref_backend_t *b, const pagoda_op_moe_matmul_t *a);

/* RoPE's frequency table and one head's rotation, shared by ROPE and KV_WRITE's k_rope
 * (ref_ops_rope.c). `inv_freq` holds rot_dim / 2 doubles; fails on a bad freq_factors entry. */
pagoda_status_t ref_rope_frequencies(const ref_backend_t *b, const char *op, const char *prefix,
                                     const pagoda_op_rope_t *a, double *inv_freq);
void ref_rope_rotate(const pagoda_op_rope_t *a, int32_t position, const double *inv_freq,
                     float *head);

/* The kernel table (ref_kernels.c). */
extern const pagoda_backend_kernels_t ref_kernels;

#endif /* PAGODA_REFERENCE_INTERNAL_H */
