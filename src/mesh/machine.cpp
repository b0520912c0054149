#include "mesh/machine.hpp"

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace pagoda::mesh {

MachineId this_machine() {
    MachineId m;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) m.host = host;
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::getline(boot, m.boot_id);
    struct stat shm {};
    if (stat("/dev/shm", &shm) == 0) {
        m.shm_device = uint64_t(shm.st_dev);
        m.shm_inode = uint64_t(shm.st_ino);
    }
    return m;
}

bool same_machine(const MachineId &a, const MachineId &b) {
    const bool boot = a.boot_id.empty() || b.boot_id.empty() || a.boot_id == b.boot_id;
    const bool shm = a.shm_device == 0 || b.shm_device == 0 ||
                     (a.shm_device == b.shm_device && a.shm_inode == b.shm_inode);
    return boot && shm;
}

}  // namespace pagoda::mesh
