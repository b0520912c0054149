// The collectives of ranks in several processes (shm_comm_group.hpp). Data passes through each
// rank's staging slot, in pieces that fit it: a rank copies its piece in, all meet at a barrier,
// each reads what it needs from every slot, and all meet again before a slot is reused. Sums
// run in rank order on every rank (collective_reduce.hpp), as between threads.
#pragma once

#include <cstddef>
#include <string>

#include "pagoda/plugin.h"
#include "shm_comm_group.hpp"

namespace pagoda::cpu {

bool shm_all_reduce(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                    pagoda_reduce_op_t op, std::string &error);
bool shm_all_gather(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                    std::string &error);
bool shm_reduce_scatter(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                        pagoda_reduce_op_t op, std::string &error);
bool shm_broadcast(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                   int32_t root, std::string &error);

}  // namespace pagoda::cpu
