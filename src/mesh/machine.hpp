// Which machine a process runs on, as far as the CPU backend's shared-memory collectives care:
// the kernel's boot id (one per booted machine) and the /dev/shm it sees (two containers or
// network namespaces on one kernel with their own tmpfs cannot share memory through it). The
// host name is carried for messages only: machines may share one, and one machine's ranks may
// be in namespaces that name themselves differently.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::mesh {

struct MachineId {
    std::string host;     // gethostname(), for messages
    std::string boot_id;  // /proc/sys/kernel/random/boot_id; "" where unreadable
    uint64_t shm_device = 0;  // stat("/dev/shm"): st_dev and st_ino; 0 where it is missing
    uint64_t shm_inode = 0;
};

// This process's machine.
MachineId this_machine();

// Whether two processes can meet in shared memory: the same booted kernel and the same /dev/shm.
// Unknown fields (an unreadable boot id) count as equal, so a process that cannot tell is
// treated as local, as before machines were told apart.
bool same_machine(const MachineId &a, const MachineId &b);

}  // namespace pagoda::mesh
