// The CPU backend's collectives table: ranks are host threads of one process (comm_group.hpp)
// or processes of one machine (shm_comm_group.hpp).
// Streams run synchronously, so each collective returns when its data has arrived.
#pragma once

#include "pagoda/backend.h"

namespace pagoda::cpu {

const pagoda_backend_collectives_t &cpu_collectives();

}  // namespace pagoda::cpu
