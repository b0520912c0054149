// The descriptor checks of every op, shared by all backends: what ops.h requires of a descriptor
// whose pointers may be NULL (types, shapes, strides, layout, flags, enum values), so every
// backend accepts and rejects the same descriptors with the same messages
// ("<op>: <field> = <value> <what is wrong>"). A backend adds its own limits after these (the
// CUDA backend's 32-bit cuBLAS sizes) and checks pointers and data-dependent indices (ids,
// slots, block tables) when it runs the op.
#pragma once

#include <cstdint>
#include <string>

#include "pagoda/ops.h"
#include "reporter.hpp"

namespace pagoda::plugin {

// For a backend without MATMUL variants: a nonzero `variant` is refused as unsupported.
pagoda_status_t check_matmul(const Reporter &r, const pagoda_op_matmul_t &a);
// For one with `variants` of them (1..variants); whether a variant suits the descriptor is the
// backend's own check.
pagoda_status_t check_matmul_variants(const Reporter &r, const pagoda_op_matmul_t &a,
                                      int32_t variants);
// EMBEDDING's scale (ABI 1.8) must be finite.
pagoda_status_t check_embedding(const Reporter &r, const pagoda_op_embedding_t &a);
pagoda_status_t check_rmsnorm(const Reporter &r, const pagoda_op_rmsnorm_t &a);
pagoda_status_t check_rope(const Reporter &r, const pagoda_op_rope_t &a);
// The rotation's own parameters (layout, scaling and its factors, head_dim, rot_dim, theta),
// which ROPE and KV_WRITE's k_rope share. Messages read "<op>: <field_prefix><field> = ...":
// ("rope", "") for ROPE, ("kv_write", "k_rope.") for KV_WRITE.
pagoda_status_t check_rope_rotation(const Reporter &r, const char *op, const char *field_prefix,
                                    const pagoda_op_rope_t &a);
// An `activation` (ABI 1.8) outside pagoda_glu_activation_t is refused as unsupported.
pagoda_status_t check_silu_mul(const Reporter &r, const pagoda_op_silu_mul_t &a);
pagoda_status_t check_add(const Reporter &r, const pagoda_op_add_t &a);
pagoda_status_t check_argmax(const Reporter &r, const pagoda_op_argmax_t &a);
pagoda_status_t check_softmax(const Reporter &r, const pagoda_op_softmax_t &a);
// SOFTCAP (ABI 1.8): n ≥ 1, cap positive and finite, dtype F32 (or 0), BF16 or F16.
pagoda_status_t check_softcap(const Reporter &r, const pagoda_op_softcap_t &a);
// SAMPLE's shapes; its pointers and per-row values are checked at launch (sample_rules.hpp).
pagoda_status_t check_sample(const Reporter &r, const pagoda_op_sample_t &a);
// With k_rope set, also reads it (read_op_args: its own struct_size) and checks it as ROPE's
// rotation, its head_dim equal to the write's.
pagoda_status_t check_kv_write(const Reporter &r, const pagoda_op_kv_write_t &a);
// "kv_write: k_rope": how read_op_args names KV_WRITE's nested rotation in messages.
inline constexpr const char *kKvWriteRopeName = "kv_write: k_rope";
// softcap (ABI 1.8) must be 0 (off) or positive and finite.
pagoda_status_t check_paged_attention(const Reporter &r, const pagoda_op_paged_attention_t &a);
pagoda_status_t check_attention_merge(const Reporter &r, const pagoda_op_attention_merge_t &a);
// COPY_BLOCKS and SWAP_BLOCKS take the same struct; SWAP_BLOCKS also checks `direction`.
pagoda_status_t check_copy_blocks(const Reporter &r, const pagoda_op_copy_blocks_t &a);
pagoda_status_t check_swap_blocks(const Reporter &r, const pagoda_op_copy_blocks_t &a);
// At launch, the host arrays of a checked COPY/SWAP_BLOCKS descriptor: the pointer arrays and
// their entries non-NULL, every id of `block_pairs` in range and addressable. Called before
// any copy, so a failed launch changes nothing (ops.h). `op` is "copy_blocks" or "swap_blocks".
pagoda_status_t check_block_pairs(const Reporter &r, const char *op,
                                  const pagoda_op_copy_blocks_t &a);

// MOE_ROUTE (ABI 1.8): shapes ≥ 1, n_experts ≤ kMoeMaxExperts, top_k ≤ n_experts and
// kMoeMaxTopK (ops.h), a routing this backend knows (another is unsupported). A NaN logit is
// found when the op runs.
inline constexpr int64_t kMoeMaxExperts = 1024;
inline constexpr int64_t kMoeMaxTopK = 64;
pagoda_status_t check_moe_route(const Reporter &r, const pagoda_op_moe_route_t &a);
// MOE_MATMUL (ABI 1.8): shapes ≥ 1, expert_offset in int32's range, strides, types as MATMUL's
// x, w and y (w_dtype rows of whole blocks), addressable extents. top_k is not bounded by
// n_experts: the experts held here may be fewer than a token's picks. The ids and the experts'
// pointers are checked when the op runs.
pagoda_status_t check_moe_matmul(const Reporter &r, const pagoda_op_moe_matmul_t &a);
// The wording of the data errors the MoE ops find when they run, after "<op>: ", so that every
// backend (the CUDA one from its device record) says the same: "logits[3, 5] is NaN" and
// "expert_ids[7] = -1 is negative (expert ids are global, from 0)"; and for MOE_MATMUL's
// matrix of a picked expert missing, "experts[2] is NULL, but expert_ids[5] picks it".
std::string moe_nan_logit_text(int64_t row, int64_t column);
std::string moe_negative_id_text(int64_t index, int64_t id);
std::string moe_null_expert_text(int64_t expert, int64_t slot);

}  // namespace pagoda::plugin
