// The collectives table over NCCL: one NCCL communicator per pagoda communicator, collectives
// queued on the caller's stream.
//
// Nothing here may hang on a rank that never arrives (STYLE.md rule 12). Communicators are
// therefore non-blocking (ncclConfig_t::blocking = 0): initialisation, and a collective's
// enqueue while NCCL still connects to its peers, return ncclInProgress at once, and we poll
// ncclCommGetAsyncError until the communicator settles, fails, or the backend's
// `nccl_timeout_ms` passes; on expiry the communicator is aborted (ncclCommAbort) and the call
// fails naming the rank and the timeout. Inside a group (group_start/group_end) NCCL defers
// the work to ncclGroupEnd, so the communicators a group touched are polled there instead.
//
// The default timeout, 10 minutes, is PyTorch's NCCL default for the same reason: ranks join
// when they are ready, and a rank still loading a large model's weights from network storage can
// trail the others by minutes; a hang is still turned into an error within one coffee break.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_iface.hpp"
#include "names.hpp"

static_assert(NCCL_UNIQUE_ID_BYTES == 128, "NCCL's unique id no longer fits the ABI's 128 bytes");
static_assert(sizeof(ncclUniqueId) == PAGODA_COMM_UNIQUE_ID_BYTES,
              "pagoda_comm_unique_id_t must carry an ncclUniqueId byte for byte");

// A communicator: the NCCL one and the device it lives on. After an abort the NCCL
// communicator is gone (ncclCommAbort frees it) and only this shell remains for comm_destroy.
struct pagoda_backend_comm {
    int32_t device = 0;
    int32_t rank = 0;
    int32_t n_ranks = 0;
    int64_t timeout_ms = 0;  // comm_create_ex's; 0 = the backend's nccl_timeout_ms
    ncclComm_t nccl = nullptr;
    // Every NCCL call on `nccl` is made under this lock, and `aborted` is set under it before
    // ncclCommAbort frees the communicator: comm_abort may come from a watchdog thread while
    // another thread polls, and must not free the communicator under that poll. The lock is
    // never held while sleeping, so an abort takes effect within one poll.
    std::mutex mutex;
    std::atomic<bool> aborted{false};
    // Initialisation finished; until then comm_destroy aborts rather than finalises.
    bool initialized = false;
};

namespace pagoda::cuda {

namespace {

using Clock = std::chrono::steady_clock;

// The communicators this thread touched inside the group it has open, to be polled when the
// outermost ncclGroupEnd issues them. NCCL's groups are per thread, and so is this.
struct OpenGroup {
    int depth = 0;
    std::vector<pagoda_backend_comm *> comms;
};
thread_local OpenGroup t_group;

std::string rank_text(const pagoda_backend_comm &c) {
    return "rank " + std::to_string(c.rank) + " of " + std::to_string(c.n_ranks);
}

// "ncclAllReduce on cuda:0 (rank 1 of 4): unhandled cuda error: <NCCL's last detail>".
pagoda_status_t fail_nccl(const CudaBackend &cuda, ncclResult_t r, const std::string &call,
                          const pagoda_backend_comm *comm, int32_t device) {
    std::string where = call + " on " + device_name(device);
    if (comm != nullptr) where += " (" + rank_text(*comm) + ")";
    std::string message = where + ": " + ncclGetErrorString(r);
    const char *detail = ncclGetLastError(nullptr);
    if (detail != nullptr && *detail != '\0') message += ": " + std::string(detail);
    (void)cudaGetLastError();  // NCCL may have left a CUDA error on this thread
    return cuda.fail(r == ncclInvalidArgument || r == ncclInvalidUsage ? PAGODA_ERR_INVALID_ARGUMENT
                                                                        : PAGODA_ERR_BACKEND,
                     message);
}

// Aborts `c` once, whoever asks first; later calls do nothing. Returns NCCL's result.
ncclResult_t abort_once(pagoda_backend_comm &c) {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.aborted.exchange(true)) return ncclSuccess;
    return ncclCommAbort(c.nccl);
}

int64_t timeout_of(const CudaBackend &cuda, const pagoda_backend_comm *c) {
    return c != nullptr && c->timeout_ms > 0 ? c->timeout_ms : cuda.options().nccl_timeout_ms;
}

Clock::time_point deadline_of(const CudaBackend &cuda, const pagoda_backend_comm *c = nullptr) {
    return Clock::now() + std::chrono::milliseconds(timeout_of(cuda, c));
}

enum class Settled { Done, Failed, TimedOut, Aborted };

// Polls `c` until it leaves ncclInProgress or `deadline` passes; `state` gets NCCL's verdict.
Settled poll_until(pagoda_backend_comm &c, Clock::time_point deadline, ncclResult_t &state) {
    for (int polls = 0;; ++polls) {
        {
            std::lock_guard<std::mutex> lock(c.mutex);
            if (c.aborted.load()) return Settled::Aborted;
            if (ncclResult_t r = ncclCommGetAsyncError(c.nccl, &state); r != ncclSuccess) {
                state = r;
                return Settled::Failed;
            }
        }
        if (state == ncclSuccess) return Settled::Done;
        if (state != ncclInProgress) return Settled::Failed;
        if (Clock::now() >= deadline) return Settled::TimedOut;
        // An enqueue usually settles within microseconds, a join within seconds: spin briefly
        // for the first, then sleep so that waiting for the second costs no core.
        if (polls < 256)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(polls < 4096 ? 50 : 1000));
    }
}

// Waits for `c` to settle after `call` returned ncclInProgress. On a timeout the communicator is
// aborted; the message names the rank and the timeout.
pagoda_status_t await(CudaBackend &cuda, const std::string &call, pagoda_backend_comm &c,
                      Clock::time_point deadline) {
    ncclResult_t state = ncclSuccess;
    switch (poll_until(c, deadline, state)) {
        case Settled::Done: return PAGODA_OK;
        case Settled::Failed: return fail_nccl(cuda, state, call, &c, c.device);
        case Settled::Aborted:
            return cuda.fail(PAGODA_ERR_BACKEND, call + " on " + device_name(c.device) + " (" +
                                                     rank_text(c) +
                                                     "): the communicator was aborted");
        case Settled::TimedOut: break;
    }
    const ncclResult_t r = abort_once(c);
    std::string message = call + " on " + device_name(c.device) + ": " + rank_text(c) +
                          " waited " + std::to_string(timeout_of(cuda, &c)) +
                          " ms for the other ranks without completing (has every rank made the "
                          "same call?); the communicator was aborted";
    if (r != ncclSuccess) message += std::string(" (ncclCommAbort: ") + ncclGetErrorString(r) + ")";
    return cuda.fail(PAGODA_ERR_BACKEND, message);
}

// Finishes a call that NCCL accepted with `r`: inside a group the communicator is polled at
// group_end; outside, ncclInProgress is waited out here.
pagoda_status_t settle(CudaBackend &cuda, const std::string &call, pagoda_backend_comm &c,
                       ncclResult_t r, Clock::time_point deadline) {
    if (r != ncclSuccess && r != ncclInProgress) return fail_nccl(cuda, r, call, &c, c.device);
    if (t_group.depth > 0) {
        t_group.comms.push_back(&c);
        return PAGODA_OK;
    }
    if (r == ncclSuccess) return PAGODA_OK;
    return await(cuda, call, c, deadline);
}

bool nccl_dtype(pagoda_dtype_t dtype, ncclDataType_t &out) {
    switch (dtype) {
        case PAGODA_DTYPE_F32: out = ncclFloat32; return true;
        case PAGODA_DTYPE_F16: out = ncclFloat16; return true;
        case PAGODA_DTYPE_BF16: out = ncclBfloat16; return true;
        case PAGODA_DTYPE_I32: out = ncclInt32; return true;
        case PAGODA_DTYPE_I64: out = ncclInt64; return true;
        case PAGODA_DTYPE_I8: out = ncclInt8; return true;
        case PAGODA_DTYPE_U8: out = ncclUint8; return true;
        default: break;  // INVALID and the block types, which are weights only
    }
    return false;
}

bool nccl_op(pagoda_reduce_op_t op, ncclRedOp_t &out) {
    switch (op) {
        case PAGODA_REDUCE_SUM: out = ncclSum; return true;
        case PAGODA_REDUCE_MAX: out = ncclMax; return true;
        case PAGODA_REDUCE_MIN: out = ncclMin; return true;
    }
    return false;
}

// What every collective checks first: a live, initialised communicator, a stream on the
// communicator's device (NCCL launches its kernels there), a type NCCL knows. Makes the device
// current.
pagoda_status_t prepare(CudaBackend &cuda, const char *what, pagoda_backend_comm *comm,
                        pagoda_backend_stream_t *stream, pagoda_dtype_t dtype,
                        ncclDataType_t &type) {
    if (comm == nullptr || stream == nullptr)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": comm or stream is NULL");
    if (comm->aborted.load())
        return cuda.fail(PAGODA_ERR_BACKEND, std::string(what) + ": the communicator (" +
                                                 rank_text(*comm) + ") was aborted");
    if (stream->device != comm->device)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         std::string(what) + ": the stream is on " + device_name(stream->device) +
                             " but the communicator on " + device_name(comm->device));
    if (!nccl_dtype(dtype, type))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED, std::string(what) + ": dtype " +
                                                     formats::dtype_name(dtype) +
                                                     " has no NCCL equivalent");
    return cuda.use_device(comm->device);
}

pagoda_status_t reduction(CudaBackend &cuda, const char *what, pagoda_reduce_op_t op,
                          ncclRedOp_t &out) {
    if (!nccl_op(op, out))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(what) + ": unknown reduction " + std::to_string(int(op)));
    return PAGODA_OK;
}

pagoda_status_t check_peer(CudaBackend &cuda, const char *what, const pagoda_backend_comm *comm,
                           int32_t peer) {
    if (peer < 0 || peer >= comm->n_ranks)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         std::string(what) + ": rank " + std::to_string(peer) +
                             " is not in the communicator of " + std::to_string(comm->n_ranks));
    return PAGODA_OK;
}

// Issues `call(nccl_comm)` under the communicator's lock and settles it (see settle()).
template <typename Call>
pagoda_status_t issue(CudaBackend &cuda, const char *nccl_name, pagoda_backend_comm &c,
                      Call &&call) {
    const Clock::time_point deadline = deadline_of(cuda, &c);
    ncclResult_t r;
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        if (c.aborted.load())
            return cuda.fail(PAGODA_ERR_BACKEND, std::string(nccl_name) + " on " +
                                                     device_name(c.device) + " (" + rank_text(c) +
                                                     "): the communicator was aborted");
        r = call(c.nccl);
    }
    return settle(cuda, nccl_name, c, r, deadline);
}

pagoda_status_t get_unique_id(void *self, pagoda_comm_unique_id_t *id) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (id == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "get_unique_id: id is NULL");
        ncclUniqueId nid;
        if (ncclResult_t r = ncclGetUniqueId(&nid); r != ncclSuccess) {
            int current = 0;
            (void)cudaGetDevice(&current);
            return fail_nccl(cuda, r, "ncclGetUniqueId", nullptr, current);
        }
        std::memcpy(id->bytes, &nid, sizeof nid);
        return PAGODA_OK;
    });
}

// comm_create, and comm_create_ex with `options` (NCCL's ids span any scope).
pagoda_status_t create(void *self, int32_t device, const pagoda_comm_unique_id_t *id, int32_t n_ranks,
                       int32_t rank, const pagoda_comm_options_t *options, pagoda_backend_comm_t **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (id == nullptr || out == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: id or out is NULL");
        if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "comm_create: rank " + std::to_string(rank) + " of " +
                                 std::to_string(n_ranks) + " ranks is out of range");
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        // NCCL binds the communicator to the current device.
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        if (options != nullptr && options->timeout_ms < 0)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: timeout_ms is negative");
        auto comm = std::make_unique<pagoda_backend_comm>();
        comm->timeout_ms = options != nullptr ? options->timeout_ms : 0;
        const Clock::time_point deadline = deadline_of(cuda, comm.get());
        comm->device = device;
        comm->rank = rank;
        comm->n_ranks = n_ranks;
        ncclUniqueId nid;
        std::memcpy(&nid, id->bytes, sizeof nid);
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        const ncclResult_t r = ncclCommInitRankConfig(&comm->nccl, n_ranks, nid, rank, &config);
        if (r != ncclSuccess && r != ncclInProgress) {
            // A communicator NCCL handed back despite the failure is released by aborting it.
            if (comm->nccl != nullptr) (void)abort_once(*comm);
            return fail_nccl(cuda, r, "ncclCommInitRankConfig", comm.get(), device);
        }
        if (t_group.depth > 0) {
            // Joined at group_end, which polls it, marks it initialised, or aborts it. The
            // caller owns it from here and releases it with comm_destroy either way.
            t_group.comms.push_back(comm.get());
            *out = comm.release();
            return PAGODA_OK;
        }
        if (r == ncclInProgress) {
            if (pagoda_status_t s = await(cuda, "ncclCommInitRankConfig", *comm, deadline);
                s != PAGODA_OK) {
                (void)abort_once(*comm);  // a failed join leaves nothing usable
                return s;
            }
        }
        comm->initialized = true;
        *out = comm.release();
        return PAGODA_OK;
    });
}

pagoda_status_t comm_create(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                            int32_t n_ranks, int32_t rank, pagoda_backend_comm_t **out) {
    return create(self, device, id, n_ranks, rank, nullptr, out);
}

pagoda_status_t comm_create_ex(void *self, int32_t device, const pagoda_comm_unique_id_t *id, int32_t n_ranks,
                               int32_t rank, const pagoda_comm_options_t *options, pagoda_backend_comm_t **out) {
    if (options == nullptr || options->struct_size < sizeof(pagoda_comm_options_t))
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create_ex: options are NULL or too short");
    return create(self, device, id, n_ranks, rank, options, out);
}

// An NCCL id carries the address of rank 0's bootstrap socket, so one kind serves every scope.
pagoda_status_t get_unique_id_ex(void *self, const pagoda_comm_options_t *options, pagoda_comm_unique_id_t *id) {
    int32_t scope = -1;  // read as an integer: a value outside the enum must not be loaded as one
    if (options != nullptr) std::memcpy(&scope, &options->scope, sizeof scope);
    if (options == nullptr || options->struct_size < sizeof(pagoda_comm_options_t) ||
        scope < PAGODA_COMM_SCOPE_PROCESS || scope > PAGODA_COMM_SCOPE_NETWORK)
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT,
                                  "get_unique_id_ex: options are NULL, too short or of an unknown scope");
    return get_unique_id(self, id);
}

void comm_destroy(void *self, pagoda_backend_comm_t *comm) {
    if (comm == nullptr) return;
    std::unique_ptr<pagoda_backend_comm> owned(comm);
    if (comm->aborted.load()) return;  // ncclCommAbort already freed the NCCL side
    CudaBackend &cuda = self_of(self);
    try {
        if (cuda.use_device(comm->device) != PAGODA_OK || !comm->initialized) {
            // Never joined (a group that did not end): nothing to flush, and finalising would
            // wait for the join.
            (void)abort_once(*comm);
            return;
        }
        // ncclCommFinalize flushes queued work and waits for the peers to quiesce, which on a
        // non-blocking communicator is polled like everything else; a rank that never gets
        // there costs the timeout and an abort, not a hang.
        const Clock::time_point deadline = deadline_of(cuda, comm);
        ncclResult_t r;
        {
            std::lock_guard<std::mutex> lock(comm->mutex);
            r = ncclCommFinalize(comm->nccl);
        }
        pagoda_status_t s = PAGODA_OK;
        if (r == ncclInProgress)
            s = await(cuda, "ncclCommFinalize", *comm, deadline);
        else if (r != ncclSuccess)
            s = fail_nccl(cuda, r, "ncclCommFinalize", comm, comm->device);
        if (s != PAGODA_OK) {
            cuda.log(PAGODA_LOG_ERROR, "comm_destroy on " + device_name(comm->device) + " (" +
                                           rank_text(*comm) +
                                           "): finalising failed; the communicator is aborted");
            (void)abort_once(*comm);
            return;
        }
        std::lock_guard<std::mutex> lock(comm->mutex);
        if (comm->aborted.load()) return;
        if (r = ncclCommDestroy(comm->nccl); r != ncclSuccess)
            cuda.log(PAGODA_LOG_ERROR, "ncclCommDestroy on " + device_name(comm->device) + ": " +
                                           ncclGetErrorString(r));
    } catch (...) {
        // Out of memory for a message: the communicator is still released below; log nothing.
        if (!comm->aborted.load()) (void)abort_once(*comm);
    }
}

pagoda_status_t comm_abort(void *self, pagoda_backend_comm_t *comm) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (comm == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_abort: comm is NULL");
        // Only the first abort reaches NCCL; the caller still calls comm_destroy afterwards.
        if (comm->aborted.load()) return PAGODA_OK;
        if (pagoda_status_t s = cuda.use_device(comm->device); s != PAGODA_OK) return s;
        if (ncclResult_t r = abort_once(*comm); r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclCommAbort", nullptr, comm->device);
        return PAGODA_OK;
    });
}

pagoda_status_t all_reduce(void *self, pagoda_backend_comm_t *comm,
                           pagoda_backend_stream_t *stream, const void *send, void *recv,
                           size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        ncclRedOp_t red;
        if (pagoda_status_t s = prepare(cuda, "all_reduce", comm, stream, dtype, type); s != PAGODA_OK)
            return s;
        if (pagoda_status_t s = reduction(cuda, "all_reduce", op, red); s != PAGODA_OK) return s;
        return issue(cuda, "ncclAllReduce", *comm, [&](ncclComm_t nc) {
            return ncclAllReduce(send, recv, count, type, red, nc, stream->stream);
        });
    });
}

pagoda_status_t all_gather(void *self, pagoda_backend_comm_t *comm,
                           pagoda_backend_stream_t *stream, const void *send, void *recv,
                           size_t count, pagoda_dtype_t dtype) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        if (pagoda_status_t s = prepare(cuda, "all_gather", comm, stream, dtype, type); s != PAGODA_OK)
            return s;
        return issue(cuda, "ncclAllGather", *comm, [&](ncclComm_t nc) {
            return ncclAllGather(send, recv, count, type, nc, stream->stream);
        });
    });
}

pagoda_status_t reduce_scatter(void *self, pagoda_backend_comm_t *comm,
                               pagoda_backend_stream_t *stream, const void *send, void *recv,
                               size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        ncclRedOp_t red;
        if (pagoda_status_t s = prepare(cuda, "reduce_scatter", comm, stream, dtype, type);
            s != PAGODA_OK)
            return s;
        if (pagoda_status_t s = reduction(cuda, "reduce_scatter", op, red); s != PAGODA_OK) return s;
        // NCCL's count is the per-rank result, as the ABI's is.
        return issue(cuda, "ncclReduceScatter", *comm, [&](ncclComm_t nc) {
            return ncclReduceScatter(send, recv, count, type, red, nc, stream->stream);
        });
    });
}

pagoda_status_t broadcast(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                          const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                          int32_t root) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        if (pagoda_status_t s = prepare(cuda, "broadcast", comm, stream, dtype, type); s != PAGODA_OK)
            return s;
        if (pagoda_status_t s = check_peer(cuda, "broadcast", comm, root); s != PAGODA_OK) return s;
        return issue(cuda, "ncclBroadcast", *comm, [&](ncclComm_t nc) {
            return ncclBroadcast(send, recv, count, type, root, nc, stream->stream);
        });
    });
}

pagoda_status_t send(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     const void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        if (pagoda_status_t s = prepare(cuda, "send", comm, stream, dtype, type); s != PAGODA_OK)
            return s;
        if (pagoda_status_t s = check_peer(cuda, "send", comm, peer); s != PAGODA_OK) return s;
        return issue(cuda, "ncclSend", *comm, [&](ncclComm_t nc) {
            return ncclSend(buf, count, type, peer, nc, stream->stream);
        });
    });
}

pagoda_status_t recv(void *self, pagoda_backend_comm_t *comm, pagoda_backend_stream_t *stream,
                     void *buf, size_t count, pagoda_dtype_t dtype, int32_t peer) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        ncclDataType_t type;
        if (pagoda_status_t s = prepare(cuda, "recv", comm, stream, dtype, type); s != PAGODA_OK)
            return s;
        if (pagoda_status_t s = check_peer(cuda, "recv", comm, peer); s != PAGODA_OK) return s;
        return issue(cuda, "ncclRecv", *comm, [&](ncclComm_t nc) {
            return ncclRecv(buf, count, type, peer, nc, stream->stream);
        });
    });
}

// ncclGroupStart / ncclGroupEnd have no communicator, so a failure names the current device.
pagoda_status_t fail_group_call(CudaBackend &cuda, ncclResult_t r, const char *name) {
    int current = 0;
    (void)cudaGetDevice(&current);
    return fail_nccl(cuda, r, name, nullptr, current);
}

pagoda_status_t group_start(void *self) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess)
            return fail_group_call(cuda, r, "ncclGroupStart");
        ++t_group.depth;
        return PAGODA_OK;
    });
}

pagoda_status_t group_end(void *self) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (t_group.depth == 0)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "group_end: no group is open on this "
                                                          "thread (group_start was not called)");
        const Clock::time_point deadline = deadline_of(cuda);
        const ncclResult_t r = ncclGroupEnd();
        if (--t_group.depth > 0) {
            // An inner group: NCCL issues nothing until the outermost one ends.
            return r == ncclSuccess ? PAGODA_OK : fail_group_call(cuda, r, "ncclGroupEnd");
        }
        std::vector<pagoda_backend_comm *> comms;
        comms.swap(t_group.comms);
        std::sort(comms.begin(), comms.end());
        comms.erase(std::unique(comms.begin(), comms.end()), comms.end());

        pagoda_status_t first = PAGODA_OK;
        if (r != ncclSuccess && r != ncclInProgress) first = fail_group_call(cuda, r, "ncclGroupEnd");
        for (pagoda_backend_comm *c : comms) {
            pagoda_status_t s = first;
            if (first == PAGODA_OK) {
                if (cuda.use_device(c->device) == PAGODA_OK)
                    s = await(cuda, "ncclGroupEnd", *c, deadline);
                else
                    s = PAGODA_ERR_BACKEND;  // use_device recorded the message
            }
            if (s == PAGODA_OK) {
                c->initialized = true;
            } else if (!c->initialized) {
                (void)abort_once(*c);  // a join that failed leaves nothing usable
            }
            if (first == PAGODA_OK) first = s;
        }
        return first;
    });
}

pagoda_status_t comm_get_async_error(void *self, pagoda_backend_comm_t *comm,
                                     pagoda_status_t *error) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (comm == nullptr || error == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "comm_get_async_error: comm or error is NULL");
        ncclResult_t async = ncclSuccess;
        {
            std::lock_guard<std::mutex> lock(comm->mutex);
            if (comm->aborted.load()) {
                *error = PAGODA_ERR_BACKEND;
                return PAGODA_OK;
            }
            if (ncclResult_t r = ncclCommGetAsyncError(comm->nccl, &async); r != ncclSuccess)
                return fail_nccl(cuda, r, "ncclCommGetAsyncError", comm, comm->device);
        }
        // ncclInProgress means a non-blocking call is still under way, not a failure.
        *error = (async == ncclSuccess || async == ncclInProgress) ? PAGODA_OK : PAGODA_ERR_BACKEND;
        return PAGODA_OK;
    });
}

}  // namespace

const pagoda_backend_collectives_t kCollectives = {
    sizeof(pagoda_backend_collectives_t),
    get_unique_id,
    comm_create,
    comm_destroy,
    comm_abort,
    all_reduce,
    all_gather,
    reduce_scatter,
    broadcast,
    send,
    recv,
    group_start,
    group_end,
    comm_get_async_error,
    get_unique_id_ex,
    comm_create_ex,
};

}  // namespace pagoda::cuda
