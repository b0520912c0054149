#include "collectives.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>

#include "comm_group.hpp"
#include "cpu_backend.hpp"
#include "dtypes.hpp"
#include "half.hpp"
#include "names.hpp"

namespace pagoda::cpu {

// Joining gives up after this long: a rank that never comes must not hang the others forever.
constexpr int64_t kJoinTimeoutMs = 60'000;

}  // namespace pagoda::cpu

struct pagoda_backend_comm {
    std::shared_ptr<pagoda::cpu::CommGroup> group;
    int32_t rank = 0;
    int32_t device = 0;  // the device whose streams this rank's collectives run on
};

namespace pagoda::cpu {

namespace {

CpuBackend &backend_of(void *self) { return backend_from_self(self); }

bool reducible(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_F32 || t == PAGODA_DTYPE_F16 || t == PAGODA_DTYPE_BF16 ||
           t == PAGODA_DTYPE_I32 || t == PAGODA_DTYPE_I64;
}

template <typename T>
T combine(T a, T b, pagoda_reduce_op_t op) {
    switch (op) {
        case PAGODA_REDUCE_MAX: return a > b ? a : b;
        case PAGODA_REDUCE_MIN: return a < b ? a : b;
        default: return a + b;
    }
}

// Element i reduced over every rank's `send + offset`: computed in f32 for the 16-bit floats.
template <typename T>
void reduce_range(const std::vector<CommGroup::Buffers> &all, size_t offset, size_t begin,
                  size_t end, pagoda_reduce_op_t op, void *dst) {
    for (size_t i = begin; i < end; ++i) {
        T acc = static_cast<const T *>(all[0].send)[offset + i];
        for (size_t r = 1; r < all.size(); ++r)
            acc = combine(acc, static_cast<const T *>(all[r].send)[offset + i], op);
        static_cast<T *>(dst)[i] = acc;
    }
}

void reduce_half_range(const std::vector<CommGroup::Buffers> &all, pagoda_dtype_t t,
                       size_t offset, size_t begin, size_t end, pagoda_reduce_op_t op, void *dst) {
    for (size_t i = begin; i < end; ++i) {
        float acc = load_weight(all[0].send, t, int64_t(offset + i));
        for (size_t r = 1; r < all.size(); ++r)
            acc = combine(acc, load_weight(all[r].send, t, int64_t(offset + i)), op);
        store_value(dst, t, int64_t(i), acc);
    }
}

// dst[begin, end) = reduction of every rank's send[offset + begin, offset + end).
void reduce_into(const std::vector<CommGroup::Buffers> &all, pagoda_dtype_t t, size_t offset,
                 size_t begin, size_t end, pagoda_reduce_op_t op, void *dst) {
    switch (t) {
        case PAGODA_DTYPE_F32: reduce_range<float>(all, offset, begin, end, op, dst); break;
        case PAGODA_DTYPE_I32: reduce_range<int32_t>(all, offset, begin, end, op, dst); break;
        case PAGODA_DTYPE_I64: reduce_range<int64_t>(all, offset, begin, end, op, dst); break;
        default: reduce_half_range(all, t, offset, begin, end, op, dst); break;
    }
}

pagoda_status_t check_common(CpuBackend &cpu, const char *what, pagoda_backend_comm_t *comm,
                             pagoda_backend_stream_t *stream, pagoda_dtype_t dtype, bool reduce,
                             pagoda_reduce_op_t op = PAGODA_REDUCE_SUM) {
    if (comm == nullptr || stream == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": comm or stream is NULL");
    if (plugin::dtype_size(dtype) == 0 || (reduce && !reducible(dtype)))
        return cpu.fail(PAGODA_ERR_UNSUPPORTED, std::string(what) + ": dtype " +
                                                    plugin::dtype_name(dtype) + " is not supported");
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

pagoda_status_t comm_create(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                            int32_t n_ranks, int32_t rank, pagoda_backend_comm_t **out) {
    CpuBackend &cpu = backend_of(self);
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
    if (id == nullptr || out == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: id or out is NULL");
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "comm_create: rank " + std::to_string(rank) + " of " +
                            std::to_string(n_ranks) + " is out of range");
    std::string error;
    std::shared_ptr<CommGroup> group = comm_group_for(*id, n_ranks, error);
    if (!group) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: " + error);
    bool joined = group->join(rank, kJoinTimeoutMs, error);
    comm_group_joined(*id);
    if (!joined) return cpu.fail(PAGODA_ERR_BACKEND, "comm_create: " + error);
    auto *comm = new (std::nothrow) pagoda_backend_comm{group, rank, device};
    if (comm == nullptr) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "comm_create: out of memory");
    *out = comm;
    return PAGODA_OK;
}

void comm_destroy(void *, pagoda_backend_comm_t *comm) { delete comm; }

pagoda_status_t comm_abort(void *self, pagoda_backend_comm_t *comm) {
    if (comm == nullptr) return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_abort: comm is NULL");
    comm->group->abort();
    return PAGODA_OK;
}

pagoda_status_t all_reduce(void *self, pagoda_backend_comm_t *comm,
                           pagoda_backend_stream_t *stream, const void *send, void *recv,
                           size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "all_reduce", comm, stream, dtype, true, op); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "all_reduce", comm); s != PAGODA_OK) return s;
    std::string error;
    const size_t n = size_t(comm->group->n_ranks()), rank = size_t(comm->rank);
    const size_t elem = plugin::dtype_size(dtype);
    // Rank r reduces slice r and writes it to every rank's output; slices are disjoint, so this
    // is safe in place too (each element is read in full before it is written).
    const size_t begin = count * rank / n, end = count * (rank + 1) / n;
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        if (end == begin) return;
        reduce_into(all, dtype, begin, 0, end - begin, op,
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
    const size_t bytes = count * plugin::dtype_size(dtype), rank = size_t(comm->rank);
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
    const size_t rank = size_t(comm->rank);
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        reduce_into(all, dtype, rank * count, 0, count, op, all[rank].recv);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "reduce_scatter", error);
}

pagoda_status_t broadcast(void *self, pagoda_backend_comm_t *comm,
                          pagoda_backend_stream_t *stream, const void *send, void *recv,
                          size_t count, pagoda_dtype_t dtype, int32_t root) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "broadcast", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (root < 0 || root >= comm->group->n_ranks())
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "broadcast: root " + std::to_string(root) +
                                                         " is not a rank");
    if (auto s = count_call(cpu, "broadcast", comm); s != PAGODA_OK) return s;
    std::string error;
    const size_t bytes = count * plugin::dtype_size(dtype);
    bool ok = comm->group->collective(comm->rank, {send, recv}, [&](const auto &all) {
        if (all[size_t(comm->rank)].recv != all[size_t(root)].send)
            std::memmove(all[size_t(comm->rank)].recv, all[size_t(root)].send, bytes);
    }, error);
    return ok ? PAGODA_OK : aborted(cpu, "broadcast", error);
}

pagoda_status_t check_peer(CpuBackend &cpu, const char *what, pagoda_backend_comm_t *comm,
                           int32_t peer) {
    if (peer < 0 || peer >= comm->group->n_ranks() || peer == comm->rank)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(what) + ": peer " + std::to_string(peer) + " is not another rank");
    return PAGODA_OK;
}

pagoda_status_t send(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     const void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "send", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (auto s = check_peer(cpu, "send", comm, peer); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "send", comm); s != PAGODA_OK) return s;
    std::string error;
    if (!comm->group->send(comm->rank, peer, buf, count * plugin::dtype_size(dtype), error))
        return aborted(cpu, "send", error);
    return PAGODA_OK;
}

pagoda_status_t recv(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CpuBackend &cpu = backend_of(self);
    if (auto s = check_common(cpu, "recv", comm, stream, dtype, false); s != PAGODA_OK) return s;
    if (auto s = check_peer(cpu, "recv", comm, peer); s != PAGODA_OK) return s;
    if (auto s = count_call(cpu, "recv", comm); s != PAGODA_OK) return s;
    std::string error;
    if (!comm->group->recv(peer, comm->rank, buf, count * plugin::dtype_size(dtype), error))
        return aborted(cpu, "recv", error);
    return PAGODA_OK;
}

pagoda_status_t comm_get_async_error(void *self, pagoda_backend_comm_t *comm,
                                     pagoda_status_t *error) {
    if (comm == nullptr || error == nullptr)
        return backend_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT,
                                     "comm_get_async_error: comm or error is NULL");
    // Collectives run synchronously here, so the only asynchronous failure is an abort.
    *error = comm->group->aborted() ? PAGODA_ERR_BACKEND : PAGODA_OK;
    return PAGODA_OK;
}

// Sends never block (they copy into a mailbox), so pairs of sends and receives cannot deadlock
// and a group needs no deferred issue.
pagoda_status_t group_start(void *) { return PAGODA_OK; }
pagoda_status_t group_end(void *) { return PAGODA_OK; }

}  // namespace

const pagoda_backend_collectives_t &cpu_collectives() {
    static const pagoda_backend_collectives_t table = {
        sizeof(pagoda_backend_collectives_t),
        get_unique_id, comm_create, comm_destroy, comm_abort, all_reduce, all_gather,
        reduce_scatter, broadcast, send, recv, group_start, group_end, comm_get_async_error,
    };
    return table;
}

}  // namespace pagoda::cpu
