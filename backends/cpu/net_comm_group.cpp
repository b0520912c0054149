#include "net_comm_group.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include "collective_reduce.hpp"
#include "dtypes.hpp"
#include "net_endpoint.hpp"
#include "net_store.hpp"

namespace pagoda::cpu {

namespace {

// Sends and receives use one slot, each collective its own (a count every rank keeps alike), apart
// from the prefixes of Gloo's own collectives (gloo/types.h); messages between two ranks on one
// slot arrive in the order sent.
const uint64_t kPointToPointSlot = gloo::Slot::build(0x70, 0);
constexpr uint8_t kCollectiveSlotPrefix = 0x71;

std::vector<char> bytes_of(const std::string &s) { return {s.begin(), s.end()}; }

// A peer that stops answering at the TCP level (its machine gone, the link cut) is dropped after
// about this long even in a wait that may last (an idle follower's): idle probes after 2 s, then
// one a second, 4 unanswered; sent data unacknowledged as long. Probes are answered by the
// peer's kernel, so a busy peer process is never mistaken for a gone one.
constexpr int kKeepIdleSeconds = 2, kKeepIntervalSeconds = 1, kKeepProbes = 4;
constexpr unsigned kUnackedMs = 6000;

// The IP of a socket's peer, or "" for a socket that is not a connected TCP one.
std::string peer_host(int fd) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    int type = 0;
    socklen_t type_length = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM) return "";
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) != 0) return "";
    char host[INET6_ADDRSTRLEN] = "";
    if (peer.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(&peer)->sin_addr, host, sizeof host);
    else if (peer.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6 *>(&peer)->sin6_addr, host, sizeof host);
    return host;
}

// Turns on keepalive for this process's TCP connections to `hosts`. Gloo sets none and keeps its
// descriptors to itself, so they are found among the process's open descriptors; others to the
// same hosts (another group's, the store's) only gain the same probes.
void keep_alive(const std::vector<std::string> &hosts) {
    DIR *dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return;
    while (const dirent *entry = ::readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        struct stat st{};
        if (fd < 3 || fd == ::dirfd(dir) || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        const std::string host = peer_host(fd);
        if (host.empty() || std::find(hosts.begin(), hosts.end(), host) == hosts.end()) continue;
        const int on = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdleSeconds, sizeof kKeepIdleSeconds);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepIntervalSeconds, sizeof kKeepIntervalSeconds);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepProbes, sizeof kKeepProbes);
        ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &kUnackedMs, sizeof kUnackedMs);
    }
    ::closedir(dir);
}

}  // namespace

std::unique_ptr<NetCommGroup> NetCommGroup::join(const pagoda_comm_unique_id_t &id,
                                                 std::shared_ptr<gloo::transport::Device> device,
                                                 const std::string &host, int32_t n_ranks, int32_t rank,
                                                 int64_t timeout_ms, std::string &error) {
    NetCommId where;
    if (!decode_net_comm_id(id, where)) return error = "the id is not one of a communicator across machines", nullptr;
    const std::string prefix = "rank " + std::to_string(rank) + " of " + std::to_string(n_ranks) + ": ";
    try {
        NetStoreClient store(where.store, where.key, timeout_ms);
        // Each rank's host first, so that later messages can name ranks by address.
        store.set("host/" + std::to_string(rank), bytes_of(host));
        std::vector<std::string> hosts;
        for (int32_t r = 0; r < n_ranks; ++r) {
            std::vector<char> h = store.get("host/" + std::to_string(r));
            hosts.emplace_back(h.begin(), h.end());
        }
        auto context = std::make_shared<gloo::rendezvous::Context>(rank, n_ranks);
        context->setTimeout(std::chrono::milliseconds(timeout_ms));
        context->connectFullMesh(store, device);
        std::vector<std::string> peers;
        for (int32_t r = 0; r < n_ranks; ++r)
            if (r != rank) peers.push_back(hosts[size_t(r)]);
        keep_alive(peers);
        return std::unique_ptr<NetCommGroup>(new NetCommGroup(std::move(context), std::move(hosts)));
    } catch (const std::exception &e) {
        error = prefix + "joining over the network: " + e.what();
        return nullptr;
    }
}

NetCommGroup::NetCommGroup(std::shared_ptr<gloo::rendezvous::Context> context, std::vector<std::string> hosts)
    : context_(std::move(context)), hosts_(std::move(hosts)) {}

NetCommGroup::~NetCommGroup() = default;

std::string NetCommGroup::rank_name(int32_t rank) const {
    return "rank " + std::to_string(rank) + " (at " + hosts_[size_t(rank)] + ")";
}

template <typename Work>
bool NetCommGroup::guarded(const char *what, std::string &error, Work &&work) {
    const std::string me = "rank " + std::to_string(context_->rank) + " of " + std::to_string(context_->size);
    if (failed_.load()) {
        std::lock_guard lock(mutex_);
        error = me + ": " + what + ": the group failed earlier: " + failure_;
        return false;
    }
    try {
        work();
        return true;
    } catch (const std::exception &e) {
        {
            std::lock_guard lock(mutex_);
            if (failure_.empty()) failure_ = e.what();
        }
        abort();  // closes every connection, so the peers stop waiting on this rank
        error = me + ": " + what + ": " + e.what();
        return false;
    }
}

void NetCommGroup::run(const std::vector<Transfer> &transfers, uint64_t slot) {
    // Gloo says "closed by peer" when the peer's process ended (or it aborted), "timed out" when
    // it went silent; either way, posting or waiting, it is this transfer's peer.
    auto failed = [&](const Transfer &t, const std::exception &e) {
        return std::runtime_error(std::string(t.outgoing ? "sending to " : "waiting for ") + rank_name(t.peer) +
                                  ": " + e.what());
    };
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers;
    for (const Transfer &t : transfers) {
        buffers.push_back(context_->createUnboundBuffer(t.data, t.bytes));
        try {
            if (t.outgoing) buffers.back()->send(t.peer, slot);
            else buffers.back()->recv(t.peer, slot);
        } catch (const std::exception &e) {
            throw failed(t, e);
        }
    }
    {
        std::lock_guard lock(mutex_);
        for (auto &b : buffers) in_flight_.push_back(b.get());
    }
    struct Forget {
        NetCommGroup &group;
        const std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> &buffers;
        ~Forget() {
            std::lock_guard lock(group.mutex_);
            for (auto &b : buffers) std::erase(group.in_flight_, b.get());
        }
    } forget{*this, buffers};
    // Receives are waited on first. When a peer dies, Gloo wakes every receive posted to it, but
    // not a send it had already queued on the socket (that one waits out the whole timeout); a
    // failed receive aborts the group, which releases the sends.
    for (const bool outgoing : {false, true}) {
        for (size_t i = 0; i < transfers.size(); ++i) {
            const Transfer &t = transfers[i];
            if (t.outgoing != outgoing) continue;
            bool done = false;
            try {
                done = t.outgoing ? buffers[i]->waitSend() : buffers[i]->waitRecv();
            } catch (const std::exception &e) {
                throw failed(t, e);
            }
            if (!done) throw std::runtime_error("the communicator was aborted");
        }
    }
}

bool NetCommGroup::all_gather(const void *send, void *recv, size_t bytes, std::string &error) {
    return guarded("all_gather", error, [&] {
        auto *out = static_cast<unsigned char *>(recv);
        const size_t me = size_t(context_->rank);
        std::memmove(out + me * bytes, send, bytes);
        std::vector<Transfer> transfers;
        for (int32_t r = 0; r < context_->size; ++r) {
            if (r == context_->rank) continue;
            transfers.push_back({r, true, out + me * bytes, bytes});
            transfers.push_back({r, false, out + size_t(r) * bytes, bytes});
        }
        run(transfers, next_slot());
    });
}

bool NetCommGroup::all_reduce(const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                              pagoda_reduce_op_t op, std::string &error) {
    const size_t n = size_t(context_->size), bytes = count * formats::dtype_size(dtype);
    scratch_.resize(n * bytes);
    if (!all_gather(send, scratch_.data(), bytes, error)) return false;
    reduce_scratch(count, dtype, op, recv);
    return true;
}

void NetCommGroup::reduce_scratch(size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op, void *recv) const {
    const size_t n = size_t(context_->size), bytes = count * formats::dtype_size(dtype);
    const void *parts[kMaxCommRanks];  // on the stack: this runs per layer of every step
    for (size_t r = 0; r < n; ++r) parts[r] = scratch_.data() + r * bytes;
    reduce_into({parts, n}, dtype, 0, count, op, recv);
}

bool NetCommGroup::reduce_scatter(const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                                  pagoda_reduce_op_t op, std::string &error) {
    const size_t n = size_t(context_->size), bytes = count * formats::dtype_size(dtype), me = size_t(context_->rank);
    return guarded("reduce_scatter", error, [&] {
        // Rank r gets every rank's part r, then reduces them in rank order.
        scratch_.resize(n * bytes);
        const auto *in = static_cast<const unsigned char *>(send);
        std::memcpy(scratch_.data() + me * bytes, in + me * bytes, bytes);
        std::vector<Transfer> transfers;
        for (int32_t r = 0; r < context_->size; ++r) {
            if (r == context_->rank) continue;
            transfers.push_back({r, true, const_cast<unsigned char *>(in) + size_t(r) * bytes, bytes});
            transfers.push_back({r, false, scratch_.data() + size_t(r) * bytes, bytes});
        }
        run(transfers, next_slot());
        reduce_scratch(count, dtype, op, recv);
    });
}

bool NetCommGroup::broadcast(const void *send, void *recv, size_t bytes, int32_t root, std::string &error) {
    return guarded("broadcast", error, [&] {
        std::vector<Transfer> transfers;
        if (context_->rank == root) {
            if (send != recv) std::memmove(recv, send, bytes);
            for (int32_t r = 0; r < context_->size; ++r)
                if (r != root) transfers.push_back({r, true, recv, bytes});
        } else {
            transfers.push_back({root, false, recv, bytes});
        }
        run(transfers, next_slot());
    });
}

bool NetCommGroup::transfer(const std::vector<Transfer> &transfers, std::string &error) {
    return guarded(transfers.size() == 1 ? (transfers[0].outgoing ? "send" : "recv") : "send/recv group", error,
                   [&] { run(transfers, kPointToPointSlot); });
}

uint64_t NetCommGroup::next_slot() { return gloo::Slot::build(kCollectiveSlotPrefix, tag_++); }

void NetCommGroup::abort() noexcept {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = "the communicator was aborted";
    failed_ = true;
    for (gloo::transport::UnboundBuffer *b : in_flight_) {
        b->abortWaitRecv();
        b->abortWaitSend();
    }
    try {
        context_->closeConnections();  // the peers' waits on this rank fail at once
    } catch (...) {
        // Nothing more to close.
    }
}

}  // namespace pagoda::cpu
