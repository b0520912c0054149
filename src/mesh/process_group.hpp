// The processes of a mesh that spans several: one rank each, on its first local device, over
// the backend's collectives. Engines use it to keep their steps in lockstep: rank 0 broadcasts
// each step's intake, and the process holding the last stage's first device broadcasts the
// step's logits, so that every rank schedules and samples the same.
//
// A rank waits here as long as its peers live (an engine on rank 1 idles while rank 0 has no
// work), and fails at once when one has died; collectives inside a step keep the world timeout.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mesh/communicator.hpp"
#include "mesh/world.hpp"

namespace pagoda::mesh {

class ProcessGroup {
public:
    // Joins every process of `world` on `device` (this process's first device), with an id made
    // by rank 0 and handed out through the world's bootstrap. Every rank calls it at the same
    // point. Throws what making the id, the bootstrap or joining throws.
    ProcessGroup(const runtime::Device &device, const World &world);
    ~ProcessGroup();

    int32_t rank() const noexcept { return comm_->rank(); }
    int32_t size() const noexcept { return comm_->size(); }
    // `bytes` = root's bytes on every rank (their count travels first).
    void broadcast_bytes(std::vector<unsigned char> &bytes, int32_t root) const;
    void broadcast(float *data, size_t count, int32_t root) const;
    // Makes every process's waiting call here fail (a step failed on this one).
    void abort() const noexcept { comm_->abort(); }

private:
    std::unique_ptr<runtime::Stream> stream_;
    std::unique_ptr<Communicator> comm_;
};

// Options for communicators among the processes of `world`: one machine's shared memory, or the
// network when the ranks are on several machines, and the world's timeout.
pagoda_comm_options_t world_comm_options(const World &world);

}  // namespace pagoda::mesh
