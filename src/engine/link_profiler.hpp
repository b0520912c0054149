// Measures the links a mesh's collectives cross, so that the planner prices communication with
// what this hardware does instead of a preset's assumption. For each path the mesh has (two of
// one process's devices, two processes on one machine, two machines) it times, through the
// backend's own collectives on the transport the executor would use there, a two-device
// all-reduce and a ping-pong (half a round trip is one send) at sizes doubling from kilobytes
// to megabytes, in rounds over the sizes, keeps each size's median and fits latency and
// bandwidth (measured_links.hpp).
// It runs the backend's communicators on devices, so it lives above mesh and plan.
#pragma once

#include <cstdint>
#include <vector>

#include "mesh/mesh.hpp"
#include "mesh/world.hpp"
#include "pagoda/backend.h"
#include "plan/measured_links.hpp"
#include "runtime/device.hpp"

namespace pagoda::engine {

struct LinkProfileOptions {
    int64_t min_bytes = 4096;               // the smallest buffer timed
    int64_t max_bytes = int64_t(8) << 20;   // the largest: sizes double from min_bytes up to it
    int32_t repeats = 10;                   // timed rounds over every size; each size's median kept
    int32_t warmup = 2;                     // untimed rounds before them
};

// Throws Error(INVALID_ARGUMENT) naming the option: min_bytes a positive multiple of 4 (f32
// elements), max_bytes at least twice it (two sizes to fit), repeats from 1 to 10000, warmup ≥ 0.
void validate(const LinkProfileOptions &options);

// The sizes timed: min_bytes, doubled while within max_bytes.
std::vector<int64_t> link_sizes(const LinkProfileOptions &options);

// Two devices of this process, each joined on a thread of its own (the in-process path).
plan::MeasuredLink time_device_link(const runtime::Device &first, const runtime::Device &second,
                                    const LinkProfileOptions &options);

// Ranks `first` and `second` of `world`, each on its own `device`, through communicators made
// with `comm_options` (the scope says which transport). Every rank of the world calls it at the
// same point; the others wait, and all return the same result (rank `first`'s timings). Throws
// what the communicators and the bootstrap throw (BACKEND, naming a rank that failed).
plan::MeasuredLink time_process_link(const mesh::World &world, int32_t first, int32_t second,
                                     const runtime::Device &device, const pagoda_comm_options_t &comm_options,
                                     const LinkProfileOptions &options);

// Every path `mesh` has, on each process's first devices: within a process when each has two or
// more, within a machine when two ranks share one, across machines when they span several (the
// lowest-numbered pair of each). Every rank calls it; all return the same links. Throws
// UNSUPPORTED for a mesh of one device in one process (there is no link), and as above.
std::vector<plan::MeasuredLink> profile_links(const mesh::Mesh &mesh, const LinkProfileOptions &options);

}  // namespace pagoda::engine
