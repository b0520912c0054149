// The processes of one launch that a mesh spans: this process's rank among them, how many there
// are, and the bootstrap through which they exchange their first bytes (bootstrap.hpp).
//
// Rank and size come from the host, else from the launcher's environment: PAGODA_RANK and
// PAGODA_WORLD_SIZE (for hosts that start their ranks themselves), else OpenMPI's
// OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, else one process. The bootstrap is the host's
// broadcast when it gives one, else a TCP rendezvous on the address it gives or PAGODA_RENDEZVOUS
// names; under mpirun on one machine, with neither, the ranks meet on loopback at a port derived
// from OpenMPI's job id, so `mpirun -np N` needs no flag. Once met, the ranks tell each other
// their machines (machine.hpp), so that collectives are made for the scope they span.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mesh/bootstrap.hpp"
#include "mesh/machine.hpp"

namespace pagoda::mesh {

// A rank waits this long for the others unless told otherwise (the bootstrap, communicators).
constexpr int64_t kDefaultWorldTimeoutMs = 30'000;

struct WorldOptions {
    int32_t rank = -1;      // -1: from the environment
    int32_t size = 0;       // 0: from the environment
    std::string rendezvous; // "host:port"; "" = PAGODA_RENDEZVOUS or the mpirun default
    HostBroadcast broadcast = nullptr;
    void *broadcast_user = nullptr;
    int64_t timeout_ms = 0;  // 0 = kDefaultWorldTimeoutMs
    // Every communicator over the network even on one machine: the benchmark's way to time the
    // path between machines beside the shared-memory one.
    bool network_collectives = false;
};

class World {
public:
    // Resolves rank and size and, for more than one process, joins the bootstrap (blocking until
    // every rank has). Throws INVALID_ARGUMENT for a rank outside the size, a negative timeout,
    // or several processes with no way to meet; BACKEND when the others do not come in time.
    explicit World(const WorldOptions &options);

    int32_t rank() const noexcept { return rank_; }
    int32_t size() const noexcept { return size_; }
    int64_t timeout_ms() const noexcept { return timeout_ms_; }
    bool network_collectives() const noexcept { return network_collectives_; }
    // How the ranks met, for messages: "one process", "the host's broadcast", "tcp://host:port".
    const std::string &how() const noexcept { return how_; }
    // Null for one process.
    Bootstrap *bootstrap() const noexcept { return bootstrap_.get(); }
    // How many machines the ranks run on (one for one process), and which one rank `rank` is on
    // (machines numbered by each one's first rank).
    int32_t machine_count() const noexcept { return machine_count_; }
    int32_t machine_of(int32_t rank) const noexcept {
        return machine_of_.empty() ? 0 : machine_of_[size_t(rank)];
    }
    // Rank `rank`'s host name, for messages ("" for one process or an unnamed host).
    std::string host_of(int32_t rank) const { return machines_.empty() ? "" : machines_.at(size_t(rank)).host; }
    // "rank 0 on host-a, rank 1 on host-b", for messages.
    std::string describe_machines() const;

private:
    // Tells every rank the others' machines (one all_gather over the bootstrap).
    void learn_machines();

    int32_t rank_ = 0;
    int32_t size_ = 1;
    int64_t timeout_ms_ = kDefaultWorldTimeoutMs;
    bool network_collectives_ = false;
    std::string how_ = "one process";
    std::unique_ptr<Bootstrap> bootstrap_;
    std::vector<MachineId> machines_;   // per rank
    std::vector<int32_t> machine_of_;   // per rank: its machine, numbered by each one's first rank
    int32_t machine_count_ = 1;
};

}  // namespace pagoda::mesh
