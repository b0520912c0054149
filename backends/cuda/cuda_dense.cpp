// The dense ops' glue: the descriptor has passed the shared checks (op_checks.hpp), so what is
// left is what only a launch can see (NULL pointers, worded as the CPU backend words them),
// resolving the "0 means ..." defaults, and the launch. Ids and frequency factors in device
// memory are checked by the kernels themselves, through the error record every stream gets at
// creation (device_error.hpp).
#include <string>

#include "check_helpers.hpp"
#include "cuda_kernels.hpp"
#include "elementwise_kernel.hpp"
#include "block_formats.hpp"
#include "embedding_kernel.hpp"
#include "gemv_kernel.hpp"
#include "names.hpp"
#include "rmsnorm_kernel.hpp"
#include "rope_kernel.hpp"
#include "rowwise_kernel.hpp"

namespace pagoda::cuda {

namespace {

using plugin::act_dtype_of;
using plugin::check_pointer;
using plugin::packed_or;

pagoda_status_t launched(CudaBackend &cuda, const pagoda_backend_stream_t &stream,
                         const char *op, cudaError_t e) {
    if (e == cudaSuccess) return PAGODA_OK;
    return cuda.fail_cuda(e, std::string(op) + ": kernel launch", stream.device);
}

}  // namespace

pagoda_status_t run_embedding(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                              const pagoda_op_embedding_t &a) {
    constexpr const char *kOp = "embedding";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "table", a.table));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "ids", a.ids));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    // The block decoders' loads need their blocks aligned (the GEMV's rule).
    if (formats::is_block_dtype(a.table_dtype) && !gemv_takes(a.table_dtype, a.table))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": a " + formats::dtype_name(a.table_dtype) +
                             " table at a misaligned address (" + kBlockAlignmentRule + ")");
    const float scale = a.scale == 0.0f ? 1.0f : a.scale;  // ops.h: 0 means 1
    return launched(cuda, stream, kOp,
                    launch_embedding(a.table, a.table_dtype, a.vocab_size, a.dim, a.ids,
                                     a.n_tokens, a.out, act_dtype_of(a.out_dtype),
                                     packed_or(a.ldo, a.dim), scale, stream.error,
                                     stream.stream));
}

pagoda_status_t run_rmsnorm(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_rmsnorm_t &a) {
    constexpr const char *kOp = "rmsnorm";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "weight", a.weight));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    RmsNormRows rows{};
    rows.rows = a.rows;
    rows.dim = a.dim;
    rows.eps = a.eps;
    rows.act_dtype = act_dtype_of(a.act_dtype);
    rows.x = a.x;
    rows.ldx = packed_or(a.ldx, a.dim);
    rows.residual = static_cast<float *>(a.residual);
    rows.ld_residual = packed_or(a.ld_residual, a.dim);
    rows.weight = a.weight;
    rows.weight_dtype = a.weight_dtype;
    rows.out = a.out;
    rows.ldo = packed_or(a.ldo, a.dim);
    return launched(cuda, stream, kOp, launch_rmsnorm(rows, stream.error, stream.stream));
}

pagoda_status_t run_rope(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                         const pagoda_op_rope_t &a) {
    constexpr const char *kOp = "rope";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "positions", a.positions));
    return launched(cuda, stream, kOp, launch_rope(a, stream.error, stream.stream));
}

pagoda_status_t run_silu_mul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                             const pagoda_op_silu_mul_t &a) {
    constexpr const char *kOp = "silu_mul";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "gate", a.gate));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "up", a.up));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    return launched(cuda, stream, kOp,
                    launch_silu_mul(act_dtype_of(a.act_dtype), a.activation, a.gate, a.up,
                                    packed_or(a.ld_in, a.dim), a.out, packed_or(a.ldo, a.dim),
                                    a.rows, a.dim, stream.error, stream.stream));
}

pagoda_status_t run_add(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                        const pagoda_op_add_t &a) {
    constexpr const char *kOp = "add";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "a", a.a));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "b", a.b));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    return launched(cuda, stream, kOp,
                    launch_add(act_dtype_of(a.act_dtype), a.a, a.b, a.out, a.n, stream.error,
                               stream.stream));
}

pagoda_status_t run_softcap(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_softcap_t &a) {
    constexpr const char *kOp = "softcap";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    return launched(cuda, stream, kOp,
                    launch_softcap(act_dtype_of(a.dtype), a.x, a.n, a.cap, stream.error,
                                   stream.stream));
}

pagoda_status_t run_argmax(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_argmax_t &a) {
    constexpr const char *kOp = "argmax";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    return launched(cuda, stream, kOp,
                    launch_argmax(act_dtype_of(a.act_dtype), a.x, packed_or(a.ldx, a.cols),
                                  a.rows, a.cols, a.out, stream.error, stream.stream));
}

pagoda_status_t run_softmax(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_softmax_t &a) {
    constexpr const char *kOp = "softmax";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "out", a.out));
    // ops.h: a scale of 0 is taken as 1.
    const float scale = a.scale == 0.0f ? 1.0f : a.scale;
    return launched(cuda, stream, kOp,
                    launch_softmax(act_dtype_of(a.act_dtype), a.x, packed_or(a.ldx, a.cols),
                                   a.out, packed_or(a.ldo, a.cols), a.rows, a.cols, scale,
                                   stream.error, stream.stream));
}

}  // namespace pagoda::cuda
