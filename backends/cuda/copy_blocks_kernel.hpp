// COPY_BLOCKS' kernel: every pair of every cache in one launch; copy_blocks_kernel.cu. Plain
// C++ so both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"

namespace pagoda::cuda {

struct CopyBlocksArgs {
    // Device memory: the caches' base addresses ([n_caches] each) and the pairs
    // ([n_pairs][2]: source block, destination block), checked on the host already.
    const unsigned long long *src_caches;
    const unsigned long long *dst_caches;
    const int32_t *block_pairs;
    int64_t n_caches;
    int64_t n_pairs;
    int64_t block_bytes;
    // Whether the pairs must apply in order: some pair reads or writes a block that an earlier
    // pair wrote, or writes one an earlier pair read (a chain a→b, b→c). Otherwise every pair
    // is copied at once.
    bool ordered;
    // Whether block_bytes and every cache base are multiples of 16, for 16-byte copies.
    bool vector16;
    const DeviceError *error;  // nothing is copied when the stream's record is set
};

// Queues the copy on `stream`; returns the launch's error (cudaSuccess when there is nothing
// to copy).
cudaError_t launch_copy_blocks(const CopyBlocksArgs &a, cudaStream_t stream);

}  // namespace pagoda::cuda
