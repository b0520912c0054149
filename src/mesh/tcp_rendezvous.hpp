// A bootstrap for hosts without MPI: the ranks of one launch meet on a TCP address. Rank 0 listens
// there and every other rank connects to it (a star: every message goes through rank 0). Only for
// the bootstrap's small control messages, never for tensor data.
//
// Each call waits at most `timeout_ms` (the handshake in tcp_rendezvous, then each broadcast and
// all-gather). A rank that dies makes the others fail at once with an Error naming it, since the
// kernel closes a killed process's sockets; a silent rank makes them fail when the time is up.
// After a failure every later call fails too, and rank 0 hangs up on the others after telling
// them why, so no rank waits for one that gave up.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mesh/bootstrap.hpp"

namespace pagoda::mesh {

// Joins the launch as `rank` of `size` at `address`, "host:port" (a name, dotted IPv4, or
// "[IPv6]:port"), and returns once every rank has joined. Rank 0 listens on the address; the
// others connect, trying again until `timeout_ms` has passed, since rank 0 may start later.
// size == 1 opens no socket. Throws INVALID_ARGUMENT for a malformed or unresolvable address, a
// rank outside [0, size) or a timeout below 1 ms; BACKEND when the world is not complete in time,
// or when rank 0 refused this rank (another world size, a rank taken, another protocol version).
std::unique_ptr<Bootstrap> tcp_rendezvous(const std::string &address, int32_t rank, int32_t size, int64_t timeout_ms);

}  // namespace pagoda::mesh
