#include "mesh/world.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "common/error.hpp"
#include "mesh/tcp_rendezvous.hpp"

namespace pagoda::mesh {

namespace {

// An environment variable's integer value; `fallback` when unset; INVALID_ARGUMENT when not one.
int64_t env_integer(const char *name, int64_t fallback) {
    const char *value = std::getenv(name);
    if (value == nullptr || *value == '\0') return fallback;
    int64_t v = 0;
    const char *end = value + std::char_traits<char>::length(value);
    auto [p, ec] = std::from_chars(value, end, v);
    if (ec != std::errc() || p != end)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string("environment variable ") + name + "=\"" + value +
                                                     "\" is not an integer");
    return v;
}

std::string env_string(const char *name) {
    const char *value = std::getenv(name);
    return value != nullptr ? value : "";
}

// Where the ranks of a one-machine mpirun launch meet when nobody said: loopback, at a port in
// 20000..49999 picked by the launch's job id, so every rank of the launch finds the same one
// and two launches seldom share it (a stranger on the port is refused by the handshake).
std::string mpirun_default_rendezvous() {
    const std::string job = env_string("OMPI_MCA_ess_base_jobid");
    if (job.empty()) return "";
    if (env_integer("OMPI_COMM_WORLD_LOCAL_SIZE", -1) != env_integer("OMPI_COMM_WORLD_SIZE", -2)) return "";
    const size_t port = 20000 + std::hash<std::string>{}(job) % 30000;
    return "127.0.0.1:" + std::to_string(port);
}

}  // namespace

World::World(const WorldOptions &o) {
    int64_t rank = o.rank, size = o.size;
    if (rank < 0) rank = env_integer("PAGODA_RANK", env_integer("OMPI_COMM_WORLD_RANK", 0));
    if (size <= 0) size = env_integer("PAGODA_WORLD_SIZE", env_integer("OMPI_COMM_WORLD_SIZE", 1));
    if (size < 1 || size > 4096 || rank < 0 || rank >= size)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "rank " + std::to_string(rank) + " of a world of " +
                                                     std::to_string(size) + " processes is out of range");
    if (o.timeout_ms < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "timeout_ms " + std::to_string(o.timeout_ms) + " is negative");
    rank_ = int32_t(rank);
    size_ = int32_t(size);
    timeout_ms_ = o.timeout_ms != 0 ? o.timeout_ms : kDefaultWorldTimeoutMs;
    network_collectives_ = o.network_collectives;
    if (size_ == 1) return;
    if (o.broadcast != nullptr) {
        bootstrap_ = host_bootstrap(o.broadcast, o.broadcast_user, rank_, size_);
        how_ = "the host's broadcast";
        learn_machines();
        return;
    }
    std::string address = o.rendezvous;
    if (address.empty()) address = env_string("PAGODA_RENDEZVOUS");
    if (address.empty()) address = mpirun_default_rendezvous();
    if (address.empty())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "a mesh over " + std::to_string(size_) + " processes needs a way for them to meet: a rendezvous "
                    "address (host:port, or PAGODA_RENDEZVOUS) or the host's bootstrap broadcast; only a one-machine "
                    "mpirun launch finds one by itself");
    bootstrap_ = tcp_rendezvous(address, rank_, size_, timeout_ms_);
    how_ = "tcp://" + address;
    learn_machines();
}

namespace {

// What each rank tells the others of its machine: fixed-size fields for all_gather.
struct MachineRecord {
    char host[64];
    char boot_id[48];
    uint64_t shm_device;
    uint64_t shm_inode;
};

// `text` cut to fit `field` with its NUL.
template <size_t N>
void copy_cut(char (&field)[N], const std::string &text) {
    const size_t n = std::min(text.size(), N - 1);
    std::memcpy(field, text.data(), n);
    field[n] = '\0';
}

}  // namespace

void World::learn_machines() {
    const MachineId here = this_machine();
    MachineRecord mine{};
    copy_cut(mine.host, here.host);
    copy_cut(mine.boot_id, here.boot_id);
    mine.shm_device = here.shm_device;
    mine.shm_inode = here.shm_inode;
    std::vector<MachineRecord> all(static_cast<size_t>(size_));
    bootstrap_->all_gather(&mine, all.data(), sizeof mine);
    machines_.clear();
    for (const MachineRecord &r : all)
        machines_.push_back({std::string(r.host, strnlen(r.host, sizeof r.host)),
                             std::string(r.boot_id, strnlen(r.boot_id, sizeof r.boot_id)), r.shm_device, r.shm_inode});
    // Each rank joins the first machine it shares memory with, in rank order.
    machine_of_.assign(size_t(size_), 0);
    std::vector<size_t> firsts;
    for (size_t r = 0; r < machines_.size(); ++r) {
        size_t m = 0;
        while (m < firsts.size() && !same_machine(machines_[firsts[m]], machines_[r])) ++m;
        if (m == firsts.size()) firsts.push_back(r);
        machine_of_[r] = int32_t(m);
    }
    machine_count_ = int32_t(firsts.size());
}

std::string World::describe_machines() const {
    if (machines_.empty()) return "rank 0 on this machine";
    // A message, not a listing: the first ranks tell whose machines differ.
    constexpr size_t kShown = 8;
    std::string text;
    for (size_t r = 0; r < machines_.size() && r < kShown; ++r)
        text += (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + " on " +
                (machines_[r].host.empty() ? "an unnamed host" : machines_[r].host) + " (machine " +
                std::to_string(machine_of_[r]) + ")";
    if (machines_.size() > kShown) text += ", … (" + std::to_string(machines_.size()) + " ranks)";
    return text;
}

}  // namespace pagoda::mesh
