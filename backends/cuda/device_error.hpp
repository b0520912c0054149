// Data-dependent argument errors found on the device. An op whose arguments live in device
// memory (embedding ids, KV slots, block tables, context lengths) cannot be checked on the host
// at launch without a synchronisation, so its kernels check them: the first bad value is
// recorded in the stream's DeviceError, later launches on that stream see the record and do
// nothing (a failed op changes nothing, and neither does anything queued after it), and the next
// stream_synchronize reports it as PAGODA_ERR_INVALID_ARGUMENT with a message built here and
// clears it. Plain C++ so both nvcc and the host compiler read it.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::cuda {

// Which argument held the bad value; names the field in the message.
enum class DeviceErrorField : int32_t {
    None = 0,
    EmbeddingId,        // embedding: ids[index] = value outside [0, limit)
    KvWriteSlot,        // kv_write: slot_mapping[index] = value past limit slots
    AttentionQueryStart,// paged_attention: query_start[index] = value out of order (limit: the previous)
    AttentionContext,   // paged_attention: context_lens[index] = value below its q_len or past capacity (limit)
    AttentionBlock,     // paged_attention: block_tables entry index (seq · max_blocks + j) = value outside [0, limit)
    // rope: freq_factors[index] (kv_write: k_rope.freq_factors[index]) is not finite and
    // positive; value: its f32 bit pattern (limit: rot_dim/2)
    RopeFreqFactor,
    // sample: row index is rejected; limit: its plugin::SampleFault (sample_rules.hpp); value:
    // the bad parameter's f32 bit pattern, or the column of a NaN logit
    SampleRow,
    // moe_route: row index holds a NaN logit, the first at column value
    MoeRouteLogit,
    // moe_matmul: expert_ids[index] = value is negative
    MoeExpertId,
    // moe_matmul: experts[index] (value: its address) is NULL or misaligned for the kernel's
    // loads; limit: a slot that picks it
    MoeExpert,
};

// One per stream, in device memory (zeroed when the stream is made and after each report).
// `field` is written last-wins-never: the first kernel to find an error claims the record with
// an atomicCAS on `field`, then fills the rest.
struct DeviceError {
    int32_t field;  // DeviceErrorField; 0 = no error
    int32_t op;     // pagoda_op_t of the launch that found it
    int64_t index;
    int64_t value;
    int64_t limit;
};

// "kv_write: slot_mapping[3] = 4100 is past the cache's 4096 slots (found on the device)".
std::string describe(const DeviceError &e);

#ifdef __CUDACC__
// Claims the record for this error unless another one holds it. Device code only.
__device__ inline void report(DeviceError *e, int32_t op, DeviceErrorField field, int64_t index,
                              int64_t value, int64_t limit) {
    if (atomicCAS(reinterpret_cast<int *>(&e->field), 0, -1) == 0) {
        e->op = op;
        e->index = index;
        e->value = value;
        e->limit = limit;
        __threadfence();
        atomicExch(reinterpret_cast<int *>(&e->field), int(field));
    }
}

// Whether an earlier launch on this stream recorded an error (or one is being recorded).
__device__ inline bool failed(const DeviceError *e) {
    return *reinterpret_cast<const volatile int32_t *>(&e->field) != 0;
}
#endif

}  // namespace pagoda::cuda
