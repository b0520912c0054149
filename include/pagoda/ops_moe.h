/**
 * \file ops_moe.h
 * \brief The mixture-of-experts ops of the plugin ABI (1.8): routing tokens to experts and the
 *        experts' products. Part of ops.h, which includes it and lists every op.
 */
#ifndef PAGODA_OPS_MOE_H
#define PAGODA_OPS_MOE_H

#include "pagoda/dtype.h"

/**
 * \addtogroup ops
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief How ::PAGODA_OP_MOE_ROUTE weighs the experts it picks (ABI 1.8). */
typedef enum pagoda_moe_routing {
    /** Softmax over every expert's logit; the `top_k` largest probabilities, as they are
     *  (Qwen2-MoE, and Qwen3-MoE without `norm_topk_prob`). */
    PAGODA_MOE_SOFTMAX_TOPK = 0,
    /** The same, the `top_k` probabilities then divided by their sum, i.e. a softmax over the
     *  picked logits (Mixtral, and Qwen3-MoE with `norm_topk_prob`). */
    PAGODA_MOE_SOFTMAX_TOPK_NORM = 1
} pagoda_moe_routing_t;

/**
 * \brief A mixture-of-experts router (ABI 1.8): per token, the `top_k` experts of largest
 *        logit and their weights.
 *
 * Row `t` of `expert_ids` lists the picked experts by decreasing weight (equal logits: the lower
 * id first); row `t` of `weights` their weights as `routing` says, computed in f32 or better. A
 * row with a NaN logit is an error; infinities weigh as their limits (experts at a +inf maximum
 * share the weight, a row all −inf weighs its picked experts equally).
 */
typedef struct pagoda_op_moe_route {
    uint32_t struct_size;  /**< sizeof(pagoda_op_moe_route_t) as the caller knows it. */
    int64_t n_tokens;      /**< Tokens (rows). */
    int64_t n_experts;     /**< Experts (columns of `logits`); at most 1024. */
    int64_t top_k;         /**< Experts per token, 1 to `n_experts` (at most 64). */
    int32_t routing;       /**< A ::pagoda_moe_routing_t. */
    const float *logits;   /**< `[n_tokens, n_experts]` f32, the router's output. */
    int32_t *expert_ids;   /**< `[n_tokens, top_k]`, written. */
    float *weights;        /**< `[n_tokens, top_k]` f32, written. */
} pagoda_op_moe_route_t;

/**
 * \brief The experts' products of a mixture-of-experts layer (ABI 1.8), each token through the
 *        experts it was routed to, each expert's weights read once for all its tokens.
 *
 * For token `t`, slot `s` in [0, `top_k`) and `e = expert_ids[t·top_k + s]`, the slot's product
 * is `W_e · x_ts`, where `W_e` is the `[n, k]` matrix `experts[e − expert_offset]` (row stride
 * `ldw`, type `w_dtype` as MATMUL's `w`) and `x_ts` is row `t` of `x`, or row `t·top_k + s` when
 * `x_per_slot` is set. Without `weights`, row `t·top_k + s` of `y` is that product (a slot whose
 * expert is not held here, `e` outside [`expert_offset`, `expert_offset + n_experts`), gets
 * zeros). With `weights`, row `t` of `y` is `Σ_s weights[t·top_k + s] · W_e · x_ts` over the
 * slots whose expert is held here (zeros if none is): the layer's weighted combination; a slot
 * picking an expert twice counts twice. A negative id is an error. Accumulation is f32 or better;
 * results are rounded once to `y_dtype`. An expert no token picks is not read (its `experts`
 * entry may be NULL); a picked one's matrix is aligned as MATMUL's `w` must be. `y` must not
 * overlap `x`.
 */
typedef struct pagoda_op_moe_matmul {
    uint32_t struct_size;     /**< sizeof(pagoda_op_moe_matmul_t) as the caller knows it. */
    pagoda_dtype_t x_dtype;   /**< Type of `x`: F32, BF16 or F16. */
    pagoda_dtype_t w_dtype;   /**< Type of the experts' matrices: F32, BF16, F16 or a block type. */
    pagoda_dtype_t y_dtype;   /**< Type of `y`: F32, BF16 or F16. */
    int64_t n_tokens;         /**< Tokens. */
    int64_t top_k;            /**< Slots per token, as MOE_ROUTE picked them. */
    int64_t n_experts;        /**< Entries of `experts`: the experts held here. */
    int64_t expert_offset;    /**< The global id of `experts[0]`; 0 when every expert is here. */
    int64_t n;                /**< Rows of each expert's matrix (the output width). */
    int64_t k;                /**< Columns (the input width); whole blocks for a block type. */
    const void *x;            /**< `[n_tokens (· top_k with x_per_slot), ldx]` of `x_dtype`. */
    int64_t ldx;              /**< Row stride of `x`; 0 = `k`. */
    uint32_t x_per_slot;      /**< Nonzero: one input row per slot rather than per token. */
    /** Device array `[n_experts]` of pointers to each expert's `[n, ldw]` matrix. */
    const void *const *experts;
    int64_t ldw;              /**< Values between rows of each matrix; 0 = `k`. */
    const int32_t *expert_ids; /**< `[n_tokens, top_k]` global expert ids, as MOE_ROUTE writes them. */
    /** `[n_tokens, top_k]` f32 routing weights, or NULL for a row per slot (see above). */
    const float *weights;
    void *y;                  /**< `[n_tokens · top_k or n_tokens, ldy]` of `y_dtype`. */
    int64_t ldy;              /**< Row stride of `y`; 0 = `n`. */
} pagoda_op_moe_matmul_t;

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_OPS_MOE_H */
