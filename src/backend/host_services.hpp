// The table of host services every plugin receives (logging, error text, host memory).
#pragma once

#include "pagoda/backend.h"

namespace pagoda {

const pagoda_backend_host_t &host_services() noexcept;

}  // namespace pagoda
