/**
 * \file ops.h
 * \brief The operations a backend's kernel table runs, each described by an argument struct.
 *
 * A backend is asked two things about an op: whether it supports a descriptor (the same struct with
 * its pointers possibly NULL: only types, shapes, layout and flags are looked at) and to launch it
 * on a stream. Every struct begins with `struct_size`; fields are only appended, and a backend
 * reads `min(struct_size, sizeof)` bytes, treating missing trailing fields as zero.
 *
 * Conventions for every op:
 * - Pointers are addresses in the memory of the stream's device (host memory for the CPU
 *   backend), except where a field says "host".
 * - A caller built against a newer header may pass a larger `struct_size`. The fields a backend
 *   does not know must then be zero (they are appended so that zero keeps the older meaning);
 *   a descriptor with any of them set gives ::PAGODA_ERR_UNSUPPORTED, so that an older backend
 *   refuses a request it would otherwise silently misread.
 * - Strides count elements, not bytes. A stride of 0 means "packed" (the row length).
 * - Activations have the type an op's dtype field names: F32, BF16 or F16 (an op's
 *   `act_dtype`, EMBEDDING's `out_dtype`, SAMPLE's `logits_dtype`, MATMUL's `x_dtype` and
 *   `y_dtype`). All but MATMUL's came with ABI 1.1, so there 0 (::PAGODA_DTYPE_INVALID, what a
 *   caller of an older header leaves) means F32; MATMUL's, from ABI 1.0, must be set. Weights
 *   may be F32, BF16 or F16; index arrays are I32 unless stated.
 * - Since ABI 1.3, MATMUL's `w_dtype` and EMBEDDING's `table_dtype` may also be a quantized
 *   block type (dtype.h). Each row must then hold whole blocks: `k` (`dim`) and the row stride,
 *   still counted in values, are multiples of the type's block (::pagoda_dtype_block), and a
 *   row occupies `values / block` blocks of bytes. A backend without kernels for a block type
 *   reports it unsupported; the values a kernel computes with are those of the type's
 *   reference decoding (ggml's), in f32.
 * - Compute is in f32 or better, whatever the activations' type: inputs are widened, results
 *   rounded once to the output's type (round to nearest even). A backend that would lose more
 *   must report the op unsupported. (The one exception is asked for explicitly:
 *   ::PAGODA_MATMUL_QUANTIZE_X.)
 * - Dimensions (`m`, `n`, `k`, `rows`, `dim`, head counts, `block_size`, …) are at least 1, and
 *   a backend rejects a smaller one with ::PAGODA_ERR_INVALID_ARGUMENT. Only the counts whose
 *   field says so (KV_WRITE's `n_tokens`, COPY_BLOCKS' `n_pairs`) may be 0, making a no-op.
 * - An enum value this header does not define (a dtype, layout or scaling from a newer header)
 *   gives ::PAGODA_ERR_UNSUPPORTED; ::PAGODA_DTYPE_INVALID where a type is needed gives
 *   ::PAGODA_ERR_INVALID_ARGUMENT.
 * - Angles, exponentials and reductions that decide accuracy (RoPE's `position · inv_freq`,
 *   softmax sums) are computed so that every backend agrees with the CPU backend's double-based
 *   reference within the tolerances of tests/backends.
 */
#ifndef PAGODA_OPS_H
#define PAGODA_OPS_H

#include "pagoda/dtype.h"
#include "pagoda/ops_moe.h"

/**
 * \defgroup ops Operations
 * \brief The kernel vocabulary shared by the core and every backend.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Operation identifiers. Values are stable: new ops are only appended. */
typedef enum pagoda_op {
    PAGODA_OP_INVALID = 0,          /**< Not an op. */
    PAGODA_OP_MATMUL = 1,           /**< ::pagoda_op_matmul_t */
    PAGODA_OP_EMBEDDING = 2,        /**< ::pagoda_op_embedding_t */
    PAGODA_OP_RMSNORM = 3,          /**< ::pagoda_op_rmsnorm_t */
    PAGODA_OP_ROPE = 4,             /**< ::pagoda_op_rope_t */
    PAGODA_OP_SILU_MUL = 5,         /**< ::pagoda_op_silu_mul_t */
    PAGODA_OP_ADD = 6,              /**< ::pagoda_op_add_t */
    PAGODA_OP_ARGMAX = 7,           /**< ::pagoda_op_argmax_t */
    PAGODA_OP_SOFTMAX = 8,          /**< ::pagoda_op_softmax_t */
    PAGODA_OP_KV_WRITE = 9,         /**< ::pagoda_op_kv_write_t */
    PAGODA_OP_PAGED_ATTENTION = 10, /**< ::pagoda_op_paged_attention_t */
    PAGODA_OP_COPY_BLOCKS = 11,     /**< ::pagoda_op_copy_blocks_t, within one device */
    PAGODA_OP_SWAP_BLOCKS = 12,     /**< ::pagoda_op_copy_blocks_t, between host and device */
    PAGODA_OP_SAMPLE = 13,          /**< ::pagoda_op_sample_t */
    PAGODA_OP_ATTENTION_MERGE = 14, /**< ::pagoda_op_attention_merge_t (ABI 1.2) */
    PAGODA_OP_SOFTCAP = 15,         /**< ::pagoda_op_softcap_t (ABI 1.8) */
    PAGODA_OP_MOE_ROUTE = 16,       /**< ::pagoda_op_moe_route_t (ABI 1.8) */
    PAGODA_OP_MOE_MATMUL = 17       /**< ::pagoda_op_moe_matmul_t (ABI 1.8) */
} pagoda_op_t;

/**
 * \brief The name of an op, such as `"paged_attention"`.
 * \param[in] op an op identifier.
 * \return a static string; `"invalid"` for unknown values. Never NULL.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_op_name(pagoda_op_t op);

/** \brief ::pagoda_op_matmul_t::flags: add the product to `y` instead of overwriting it. */
#define PAGODA_MATMUL_ACCUMULATE 1u

/**
 * \brief ::pagoda_op_matmul_t::flags (ABI 1.4): with a block-type `w_dtype`, the backend may
 *        compute the product from `x` rounded to 8 bits, as ggml's Q8 activations are.
 *
 * Each row of `x` is cut into runs of 32 values from its first column; a run gets the scale
 * `d = max|x| / 127` and the values `q = x / d` rounded to the nearest integer (ties to even; 0
 * where `d` is 0), both in f32, and the product is computed from `d · q` in place of `x`, with
 * the weights' reference values and f32 or better accumulation as usual. Each activation then
 * moves by at most half its run's `d`, 1/254 of the run's largest magnitude. This is the
 * arithmetic of llama.cpp's and vLLM's GGUF kernels, which lets a backend multiply bytes in
 * integer units. It is leave, not an order: a backend may compute exactly instead. Only for
 * block-type weights (::PAGODA_ERR_INVALID_ARGUMENT otherwise); a backend of ABI 1.3 or older
 * refuses the flag with ::PAGODA_ERR_UNSUPPORTED.
 */
#define PAGODA_MATMUL_QUANTIZE_X 2u

/**
 * \brief ::pagoda_op_matmul_t::flags (ABI 1.9): with ::PAGODA_MATMUL_QUANTIZE_X, the runs that
 *        share a scale may be W's whole blocks.
 *
 * The rounding is ::PAGODA_MATMUL_QUANTIZE_X's, with each run as long as a block of `w_dtype`
 * instead of 32 values: 256 for Q4_K, Q5_K and Q6_K (for Q8_0 and Q4_0, whose blocks are 32
 * values, nothing changes). Each activation then moves by at most 1/254 of its block's largest
 * magnitude, which is what llama.cpp's K-quant kernels compute with (its Q8_K activations); a
 * backend can then keep a whole block's sum in integers. It widens the leave, it orders
 * nothing: a backend may still round per 32 values, or compute exactly. Only together with
 * ::PAGODA_MATMUL_QUANTIZE_X (::PAGODA_ERR_INVALID_ARGUMENT otherwise); a backend of ABI 1.8 or
 * older refuses the flag with ::PAGODA_ERR_UNSUPPORTED.
 */
#define PAGODA_MATMUL_QUANTIZE_X_BLOCK 8u

/**
 * \brief ::pagoda_op_matmul_t::flags (ABI 1.5): with a block-type `w_dtype` and an `x_dtype` of
 *        BF16 or F16, the backend may round the decoded weights to `x_dtype`.
 *
 * The weights' reference values are then rounded to nearest even to x's type, and the product
 * is computed from those, with f32 accumulation as usual (a product of two half values is exact
 * in f32, which is what lets a GPU run it on its tensor cores). Each weight moves by at most half
 * a unit in the last place of that type, 2^-9 (BF16) or 2^-12 (F16) of its magnitude: what
 * vLLM's GGUF kernels do when they dequantize to the activations' type for a batched product.
 * It is leave, not an order: a backend may compute exactly instead. Only for block-type weights
 * and half activations (::PAGODA_ERR_INVALID_ARGUMENT otherwise); a backend of ABI 1.4 or older
 * refuses the flag with ::PAGODA_ERR_UNSUPPORTED.
 */
#define PAGODA_MATMUL_ROUND_W 4u

/**
 * \brief `y[m,n] = x[m,k] · W[n,k]ᵀ (+ bias[n]) (+ y when accumulating)`.
 *
 * `W` is in Hugging Face's `[out, in]` layout: row `j` of `W` holds the `k` input weights of
 * output `j`. Decode steps have small `m` (bandwidth-bound GEMV); prefill has large `m`.
 */
typedef struct pagoda_op_matmul {
    uint32_t struct_size;   /**< sizeof(pagoda_op_matmul_t) as the caller knows it. */
    uint32_t flags;         /**< PAGODA_MATMUL_* bits. */
    pagoda_dtype_t x_dtype; /**< Type of `x`: F32, BF16 or F16. */
    pagoda_dtype_t w_dtype; /**< Type of `W`: F32, BF16, F16 or (ABI 1.3) a block type. */
    pagoda_dtype_t y_dtype; /**< Type of `y`: F32, BF16 or F16 (`bias` is F32 whatever it is). */
    int64_t m;              /**< Rows of `x` and `y` (tokens). */
    int64_t n;              /**< Rows of `W`, columns of `y` (outputs). */
    int64_t k;              /**< Columns of `x` and `W` (inputs). */
    const void *x;          /**< `[m, ldx]`, row-major. */
    int64_t ldx;            /**< Row stride of `x`; 0 = `k`. */
    const void *w;          /**< `[n, ldw]`, row-major. */
    int64_t ldw;            /**< Row stride of `W`; 0 = `k`. */
    const void *bias;       /**< `[n]` f32, or NULL for none. */
    void *y;                /**< `[m, ldy]`, row-major; must not overlap `x` or `W`. */
    int64_t ldy;            /**< Row stride of `y`; 0 = `n`. */
    /**
     * (ABI 1.6) Which of the backend's kernels computes the product: 0 lets the backend pick by
     * its own rules; i ≥ 1 asks for its i-th variant, as ::pagoda_backend_kernels_t::variant_name
     * names them. This is how a host times the variants on its shapes and pins the fastest
     * (Collage's measure-then-choose). A variant that cannot run the descriptor (its types,
     * flags or sizes) is refused with ::PAGODA_ERR_UNSUPPORTED, by `supports` as by `launch`.
     * Every variant keeps the op's contract; results may differ between them in rounding.
     */
    int32_t variant;
} pagoda_op_matmul_t;

/** \brief `out[i, :] = table[ids[i], :]`, converted to `out_dtype`. */
typedef struct pagoda_op_embedding {
    uint32_t struct_size;       /**< sizeof(pagoda_op_embedding_t) as the caller knows it. */
    pagoda_dtype_t table_dtype; /**< Type of `table`: F32, BF16, F16 or (ABI 1.3) a block type. */
    int64_t vocab_size;         /**< Rows of `table`; an id outside [0, vocab_size) is an error. */
    int64_t dim;                /**< Columns of `table` and `out`. */
    int64_t n_tokens;           /**< Entries of `ids`, rows of `out`. */
    const void *table;          /**< `[vocab_size, dim]`, row-major. */
    const int32_t *ids;         /**< `[n_tokens]` token ids. */
    void *out;                  /**< `[n_tokens, ldo]` of `out_dtype`. */
    int64_t ldo;                /**< Row stride of `out`; 0 = `dim`. */
    pagoda_dtype_t out_dtype;   /**< Type of `out`: F32 (or 0), BF16 or F16. */
    /** Each looked-up row is multiplied by this (as an f32) before it is rounded to `out_dtype`;
     *  0 = 1 (Gemma scales its embeddings by √hidden). A double so that the struct grows past
     *  ABI 1.7's, whose tail padding a float would fill unseen by an older backend.
     *  \since ABI 1.8 */
    double scale;
} pagoda_op_embedding_t;

/**
 * \brief RMSNorm, optionally fused with the residual add that precedes it.
 *
 * Without `residual`: `out = x / sqrt(mean(x²) + eps) · weight`.
 * With `residual`: first `residual += x` (in place), then `out = rmsnorm(residual) · weight`;
 * this is the pre-norm transformer's "add then normalise" in one pass. The residual stream stays
 * f32 whatever `act_dtype` is, so that rounding does not accumulate over the layers.
 * `out` may alias `x`.
 */
typedef struct pagoda_op_rmsnorm {
    uint32_t struct_size;        /**< sizeof(pagoda_op_rmsnorm_t) as the caller knows it. */
    pagoda_dtype_t weight_dtype; /**< Type of `weight`: F32, BF16 or F16. */
    int64_t rows;                /**< Rows (tokens). */
    int64_t dim;                 /**< Row length (hidden size). */
    float eps;                   /**< Added to the mean square; 1e-5 or 1e-6 typically. */
    const void *x;               /**< `[rows, ldx]` of `act_dtype`. */
    int64_t ldx;                 /**< Row stride of `x`; 0 = `dim`. */
    void *residual;              /**< `[rows, ld_residual]` f32, updated in place; or NULL. */
    int64_t ld_residual;         /**< Row stride of `residual`; 0 = `dim`. */
    const void *weight;          /**< `[dim]`. */
    void *out;                   /**< `[rows, ldo]` of `act_dtype`. */
    int64_t ldo;                 /**< Row stride of `out`; 0 = `dim`. */
    pagoda_dtype_t act_dtype;    /**< Type of `x` and `out`: F32 (or 0), BF16 or F16. */
} pagoda_op_rmsnorm_t;

/** \brief How RoPE pairs the elements of a head. */
typedef enum pagoda_rope_layout {
    /** Element `i` pairs with `i + rot_dim/2` (Hugging Face Llama, "rotate_half"). */
    PAGODA_ROPE_HALF_SPLIT = 0,
    /** Element `2i` pairs with `2i + 1` (GPT-J, Meta's original Llama, GGUF's "norm" mode). */
    PAGODA_ROPE_INTERLEAVED = 1
} pagoda_rope_layout_t;

/** \brief How RoPE's frequencies are scaled for long contexts. */
typedef enum pagoda_rope_scaling {
    PAGODA_ROPE_SCALING_NONE = 0,   /**< `inv_freq[i] = theta^(-2i/rot_dim)`. */
    PAGODA_ROPE_SCALING_LINEAR = 1, /**< Positions divided by `factor`. */
    PAGODA_ROPE_SCALING_LLAMA3 = 2  /**< Llama 3.1's band-wise scaling of `inv_freq`. */
} pagoda_rope_scaling_t;

/**
 * \brief Rotary position embedding applied in place to `[n_tokens, n_heads, head_dim]`.
 *
 * The first `rot_dim` elements of each head rotate by `position · inv_freq[i]`; the rest are left
 * as they are. Run it once for queries and once for keys.
 *
 * Llama 3 scaling (`PAGODA_ROPE_SCALING_LLAMA3`), per Meta's reference: with
 * `wavelen = 2π / inv_freq`, `low = original_max_position / low_freq_factor`,
 * `high = original_max_position / high_freq_factor`: wavelengths shorter than `high` keep their
 * frequency, longer than `low` divide it by `factor`, and those between blend with
 * `s = (original_max_position / wavelen − low_freq_factor) / (high_freq_factor − low_freq_factor)`
 * as `(1 − s) · inv_freq / factor + s · inv_freq`.
 */
typedef struct pagoda_op_rope {
    uint32_t struct_size;            /**< sizeof(pagoda_op_rope_t) as the caller knows it. */
    pagoda_rope_layout_t layout;     /**< Which elements pair. */
    pagoda_rope_scaling_t scaling;   /**< Frequency scaling. */
    int64_t n_tokens;                /**< Tokens. */
    int64_t n_heads;                 /**< Heads per token. */
    int64_t head_dim;                /**< Elements per head. */
    int64_t rot_dim;                 /**< Rotated elements per head (even); 0 = `head_dim`. */
    void *x;                         /**< `act_dtype`, token `t` head `h` at `x + t·token_stride + h·head_dim`. */
    int64_t token_stride;            /**< Elements between tokens; 0 = `n_heads·head_dim`. */
    const int32_t *positions;        /**< `[n_tokens]` absolute positions. */
    float theta;                     /**< Base, 10000 for Llama 2, 500000 for Llama 3. */
    float factor;                    /**< Scaling factor (LINEAR, LLAMA3). */
    float low_freq_factor;           /**< LLAMA3 only. */
    float high_freq_factor;          /**< LLAMA3 only. */
    int64_t original_max_position;   /**< LLAMA3 only: the pre-training context length. */
    /** `[rot_dim / 2]` f32 divisors of each `inv_freq[i]`, applied after `scaling`, or NULL for
     *  none. Llama 3.1+ GGUF files carry their scaling this way (`rope_freqs.weight`). */
    const float *freq_factors;
    pagoda_dtype_t act_dtype;        /**< Type of `x`: F32 (or 0), BF16 or F16. */
} pagoda_op_rope_t;

/** \brief How ::PAGODA_OP_SILU_MUL activates the gate (ABI 1.8). */
typedef enum pagoda_glu_activation {
    /** `silu(z) = z / (1 + e^(−z))` (Llama, Qwen, Mistral, Phi, Mixtral). */
    PAGODA_GLU_SILU = 0,
    /** `gelu(z) ≈ z/2 · (1 + tanh(√(2/π) · (z + 0.044715·z³)))`, the tanh approximation
     *  (PyTorch's `gelu(approximate="tanh")`, Gemma's `gelu_pytorch_tanh`). */
    PAGODA_GLU_GELU_TANH = 1
} pagoda_glu_activation_t;

/**
 * \brief A gated linear unit's activation: `out[r, i] = act(gate[r, i]) · up[r, i]`, where `act`
 *        is SiLU unless `activation` says otherwise.
 */
typedef struct pagoda_op_silu_mul {
    uint32_t struct_size; /**< sizeof(pagoda_op_silu_mul_t) as the caller knows it. */
    int64_t rows;         /**< Rows (tokens). */
    int64_t dim;          /**< Elements per row of `out` (the FFN's intermediate size). */
    const void *gate;     /**< `[rows, ld_in]` of `act_dtype`. */
    const void *up;       /**< `[rows, ld_in]` of `act_dtype`; for a fused gate_up projection, `gate + dim`. */
    int64_t ld_in;        /**< Row stride of `gate` and `up`; 0 = `dim`. */
    void *out;            /**< `[rows, ldo]` of `act_dtype`; may alias `gate`. */
    int64_t ldo;          /**< Row stride of `out`; 0 = `dim`. */
    pagoda_dtype_t act_dtype; /**< Type of `gate`, `up` and `out`: F32 (or 0), BF16 or F16. */
    /** A ::pagoda_glu_activation_t; 0 = SiLU. 64 bits so that the struct grows past ABI 1.7's,
     *  whose tail padding a 32-bit field would fill unseen by an older backend. \since ABI 1.8 */
    int64_t activation;
} pagoda_op_silu_mul_t;

/** \brief `out[i] = a[i] + b[i]` over `n` contiguous elements; `out` may alias either. */
typedef struct pagoda_op_add {
    uint32_t struct_size; /**< sizeof(pagoda_op_add_t) as the caller knows it. */
    int64_t n;            /**< Elements. */
    const void *a;        /**< `[n]` of `act_dtype`. */
    const void *b;        /**< `[n]` of `act_dtype`. */
    void *out;            /**< `[n]` of `act_dtype`. */
    pagoda_dtype_t act_dtype; /**< Type of `a`, `b` and `out`: F32 (or 0), BF16 or F16. */
} pagoda_op_add_t;

/** \brief `out[r] = argmax_i x[r, i]`; ties go to the lowest index. */
typedef struct pagoda_op_argmax {
    uint32_t struct_size; /**< sizeof(pagoda_op_argmax_t) as the caller knows it. */
    int64_t rows;         /**< Rows. */
    int64_t cols;         /**< Row length (vocabulary size). */
    const void *x;        /**< `[rows, ldx]` of `act_dtype`. */
    int64_t ldx;          /**< Row stride; 0 = `cols`. */
    int32_t *out;         /**< `[rows]`. */
    pagoda_dtype_t act_dtype; /**< Type of `x`: F32 (or 0), BF16 or F16. */
} pagoda_op_argmax_t;

/** \brief `out[r, :] = softmax(scale · x[r, :])`, computed stably; `out` may alias `x`. */
typedef struct pagoda_op_softmax {
    uint32_t struct_size; /**< sizeof(pagoda_op_softmax_t) as the caller knows it. */
    int64_t rows;         /**< Rows. */
    int64_t cols;         /**< Row length. */
    float scale;          /**< Multiplies the inputs first (1 / temperature); 0 is taken as 1. */
    const void *x;        /**< `[rows, ldx]` of `act_dtype`. */
    int64_t ldx;          /**< Row stride of `x`; 0 = `cols`. */
    void *out;            /**< `[rows, ldo]` of `act_dtype`. */
    int64_t ldo;          /**< Row stride of `out`; 0 = `cols`. */
    pagoda_dtype_t act_dtype; /**< Type of `x` and `out`: F32 (or 0), BF16 or F16. */
} pagoda_op_softmax_t;

/**
 * \brief Layout of one layer's K (or V) cache.
 *
 * `PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN`: `[num_blocks][n_kv_heads][block_size][head_dim]`, so one
 * head's tokens within a block are contiguous. A slot is `block · block_size + offset`.
 */
typedef enum pagoda_kv_layout {
    PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN = 0 /**< See ::pagoda_kv_layout_t. */
} pagoda_kv_layout_t;

/**
 * \brief Writes new keys and values into a paged cache through a slot mapping.
 *
 * Token `t`'s K and V (all heads) go to slot `slot_mapping[t]`; a negative slot skips the token
 * (padding). `k_cache`/`v_cache` hold `num_blocks` blocks in `layout`. Every slot is checked
 * before anything is written. Two tokens must not share a slot (which one lands is unspecified).
 */
typedef struct pagoda_op_kv_write {
    uint32_t struct_size;          /**< sizeof(pagoda_op_kv_write_t) as the caller knows it. */
    pagoda_kv_layout_t layout;     /**< Cache layout. */
    pagoda_dtype_t cache_dtype;    /**< Type of the caches: F32, BF16 or F16. */
    int64_t n_tokens;              /**< New tokens; 0 = nothing to write. */
    int64_t n_kv_heads;            /**< KV heads. */
    int64_t head_dim;              /**< Elements per head. */
    int64_t block_size;            /**< Tokens per block (1–128). */
    int64_t num_blocks;            /**< Blocks in each cache; a slot past them is an error. */
    const void *k;                 /**< `act_dtype`, token `t` at `k + t·k_token_stride`, heads packed. */
    int64_t k_token_stride;        /**< 0 = `n_kv_heads·head_dim`. */
    const void *v;                 /**< `act_dtype`, like `k`. */
    int64_t v_token_stride;        /**< 0 = `n_kv_heads·head_dim`. */
    void *k_cache;                 /**< Key cache. */
    void *v_cache;                 /**< Value cache. */
    const int64_t *slot_mapping;   /**< `[n_tokens]` slots (I64); negative = skip. */
    /**
     * RoPE applied to the keys on their way into the cache, or NULL for none: the fused form of
     * a ::PAGODA_OP_ROPE launch on `k` followed by this write, which saves a pass over the keys.
     * The struct itself is host memory, read during the launch; its `positions` and
     * `freq_factors` are device addresses. Its `layout`, `scaling`, `head_dim` (which must equal
     * this op's), `rot_dim`, `positions`, `theta`, factors and `freq_factors` apply; its `x`,
     * `n_tokens`, `n_heads`, `token_stride` and `act_dtype` are ignored (this op's `k`,
     * `n_tokens`, `n_kv_heads`, `k_token_stride` and `act_dtype` take their place); the rotation
     * computes in f32 and the key is rounded once, to the cache's type. `k` itself is not modified. A backend
     * that cannot fuse reports the descriptor unsupported; the caller then runs ROPE first.
     */
    const pagoda_op_rope_t *k_rope;
    pagoda_dtype_t act_dtype;      /**< Type of `k` and `v`: F32 (or 0), BF16 or F16. */
} pagoda_op_kv_write_t;

/**
 * \brief Attention of a variable-length batch of query chunks over paged K/V.
 *
 * Sequence `s` owns query tokens `[query_start[s], query_start[s+1])` and a context of
 * `context_lens[s]` cached tokens (the new ones included, already written by KV_WRITE), found in
 * blocks `block_tables[s, 0..]`. With `causal`, query `i` of a chunk of `q_len` tokens sits at
 * position `context_lens[s] − q_len + i` and sees keys at positions up to its own: a prompt chunk
 * attends to all earlier chunks and causally within itself. Decode is the case `q_len = 1`.
 * Query head `h` uses KV head `h / (n_q_heads / n_kv_heads)` (GQA, MQA).
 * With `sliding_window > 0`, a query also ignores keys more than `sliding_window − 1` positions
 * behind it (the query's position is `context_lens[s] − q_len + i` whether or not `causal`).
 * Only the table entries of blocks some query can see are read and must be valid; entries past
 * the context or wholly behind every query's window may hold anything. A sequence may have no
 * query tokens. `out` must not overlap `q` or the caches.
 *
 * Cache parallelism (ABI 1.2): with `kv_shards` S > 1 a sequence's KV is split block-cyclically
 * over S caches and the launch attends over shard `kv_shard` only. Entry `j` of a sequence's
 * table row is then its logical block `j·S + kv_shard`, so offset `o` of that block holds the key
 * at position `(j·S + kv_shard)·block_size + o`. `context_lens`, the query positions and the
 * causal and sliding-window rules stay those of the whole sequence; a query sees the local keys
 * its rules admit, possibly none (its `out` row is then 0 and its `lse` −inf). Only the entries of
 * local blocks some query can see must be valid, and a context may reach
 * `max_blocks_per_seq·block_size·S` tokens. Each shard's `out` is normalised over the keys it
 * saw; ::PAGODA_OP_ATTENTION_MERGE combines the shards' `out` and `lse` into the attention over
 * the whole context, as flash-decoding merges its split-K partitions.
 */
typedef struct pagoda_op_paged_attention {
    uint32_t struct_size;          /**< sizeof(pagoda_op_paged_attention_t) as the caller knows it. */
    pagoda_kv_layout_t layout;     /**< Cache layout. */
    pagoda_dtype_t cache_dtype;    /**< Type of the caches: F32, BF16 or F16. */
    uint32_t causal;               /**< Nonzero: causal with the query offset described above. */
    int64_t n_seqs;                /**< Sequences in the batch. */
    int64_t n_q_heads;             /**< Query heads; a multiple of `n_kv_heads`. */
    int64_t n_kv_heads;            /**< KV heads. */
    int64_t head_dim;              /**< Elements per head. */
    int64_t block_size;            /**< Tokens per block (1–128). */
    int64_t num_blocks;            /**< Blocks in each cache; a table entry past them is an error. */
    int64_t max_blocks_per_seq;    /**< Row length of `block_tables`. */
    int64_t max_context_len;       /**< Upper bound of `context_lens` (sizes scratch); 0 = unknown. */
    float scale;                   /**< Score scale, usually `1/sqrt(head_dim)`. */
    int32_t sliding_window;        /**< Keys visible behind a query; 0 = unlimited. */
    const void *q;                 /**< `act_dtype` `[total_q_tokens, n_q_heads, head_dim]` with `q_token_stride`. */
    int64_t q_token_stride;        /**< 0 = `n_q_heads·head_dim`. */
    const void *k_cache;           /**< Key cache. */
    const void *v_cache;           /**< Value cache. */
    const int32_t *block_tables;   /**< `[n_seqs, max_blocks_per_seq]` physical block ids. */
    const int32_t *context_lens;   /**< `[n_seqs]` cached tokens per sequence. */
    const int32_t *query_start;    /**< `[n_seqs + 1]` cumulative query offsets, `query_start[0] = 0`. */
    void *out;                     /**< `act_dtype` `[total_q_tokens, n_q_heads, head_dim]` with `out_token_stride`. */
    int64_t out_token_stride;      /**< 0 = `n_q_heads·head_dim`. */
    pagoda_dtype_t act_dtype;      /**< Type of `q` and `out`: F32 (or 0), BF16 or F16. */
    /** Caches the sequences' KV is split over, block-cyclically; 0 or 1 = the block table holds
     *  the whole sequence. \since ABI 1.2 */
    int32_t kv_shards;
    /** The shard this launch attends over, in [0, `kv_shards`); 0 when not sharded.
     *  \since ABI 1.2 */
    int32_t kv_shard;
    /** `[total_q_tokens, n_q_heads]` f32, or NULL for none: per query token and head, the natural
     *  log of Σ exp(scale·q·k) over the keys the query saw (−inf when it saw none), the
     *  log-normaliser of its `out` row. \since ABI 1.2 */
    float *lse;
    /** Nonzero: each scaled score `s` becomes `softcap · tanh(s / softcap)` before the softmax
     *  (Gemma 2's attention soft-capping; `lse` is then over the capped scores); 0 = off.
     *  \since ABI 1.8 */
    float softcap;
} pagoda_op_paged_attention_t;

/**
 * \brief Merges attention computed over disjoint parts of a context (ABI 1.2).
 *
 * Part `p` holds, per token and head, attention normalised over its own keys and `lse[p]`, its
 * log-normaliser, as ::PAGODA_OP_PAGED_ATTENTION gives them for one KV shard. With
 * `L = log Σ_p exp(lse_p)`, `out = Σ_p exp(lse_p − L)·part_p` and `lse_out = L`: the attention
 * over the union of the parts' keys. A part whose `lse` is −inf (it saw no key) weighs 0 and
 * its values are not read; a row where every part's is −inf gives 0 and `lse_out` −inf.
 * Computed in f32 and rounded once.
 * `out` must not overlap `parts` or `lse`.
 */
typedef struct pagoda_op_attention_merge {
    uint32_t struct_size;     /**< sizeof(pagoda_op_attention_merge_t) as the caller knows it. */
    int64_t n_parts;          /**< Parts to merge (KV shards). */
    int64_t n_tokens;         /**< Query tokens. */
    int64_t n_heads;          /**< Query heads per token. */
    int64_t head_dim;         /**< Elements per head. */
    /** `act_dtype` `[n_parts][n_tokens][n_heads][head_dim]`, packed: what an all-gather of each
     *  shard's PAGED_ATTENTION `out` gives. */
    const void *parts;
    const float *lse;         /**< `[n_parts][n_tokens][n_heads]` f32 log-normalisers. */
    void *out;                /**< `act_dtype` `[n_tokens, n_heads, head_dim]` with `out_token_stride`. */
    int64_t out_token_stride; /**< 0 = `n_heads·head_dim`. */
    float *lse_out;           /**< `[n_tokens][n_heads]` f32, the merged log-normalisers; or NULL. */
    pagoda_dtype_t act_dtype; /**< Type of `parts` and `out`: F32 (or 0), BF16 or F16. */
} pagoda_op_attention_merge_t;

/**
 * \brief Soft-capping in place (ABI 1.8): `x[i] = cap · tanh(x[i] / cap)` over `n` contiguous
 *        elements, computed in f32 and rounded once: Gemma 2's final-logit soft-capping.
 */
typedef struct pagoda_op_softcap {
    uint32_t struct_size; /**< sizeof(pagoda_op_softcap_t) as the caller knows it. */
    int64_t n;            /**< Elements. */
    float cap;            /**< The bound, positive and finite. */
    void *x;              /**< `[n]` of `dtype`, updated in place. */
    pagoda_dtype_t dtype; /**< Type of `x`: F32 (or 0), BF16 or F16. */
} pagoda_op_softcap_t;

/** \brief Direction of ::PAGODA_OP_SWAP_BLOCKS. */
typedef enum pagoda_swap_direction {
    PAGODA_SWAP_OUT = 0, /**< Device blocks to host blocks. */
    PAGODA_SWAP_IN = 1   /**< Host blocks to device blocks. */
} pagoda_swap_direction_t;

/**
 * \brief Copies whole blocks between caches: copy-on-write (COPY_BLOCKS) or swap (SWAP_BLOCKS).
 *
 * For each pair `p` and each cache `c`: block `block_pairs[2p]` of `src_caches[c]` is copied to
 * block `block_pairs[2p+1]` of `dst_caches[c]`. One launch covers every layer's K and V caches.
 * For COPY_BLOCKS both sides are on the stream's device (and may be the same caches). For
 * SWAP_BLOCKS the host side is host memory (pinned when the backend offers it) and `direction`
 * says which side that is. The pointer arrays and `block_pairs` themselves are host memory.
 * Pairs apply in order within each cache, so a chain (a→b, then b→c) reads as written. Every id
 * is checked before anything is copied: a failed launch changes nothing. `n_pairs = 0` is a no-op.
 */
typedef struct pagoda_op_copy_blocks {
    uint32_t struct_size;              /**< sizeof(pagoda_op_copy_blocks_t) as the caller knows it. */
    pagoda_swap_direction_t direction; /**< SWAP_BLOCKS only. */
    int64_t n_caches;                  /**< Entries of `src_caches` and `dst_caches`. */
    void *const *src_caches;           /**< Host array of source cache base addresses. */
    void *const *dst_caches;           /**< Host array of destination cache base addresses. */
    int64_t block_bytes;               /**< Bytes per block in every cache. */
    int64_t n_pairs;                   /**< Pairs in `block_pairs`. */
    const int32_t *block_pairs;        /**< Host array `[n_pairs, 2]`: (source block, destination block). */
    int64_t src_num_blocks;            /**< Blocks in each source cache; an id past them is an error. */
    int64_t dst_num_blocks;            /**< Blocks in each destination cache, likewise. */
} pagoda_op_copy_blocks_t;

/**
 * \brief Picks one token per row of logits: greedy, or a draw after temperature, top-k, top-p
 *        and min-p, with the random number supplied by the caller.
 *
 * Per row `r`, with `T = temperature[r]`:
 * - `T = 0`: the lowest id among the largest logits (as ::PAGODA_OP_ARGMAX).
 * - `T > 0`: the candidates are every token whose logit is not −inf, or with
 *   `0 < top_k[r] < cols` the `top_k[r]` best in rank order (higher logit first, ties to the
 *   lower id), leaving out −inf ones. Each candidate weighs `w = exp((logit − max) / T)`, `max`
 *   being the largest candidate logit (w = 1 at the maximum, so a +inf logit weighs 1 and the finite
 *   ones beside it 0). With `top_p[r] < 1`, only the shortest rank-order prefix
 *   whose weight reaches `top_p[r] · Σw` stays (at least one token). Then tokens with
 *   `w < min_p[r]` (that is, probability below `min_p` times the largest) and `w = 0` leave. The
 *   survivors are walked in rank order when top-k applied and in id order otherwise, and the
 *   token picked is the first at which the running weight exceeds `uniform[r] · Σ(survivors' w)`
 *   (the last survivor if rounding leaves none). These are the engine's host sampler's rules,
 *   so a device and the host draw alike up to rounding near a boundary.
 *
 * The per-row arrays are device memory so that the launch can be replayed (a captured graph)
 * with new values. A row with no finite-or-+inf logit left (all −inf), a NaN logit, a negative
 * or non-finite `T`, `top_p` outside (0, 1], `min_p` outside [0, 1] or `uniform` outside [0, 1)
 * is an error naming the row; where the backend checks on the device, it is reported when the
 * stream synchronizes and `out[r]` is then unspecified.
 */
typedef struct pagoda_op_sample {
    uint32_t struct_size;       /**< sizeof(pagoda_op_sample_t) as the caller knows it. */
    int64_t rows;               /**< Rows. */
    int64_t cols;               /**< Row length (vocabulary size). */
    const void *logits;         /**< `[rows, ldx]` of `logits_dtype`; not modified. */
    int64_t ldx;                /**< Row stride of `logits`; 0 = `cols`. */
    const float *temperature;   /**< `[rows]`; 0 = greedy. */
    const int32_t *top_k;       /**< `[rows]`; 0, negative or ≥ `cols` = off. */
    const float *top_p;         /**< `[rows]`; 1 = off. */
    const float *min_p;         /**< `[rows]`; 0 = off. */
    const float *uniform;       /**< `[rows]` uniform draws in [0, 1), one per row. */
    int32_t *out;               /**< `[rows]` chosen token ids. */
    /**
     * `[rows]` f32, or NULL for none: each chosen token's log-probability under the raw logits
     * (log-softmax at temperature 1, before every filter), which the engine reports and sums
     * per sequence. NaN for a row holding +inf.
     */
    float *logprobs;
    pagoda_dtype_t logits_dtype; /**< Type of `logits`: F32 (or 0), BF16 or F16. */
} pagoda_op_sample_t;

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_OPS_H */
