#include "collectives.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>

#include "collective_reduce.hpp"
#include "comm_group.hpp"
#include "cpu_backend.hpp"
#include "dtypes.hpp"
#include "names.hpp"
#include "net_comm_group.hpp"
#include "net_endpoint.hpp"
#include "shm_collectives.hpp"

namespace pagoda::cpu {

// Joining gives up after this long: a rank that never comes must not hang the others forever.
constexpr int64_t kJoinTimeoutMs = 60'000;
// Ranks in other processes cannot be aborted by this process's host, so each waits at most this
// long for the others unless the communicator's options say otherwise.
constexpr int64_t kShmTimeoutMs = 30'000;

}  // namespace pagoda::cpu

struct pagoda_backend_comm {
    // Exactly one of the three: ranks as threads of this process, as processes of one machine,
    // or across machines.
    std::shared_ptr<pagoda::cpu::CommGroup> group;
    std::unique_ptr<pagoda::cpu::ShmCommGroup> shm;
    std::unique_ptr<pagoda::cpu::NetCommGroup> net;
    int32_t n_ranks = 0;
    int32_t rank = 0;
    int32_t device = 0;  // the device whose streams this rank's collectives run on
};

namespace pagoda::cpu {

namespace {

CpuBackend &backend_of(void *self) { return backend_from_self(self); }

pagoda_status_t check_common(CpuBackend &cpu, const char *what, pagoda_backend_comm_t *comm,
                             pagoda_backend_stream_t *stream, pagoda_dtype_t dtype, bool reduce,
                             pagoda_reduce_op_t op = PAGODA_REDUCE_SUM) {
    if (comm == nullptr || stream == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": comm or stream is NULL");
    if (formats::dtype_size(dtype) == 0 || (reduce && !reducible(dtype)))
        return cpu.fail(PAGODA_ERR_UNSUPPORTED, std::string(what) + ": dtype " +
                                                    formats::dtype_name(dtype) + " is not supported");
    if (reduce && (op < PAGODA_REDUCE_SUM || op > PAGODA_REDUCE_MIN))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(what) + ": unknown reduction " + std::to_string(int(op)));
    if (stream->device != comm->device)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(what) + ": the stream is on cpu:" + std::to_string(stream->device) +
                            " but the communicator's rank " + std::to_string(comm->rank) +
                            " is on cpu:" + std::to_string(comm->device));
    return PAGODA_OK;
}

// Counts a valid collective call on the comm's device and fails the one that config
// "fail_collective" names. The group is left as it is, as a real rank failing alone would leave
// it: the other ranks wait until the host aborts their communicators.
pagoda_status_t count_call(CpuBackend &cpu, const char *what, pagoda_backend_comm_t *comm) {
    if (!cpu.collective_fault_due(comm->device)) return PAGODA_OK;
    const CollectiveFault &f = *cpu.collective_fault();
    return cpu.fail(PAGODA_ERR_BACKEND,
                    std::string(what) + ": fault injected by config fail_collective=" +
                        std::to_string(f.device) + ":" + std::to_string(f.call) +
                        " (collective call " + std::to_string(f.call) + " on cpu:" +
                        std::to_string(f.device) + "); the other ranks are left waiting");
}

pagoda_status_t aborted(CpuBackend &cpu, const char *what, const std::string &error) {
    return cpu.fail(PAGODA_ERR_BACKEND, std::string(what) + ": " + error);
}

pagoda_status_t get_unique_id(void *self, pagoda_comm_unique_id_t *id) {
    if (id == nullptr) return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "get_unique_id: id is NULL");
    // Random bytes plus a counter: unique within the process, which is the group's scope.
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    std::memset(id->bytes, 0, sizeof id->bytes);
    uint64_t words[3] = {counter.fetch_add(1), (uint64_t(rd()) << 32) | rd(),
                         uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())};
    std::memcpy(id->bytes, words, sizeof words);
    return PAGODA_OK;
}

// comm_create and comm_create_ex: an id from get_unique_id_ex(HOST) joins a shared-memory
// group, one from get_unique_id_ex(NETWORK) a group over the network, any other one a group of
// threads.
pagoda_status_t create(void *self, int32_t device, const pagoda_comm_unique_id_t *id, int32_t n_ranks,
                       int32_t rank, const pagoda_comm_options_t *options, pagoda_backend_comm_t **out) {
    CpuBackend &cpu = backend_of(self);
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
    if (id == nullptr || out == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: id or out is NULL");
    if (n_ranks < 1 || n_ranks > kMaxCommRanks || rank < 0 || rank >= n_ranks)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "comm_create: rank " + std::to_string(rank) + " of " +
                            std::to_string(n_ranks) + " is out of range (at most " +
                            std::to_string(kMaxCommRanks) + " ranks)");
    const int64_t asked = options != nullptr ? options->timeout_ms : 0;
    if (asked < 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: timeout_ms " + std::to_string(asked) + " is negative");
    auto comm = std::unique_ptr<pagoda_backend_comm>(new (std::nothrow) pagoda_backend_comm{});
    if (comm == nullptr) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "comm_create: out of memory");
    comm->n_ranks = n_ranks;
    comm->rank = rank;
    comm->device = device;
    std::string error;
    if (is_net_comm_id(*id)) {
        auto gloo_device = cpu.network().device(error);
        if (gloo_device != nullptr)
            comm->net = NetCommGroup::join(*id, gloo_device, cpu.network().host(), n_ranks, rank,
                                           asked != 0 ? asked : kShmTimeoutMs, error);
        if (!comm->net) return cpu.fail(PAGODA_ERR_BACKEND, "comm_create: " + error);
    } else if (is_shm_comm_id(*id)) {
        comm->shm.reset(ShmCommGroup::join(*id, n_ranks, rank, asked != 0 ? asked : kShmTimeoutMs, error));
        if (!comm->shm) return cpu.fail(PAGODA_ERR_BACKEND, "comm_create: " + error);
    } else {
        comm->group = comm_group_for(*id, n_ranks, error);
        if (!comm->group) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: " + error);
        bool joined = comm->group->join(rank, asked != 0 ? asked : kJoinTimeoutMs, error);
        comm_group_joined(*id);
        if (!joined) return cpu.fail(PAGODA_ERR_BACKEND, "comm_create: " + error);
    }
    *out = comm.release();
    return PAGODA_OK;
}

pagoda_status_t comm_create(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                            int32_t n_ranks, int32_t rank, pagoda_backend_comm_t **out) {
    return create(self, device, id, n_ranks, rank, nullptr, out);
}

pagoda_status_t comm_create_ex(void *self, int32_t device, const pagoda_comm_unique_id_t *id, int32_t n_ranks,
                               int32_t rank, const pagoda_comm_options_t *options, pagoda_backend_comm_t **out) {
    if (options == nullptr || options->struct_size < sizeof(pagoda_comm_options_t))
        return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create_ex: options are NULL or too short");
    return create(self, device, id, n_ranks, rank, options, out);
}

pagoda_status_t get_unique_id_ex(void *self, const pagoda_comm_options_t *options, pagoda_comm_unique_id_t *id) {
    CpuBackend &cpu = backend_of(self);
    if (options == nullptr || id == nullptr || options->struct_size < sizeof(pagoda_comm_options_t))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "get_unique_id_ex: options or id is NULL, or options too short");
    // Read as an integer: a host may pass a value outside the enum, which must not be loaded as one.
    int32_t scope = 0;
    std::memcpy(&scope, &options->scope, sizeof scope);
    switch (scope) {
        case PAGODA_COMM_SCOPE_PROCESS: return get_unique_id(self, id);
        case PAGODA_COMM_SCOPE_HOST: make_shm_comm_id(*id); return PAGODA_OK;
        case PAGODA_COMM_SCOPE_NETWORK: {
            std::string error;
            if (!cpu.network().make_id(*id, error))
                return cpu.fail(PAGODA_ERR_BACKEND, "get_unique_id_ex: " + error);
            return PAGODA_OK;
        }
    }
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                    "get_unique_id_ex: unknown scope " + std::to_string(scope));
}

void comm_destroy(void *, pagoda_backend_comm_t *comm) { delete comm; }

pagoda_status_t comm_abort(void *self, pagoda_backend_comm_t *comm) {
    if (comm == nullptr) return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_abort: comm is NULL");
    if (comm->shm) comm->shm->abort();
    else if (comm->net) comm->net->abort();
    else comm->group->abort();
    return PAGODA_OK;
}

// The sends of every rank, as the threads' group publishes them: on the stack, since a
// tensor-parallel step all-reduces once per layer and half.
struct Sends {
    explicit Sends(const std::vector<CommGroup::Buffers> &all) : n(all.size()) {
        for (size_t r = 0; r < n; ++r) ptrs[r] = all[r].send;
    }
    std::span<const void *const> span() const { return {ptrs, n}; }
    const void *ptrs[kMaxCommRanks] = {};
    size_t n;
};

pagoda_status_t all_reduce(void *self, pagoda_backend_comm_t *comm,
                           pagoda_backend_stream_t *stream, const void *send, void *recv,
                           size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "all_reduce", comm, stream, dtype, true, op); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "all_reduce", comm); s != PAGODA_OK) return s;
    std::string error;
    if (comm->shm)
        return shm_all_reduce(*comm->shm, send, recv, count, dtype, op, error) ? PAGODA_OK
                                                                                 : aborted(cpu, "all_reduce", error);
    if (comm->net)
        return comm->net->all_reduce(send, recv, count, dtype, op, error) ? PAGODA_OK
                                                                           : aborted(cpu, "all_reduce", error);
    const size_t n = size_t(comm->n_ranks), rank = size_t(comm->rank);
    const size_t elem = formats::dtype_size(dtype);
    // Rank r reduces slice r and writes it to every rank's output; slices are disjoint, so this
    // is safe in place too (each element is read in full before it is written).
    const size_t begin = count * rank / n, end = count * (rank + 1) / n;
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        if (end == begin) return;
        reduce_into(Sends(all).span(), dtype, begin, end - begin, op,
                    static_cast<unsigned char *>(all[rank].recv) + begin * elem);
        for (size_t r = 0; r < n; ++r)
            if (r != rank)
                std::memcpy(static_cast<unsigned char *>(all[r].recv) + begin * elem,
                            static_cast<unsigned char *>(all[rank].recv) + begin * elem,
                            (end - begin) * elem);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "all_reduce", error);
}

pagoda_status_t all_gather(void *self, pagoda_backend_comm_t *comm,
                           pagoda_backend_stream_t *stream, const void *send, void *recv,
                           size_t count, pagoda_dtype_t dtype) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "all_gather", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "all_gather", comm); s != PAGODA_OK) return s;
    std::string error;
    if (comm->shm)
        return shm_all_gather(*comm->shm, send, recv, count, dtype, error) ? PAGODA_OK
                                                                            : aborted(cpu, "all_gather", error);
    const size_t bytes = count * formats::dtype_size(dtype), rank = size_t(comm->rank);
    if (comm->net)
        return comm->net->all_gather(send, recv, bytes, error) ? PAGODA_OK : aborted(cpu, "all_gather", error);
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        for (const auto &peer : all)
            std::memmove(static_cast<unsigned char *>(peer.recv) + rank * bytes, all[rank].send, bytes);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "all_gather", error);
}

pagoda_status_t reduce_scatter(void *self, pagoda_backend_comm_t *comm,
                               pagoda_backend_stream_t *stream, const void *send, void *recv,
                               size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "reduce_scatter", comm, stream, dtype, true, op); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "reduce_scatter", comm); s != PAGODA_OK) return s;
    std::string error;
    if (comm->shm)
        return shm_reduce_scatter(*comm->shm, send, recv, count, dtype, op, error)
                   ? PAGODA_OK
                   : aborted(cpu, "reduce_scatter", error);
    if (comm->net)
        return comm->net->reduce_scatter(send, recv, count, dtype, op, error) ? PAGODA_OK
                                                                               : aborted(cpu, "reduce_scatter", error);
    const size_t rank = size_t(comm->rank);
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        reduce_into(Sends(all).span(), dtype, rank * count, count, op, all[rank].recv);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "reduce_scatter", error);
}

pagoda_status_t broadcast(void *self, pagoda_backend_comm_t *comm,
                          pagoda_backend_stream_t *stream, const void *send, void *recv,
                          size_t count, pagoda_dtype_t dtype, int32_t root) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "broadcast", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (root < 0 || root >= comm->n_ranks)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "broadcast: root " + std::to_string(root) +
                                                         " is not a rank");
    if (auto s = count_call(cpu, "broadcast", comm); s != PAGODA_OK) return s;
    std::string error;
    if (comm->shm)
        return shm_broadcast(*comm->shm, send, recv, count, dtype, root, error) ? PAGODA_OK
                                                                                 : aborted(cpu, "broadcast", error);
    const size_t bytes = count * formats::dtype_size(dtype);
    if (comm->net)
        return comm->net->broadcast(send, recv, bytes, root, error) ? PAGODA_OK : aborted(cpu, "broadcast", error);
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        if (all[size_t(comm->rank)].recv != all[size_t(root)].send)
            std::memmove(all[size_t(comm->rank)].recv, all[size_t(root)].send, bytes);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "broadcast", error);
}

pagoda_status_t check_peer(CpuBackend &cpu, const char *what, pagoda_backend_comm_t *comm,
                           int32_t peer) {
    if (peer < 0 || peer >= comm->n_ranks || peer == comm->rank)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(what) + ": peer " + std::to_string(peer) + " is not another rank");
    return PAGODA_OK;
}

// A send or receive between processes. Inside group_start .. group_end they are kept and moved
// together at group_end: a ring of sends and receives larger than the channels (or, over the
// network, sends that wait for their receive to be posted) would otherwise wait on itself.
struct PendingTransfer {
    pagoda_backend_comm_t *comm = nullptr;
    int32_t peer = 0;
    bool outgoing = false;
    unsigned char *data = nullptr;  // only read from when outgoing
    size_t bytes = 0;
};
struct OpenGroup {
    int depth = 0;
    std::vector<PendingTransfer> transfers;
};
thread_local OpenGroup t_group;

// Moves one communicator's transfers together.
bool move_transfers(pagoda_backend_comm_t *comm, const std::vector<PendingTransfer> &transfers, std::string &error) {
    if (comm->net) {
        std::vector<NetCommGroup::Transfer> net;
        for (const PendingTransfer &t : transfers) net.push_back({t.peer, t.outgoing, t.data, t.bytes});
        return comm->net->transfer(net, error);
    }
    std::vector<ShmCommGroup::Transfer> shm;
    for (const PendingTransfer &t : transfers) {
        ShmCommGroup::Transfer s;
        s.peer = t.peer;
        s.outgoing = t.outgoing;
        s.data = t.data;
        s.bytes = t.bytes;
        shm.push_back(s);
    }
    return comm->shm->transfer(shm, error);
}

pagoda_status_t transfer(CpuBackend &cpu, const char *what, const PendingTransfer &t) {
    if (t_group.depth > 0) {
        t_group.transfers.push_back(t);
        return PAGODA_OK;
    }
    std::string error;
    return move_transfers(t.comm, {t}, error) ? PAGODA_OK : aborted(cpu, what, error);
}

pagoda_status_t send(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     const void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "send", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (auto s = check_peer(cpu, "send", comm, peer); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "send", comm); s != PAGODA_OK) return s;
    std::string error;
    const size_t bytes = count * formats::dtype_size(dtype);
    if (comm->shm || comm->net)
        return transfer(cpu, "send", {comm, peer, true, static_cast<unsigned char *>(const_cast<void *>(buf)), bytes});
    return comm->group->send(comm->rank, peer, buf, bytes, error) ? PAGODA_OK : aborted(cpu, "send", error);
}

pagoda_status_t recv(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "recv", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (auto s = check_peer(cpu, "recv", comm, peer); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "recv", comm); s != PAGODA_OK) return s;
    std::string error;
    const size_t bytes = count * formats::dtype_size(dtype);
    if (comm->shm || comm->net)
        return transfer(cpu, "recv", {comm, peer, false, static_cast<unsigned char *>(buf), bytes});
    return comm->group->recv(peer, comm->rank, buf, bytes, error) ? PAGODA_OK : aborted(cpu, "recv", error);
}

pagoda_status_t comm_get_async_error(void *self, pagoda_backend_comm_t *comm,
                                     pagoda_status_t *error) {
    if (comm == nullptr || error == nullptr)
        return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT,
                                     "comm_get_async_error: comm or error is NULL");
    // Collectives run synchronously here, so the only asynchronous failure is an abort.
    const bool aborted = comm->shm ? comm->shm->aborted() : comm->net ? comm->net->aborted() : comm->group->aborted();
    *error = aborted ? PAGODA_ERR_BACKEND : PAGODA_OK;
    return PAGODA_OK;
}

// Threads' sends never block (they copy into a mailbox), so their pairs of sends and receives
// cannot deadlock and need no deferred issue. Between processes a send outside a group blocks
// while its channel's ring is full (over the network: until its receive is posted); inside one
// it waits for group_end. Collectives inside a group run at once.
pagoda_status_t group_start(void *) {
    ++t_group.depth;
    return PAGODA_OK;
}

pagoda_status_t group_end(void *self) {
    CpuBackend &cpu = backend_of(self);
    if (t_group.depth == 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "group_end: no group is open on this thread");
    if (--t_group.depth > 0) return PAGODA_OK;
    auto pending = std::move(t_group.transfers);
    t_group.transfers.clear();
    // One communicator's transfers move together; several communicators' one after another.
    pagoda_status_t status = PAGODA_OK;
    while (!pending.empty()) {
        pagoda_backend_comm_t *comm = pending.front().comm;
        std::vector<PendingTransfer> mine;
        std::erase_if(pending, [&](const PendingTransfer &p) {
            if (p.comm != comm) return false;
            mine.push_back(p);
            return true;
        });
        std::string error;
        if (status == PAGODA_OK && !move_transfers(comm, mine, error)) status = aborted(cpu, "group_end", error);
    }
    return status;
}

}  // namespace

const pagoda_backend_collectives_t &cpu_collectives() {
    static const pagoda_backend_collectives_t table = {
        sizeof(pagoda_backend_collectives_t),
        get_unique_id, comm_create, comm_destroy, comm_abort, all_reduce, all_gather,
        reduce_scatter, broadcast, send, recv, group_start, group_end, comm_get_async_error,
        get_unique_id_ex, comm_create_ex,
    };
    return table;
}

}  // namespace pagoda::cpu
