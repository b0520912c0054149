// How the ranks of one launch (processes started by mpirun, or by a host on its own) exchange a few
// hundred bytes before any communicator exists: rank 0's communicator ids, and a check that every
// rank was launched with the same configuration. The core never calls MPI itself: a host hands in
// its own broadcast (host_bootstrap), or the ranks meet on a TCP address (tcp_rendezvous.hpp).
// Never for tensor data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "pagoda/status.h"

namespace pagoda::mesh {

// How the ranks of one launch exchange small messages before (and beside) their communicators.
// Every rank makes the same calls in the same order; one object is used by one thread at a time.
class Bootstrap {
public:
    virtual ~Bootstrap() = default;
    virtual int32_t rank() const noexcept = 0;
    virtual int32_t size() const noexcept = 0;
    // Every rank passes a buffer of the same `bytes`; afterwards each holds root's contents.
    // Throws Error(PAGODA_ERR_BACKEND) naming the rank that failed or did not answer in time.
    virtual void broadcast(void *data, size_t bytes, int32_t root) = 0;
    // out[r·bytes ..] = rank r's `mine`, on every rank. Default: one broadcast per rank.
    virtual void all_gather(const void *mine, void *out, size_t bytes);
};

// The host's broadcast among all ranks of the launch (e.g. MPI_Bcast on MPI_COMM_WORLD): every
// rank passes `bytes` at `data`, and afterwards holds root's. Returns PAGODA_OK or a failure.
using HostBroadcast = pagoda_status_t (*)(void *user, void *data, size_t bytes, int32_t root);

// A bootstrap over a host-supplied broadcast, called with `user` as its first argument. A status
// other than PAGODA_OK becomes Error(PAGODA_ERR_BACKEND). Throws INVALID_ARGUMENT for a NULL
// broadcast or a rank outside [0, size).
std::unique_ptr<Bootstrap> host_bootstrap(HostBroadcast broadcast, void *user, int32_t rank, int32_t size);

}  // namespace pagoda::mesh
