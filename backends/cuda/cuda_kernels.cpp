// The CUDA backend's kernel table: maps an op id to its argument struct and kernel pair.
#include <string>

#include "cuda_iface.hpp"
#include "cuda_kernels.hpp"
#include "names.hpp"
#include "op_args.hpp"

namespace pagoda::cuda {

namespace {

// Checks (and with a stream, runs) any op.
pagoda_status_t dispatch(CudaBackend &cuda, pagoda_backend_stream_t *stream, pagoda_op_t op,
                         const void *args) {
    switch (op) {
        case PAGODA_OP_MATMUL: {
            // Every field ABI 1.0 defined is needed; later versions only append.
            auto a = plugin::read_op_args<pagoda_op_matmul_t>(args, sizeof(pagoda_op_matmul_t));
            if (!a)
                return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                                 "matmul: the argument struct is NULL or its struct_size is too small");
            if (pagoda_status_t s = check_matmul(cuda, *a); s != PAGODA_OK || stream == nullptr)
                return s;
            return run_matmul(cuda, *stream, *a);
        }
        case PAGODA_OP_EMBEDDING:
        case PAGODA_OP_RMSNORM:
        case PAGODA_OP_ROPE:
        case PAGODA_OP_SILU_MUL:
        case PAGODA_OP_ADD:
        case PAGODA_OP_ARGMAX:
        case PAGODA_OP_SOFTMAX:
        case PAGODA_OP_KV_WRITE:
        case PAGODA_OP_PAGED_ATTENTION:
        case PAGODA_OP_COPY_BLOCKS:
        case PAGODA_OP_SWAP_BLOCKS:
            return cuda.fail(PAGODA_ERR_UNSUPPORTED, std::string("op ") + plugin::op_name(op) +
                                                         ": not yet implemented in the CUDA backend");
        case PAGODA_OP_INVALID: break;
    }
    return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                     "op " + std::to_string(int(op)) + " is unknown to the CUDA backend");
}

pagoda_status_t supports(void *self, int32_t device, pagoda_op_t op, const void *args) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        return dispatch(cuda, nullptr, op, args);
    });
}

pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                       const void *args) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "launch: stream is NULL");
        return dispatch(cuda, stream, op, args);
    });
}

}  // namespace

const pagoda_backend_kernels_t kKernels = {sizeof(pagoda_backend_kernels_t), supports, launch};

}  // namespace pagoda::cuda
