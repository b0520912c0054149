// The arithmetic of the reducing collectives, shared by ranks in one process (comm_group.hpp)
// and ranks across processes (shm_comm_group.hpp), so both sum in the same order and a layout
// gives the same bits whichever way its ranks are spread.
#pragma once

#include <cstddef>
#include <vector>

#include "pagoda/plugin.h"

namespace pagoda::cpu {

// Whether all_reduce and reduce_scatter take `dtype`.
bool reducible(pagoda_dtype_t dtype);

// dst[i] = sends[0][offset + i] op sends[1][offset + i] op ..., in rank order, for i < count;
// the 16-bit floats are reduced in f32.
void reduce_into(const std::vector<const void *> &sends, pagoda_dtype_t dtype, size_t offset, size_t count,
                 pagoda_reduce_op_t op, void *dst);

}  // namespace pagoda::cpu
