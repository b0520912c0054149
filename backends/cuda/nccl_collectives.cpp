// The collectives table over NCCL: one NCCL communicator per pagoda communicator, collectives
// queued on the caller's stream.
#include <nccl.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>

#include "cuda_backend.hpp"
#include "cuda_iface.hpp"
#include "names.hpp"

static_assert(NCCL_UNIQUE_ID_BYTES == 128, "NCCL's unique id no longer fits the ABI's 128 bytes");
static_assert(sizeof(ncclUniqueId) == PAGODA_COMM_UNIQUE_ID_BYTES,
              "pagoda_comm_unique_id_t must carry an ncclUniqueId byte for byte");

// A communicator: the NCCL one and the device it lives on. After comm_abort the NCCL
// communicator is gone (ncclCommAbort frees it) and only this shell remains for comm_destroy.
struct pagoda_backend_comm {
    int32_t device = 0;
    int32_t rank = 0;
    int32_t n_ranks = 0;
    ncclComm_t nccl = nullptr;
    std::atomic<bool> aborted{false};
};

namespace pagoda::cuda {

namespace {

// "ncclAllReduce on cuda:0 (rank 1 of 4): unhandled cuda error: <NCCL's last detail>".
pagoda_status_t fail_nccl(const CudaBackend &cuda, ncclResult_t r, const std::string &call,
                          const pagoda_backend_comm *comm, int32_t device) {
    std::string where = call + " on " + device_name(device);
    if (comm != nullptr)
        where += " (rank " + std::to_string(comm->rank) + " of " + std::to_string(comm->n_ranks) + ")";
    std::string message = where + ": " + ncclGetErrorString(r);
    const char *detail = ncclGetLastError(comm != nullptr ? comm->nccl : nullptr);
    if (detail != nullptr && *detail != '\0') message += ": " + std::string(detail);
    (void)cudaGetLastError();  // NCCL may have left a CUDA error on this thread
    return cuda.fail(r == ncclInvalidArgument || r == ncclInvalidUsage ? PAGODA_ERR_INVALID_ARGUMENT
                                                                        : PAGODA_ERR_BACKEND,
                     message);
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
        case PAGODA_DTYPE_INVALID: break;
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

// What every collective checks first: a live communicator, a stream on the communicator's
// device (NCCL launches its kernels there), a type and optionally a reduction it knows.
// Makes the device current.
pagoda_status_t prepare(CudaBackend &cuda, const char *what, pagoda_backend_comm *comm,
                        pagoda_backend_stream_t *stream, pagoda_dtype_t dtype,
                        ncclDataType_t &type) {
    if (comm == nullptr || stream == nullptr)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": comm or stream is NULL");
    if (comm->aborted.load())
        return cuda.fail(PAGODA_ERR_BACKEND, std::string(what) + ": the communicator was aborted");
    if (stream->device != comm->device)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         std::string(what) + ": the stream is on " + device_name(stream->device) +
                             " but the communicator on " + device_name(comm->device));
    if (!nccl_dtype(dtype, type))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED, std::string(what) + ": dtype " +
                                                     plugin::dtype_name(dtype) +
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

pagoda_status_t comm_create(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                            int32_t n_ranks, int32_t rank, pagoda_backend_comm_t **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (id == nullptr || out == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_create: id or out is NULL");
        if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "comm_create: rank " + std::to_string(rank) + " of " +
                                 std::to_string(n_ranks) + " ranks is out of range");
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        // ncclCommInitRank binds the communicator to the current device.
        if (pagoda_status_t s = cuda.use_device(device); s != PAGODA_OK) return s;
        auto comm = std::make_unique<pagoda_backend_comm>();
        comm->device = device;
        comm->rank = rank;
        comm->n_ranks = n_ranks;
        ncclUniqueId nid;
        std::memcpy(&nid, id->bytes, sizeof nid);
        if (ncclResult_t r = ncclCommInitRank(&comm->nccl, n_ranks, nid, rank); r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclCommInitRank", comm.get(), device);
        *out = comm.release();
        return PAGODA_OK;
    });
}

void comm_destroy(void *self, pagoda_backend_comm_t *comm) {
    if (comm == nullptr) return;
    std::unique_ptr<pagoda_backend_comm> owned(comm);
    if (comm->aborted.load()) return;  // ncclCommAbort already freed the NCCL side
    CudaBackend &cuda = self_of(self);
    if (cuda.use_device(comm->device) != PAGODA_OK) return;
    // ncclCommDestroy finalises first (flushing queued work), then frees.
    if (ncclResult_t r = ncclCommDestroy(comm->nccl); r != ncclSuccess)
        cuda.log(PAGODA_LOG_ERROR, "ncclCommDestroy on " + device_name(comm->device) + ": " +
                                       ncclGetErrorString(r));
}

pagoda_status_t comm_abort(void *self, pagoda_backend_comm_t *comm) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (comm == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "comm_abort: comm is NULL");
        // Only the first abort reaches NCCL; the caller still calls comm_destroy afterwards.
        if (comm->aborted.exchange(true)) return PAGODA_OK;
        if (pagoda_status_t s = cuda.use_device(comm->device); s != PAGODA_OK) return s;
        if (ncclResult_t r = ncclCommAbort(comm->nccl); r != ncclSuccess)
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
        if (ncclResult_t r = ncclAllReduce(send, recv, count, type, red, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclAllReduce", comm, comm->device);
        return PAGODA_OK;
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
        if (ncclResult_t r = ncclAllGather(send, recv, count, type, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclAllGather", comm, comm->device);
        return PAGODA_OK;
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
        if (ncclResult_t r =
                ncclReduceScatter(send, recv, count, type, red, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclReduceScatter", comm, comm->device);
        return PAGODA_OK;
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
        if (ncclResult_t r =
                ncclBroadcast(send, recv, count, type, root, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclBroadcast", comm, comm->device);
        return PAGODA_OK;
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
        if (ncclResult_t r = ncclSend(buf, count, type, peer, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclSend", comm, comm->device);
        return PAGODA_OK;
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
        if (ncclResult_t r = ncclRecv(buf, count, type, peer, comm->nccl, stream->stream);
            r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclRecv", comm, comm->device);
        return PAGODA_OK;
    });
}

// ncclGroupStart / ncclGroupEnd: no communicator, so a failure names the current device.
pagoda_status_t group_call(void *self, ncclResult_t (*call)(), const char *name) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (ncclResult_t r = call(); r != ncclSuccess) {
            int current = 0;
            (void)cudaGetDevice(&current);
            return fail_nccl(cuda, r, name, nullptr, current);
        }
        return PAGODA_OK;
    });
}

pagoda_status_t group_start(void *self) { return group_call(self, ncclGroupStart, "ncclGroupStart"); }
pagoda_status_t group_end(void *self) { return group_call(self, ncclGroupEnd, "ncclGroupEnd"); }

pagoda_status_t comm_get_async_error(void *self, pagoda_backend_comm_t *comm,
                                     pagoda_status_t *error) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (comm == nullptr || error == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "comm_get_async_error: comm or error is NULL");
        if (comm->aborted.load()) {
            *error = PAGODA_ERR_BACKEND;
            return PAGODA_OK;
        }
        ncclResult_t async = ncclSuccess;
        if (ncclResult_t r = ncclCommGetAsyncError(comm->nccl, &async); r != ncclSuccess)
            return fail_nccl(cuda, r, "ncclCommGetAsyncError", comm, comm->device);
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
};

}  // namespace pagoda::cuda
