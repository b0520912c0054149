// The arithmetic of the reducing collectives, shared by ranks in one process (comm_group.hpp)
// and ranks across processes (shm_comm_group.hpp), so both sum in the same order and a layout
// gives the same bits whichever way its ranks are spread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pagoda/plugin.h"

namespace pagoda::cpu {

// Ranks a communicator may have (as many as the backend has devices).
constexpr int32_t kMaxCommRanks = 64;

// Whether all_reduce and reduce_scatter take `dtype`.
bool reducible(pagoda_dtype_t dtype);

// dst[i] = sends[0][offset + i] op sends[1][offset + i] op ..., in rank order, for i < count;
// the 16-bit floats are reduced in f32.
void reduce_into(std::span<const void *const> sends, pagoda_dtype_t dtype, size_t offset, size_t count,
                 pagoda_reduce_op_t op, void *dst);

}  // namespace pagoda::cpu
