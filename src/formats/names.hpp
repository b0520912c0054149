// Names of ops and types: for plugin error messages (plugins do not link libpagoda) and behind
// libpagoda's own pagoda_op_name and pagoda_dtype_name, so the two cannot disagree.
#pragma once

#include "pagoda/ops.h"

namespace pagoda::formats {

inline const char *op_name(pagoda_op_t op) {
    switch (op) {
        case PAGODA_OP_MATMUL: return "matmul";
        case PAGODA_OP_EMBEDDING: return "embedding";
        case PAGODA_OP_RMSNORM: return "rmsnorm";
        case PAGODA_OP_ROPE: return "rope";
        case PAGODA_OP_SILU_MUL: return "silu_mul";
        case PAGODA_OP_ADD: return "add";
        case PAGODA_OP_ARGMAX: return "argmax";
        case PAGODA_OP_SOFTMAX: return "softmax";
        case PAGODA_OP_KV_WRITE: return "kv_write";
        case PAGODA_OP_PAGED_ATTENTION: return "paged_attention";
        case PAGODA_OP_COPY_BLOCKS: return "copy_blocks";
        case PAGODA_OP_SWAP_BLOCKS: return "swap_blocks";
        case PAGODA_OP_SAMPLE: return "sample";
        case PAGODA_OP_ATTENTION_MERGE: return "attention_merge";
        case PAGODA_OP_SOFTCAP: return "softcap";
        case PAGODA_OP_MOE_ROUTE: return "moe_route";
        case PAGODA_OP_MOE_MATMUL: return "moe_matmul";
        case PAGODA_OP_INVALID: break;
    }
    return "invalid";
}

inline const char *dtype_name(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_F32: return "f32";
        case PAGODA_DTYPE_F16: return "f16";
        case PAGODA_DTYPE_BF16: return "bf16";
        case PAGODA_DTYPE_I32: return "i32";
        case PAGODA_DTYPE_I64: return "i64";
        case PAGODA_DTYPE_I8: return "i8";
        case PAGODA_DTYPE_U8: return "u8";
        case PAGODA_DTYPE_Q8_0: return "q8_0";
        case PAGODA_DTYPE_Q4_0: return "q4_0";
        case PAGODA_DTYPE_Q4_K: return "q4_k";
        case PAGODA_DTYPE_Q5_K: return "q5_k";
        case PAGODA_DTYPE_Q6_K: return "q6_k";
        case PAGODA_DTYPE_INVALID: break;
    }
    return "invalid";
}

}  // namespace pagoda::formats
