// The CUDA backend's kernel table: maps an op id to its argument struct, the shared descriptor
// check (op_checks.hpp) and the CUDA run function (cuda_kernels.hpp).
#include <string>

#include "cuda_iface.hpp"
#include "cuda_kernels.hpp"
#include "names.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"

namespace pagoda::cuda {

namespace {

template <typename T>
using CheckFn = pagoda_status_t (*)(CudaBackend &, const T &);
template <typename T>
using RunFn = pagoda_status_t (*)(CudaBackend &, pagoda_backend_stream_t &, const T &);

// Reads `args` as T (op_args.hpp), checks it, and with a stream runs it.
template <typename T>
pagoda_status_t dispatch(CudaBackend &cuda, pagoda_backend_stream_t *stream, pagoda_op_t op,
                         const void *args, CheckFn<T> check, RunFn<T> run) {
    T a;
    if (pagoda_status_t s = plugin::read_op_args(cuda, formats::op_name(op), args, a);
        s != PAGODA_OK)
        return s;
    if (pagoda_status_t s = check(cuda, a); s != PAGODA_OK || stream == nullptr) return s;
    if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
    return run(cuda, *stream, a);
}

// The shared checks take a Reporter; these adapt them to CheckFn.
template <typename T, pagoda_status_t (*Shared)(const plugin::Reporter &, const T &)>
pagoda_status_t shared_check(CudaBackend &cuda, const T &a) {
    return Shared(cuda, a);
}

pagoda_status_t check_matmul(CudaBackend &cuda, const pagoda_op_matmul_t &a) {
    if (pagoda_status_t s = plugin::check_matmul_variants(cuda, a, matmul_variants());
        s != PAGODA_OK)
        return s;
    return check_matmul_limits(cuda, a);
}

pagoda_status_t check_moe_matmul(CudaBackend &cuda, const pagoda_op_moe_matmul_t &a) {
    if (pagoda_status_t s = plugin::check_moe_matmul(cuda, a); s != PAGODA_OK) return s;
    return check_moe_matmul_limits(cuda, a);
}

// Cache parallelism (ABI 1.2): the kernels attend over a whole sequence and keep no
// log-normaliser, so a sharded launch or one asking for lse is refused, by supports() too.
constexpr const char *kNoCacheParallelism =
    "cache parallelism (kv_shards, lse) is not implemented on the CUDA backend yet";

pagoda_status_t check_paged_attention(CudaBackend &cuda, const pagoda_op_paged_attention_t &a) {
    if (pagoda_status_t s = plugin::check_paged_attention(cuda, a); s != PAGODA_OK) return s;
    if (a.kv_shards > 1 || a.lse != nullptr)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string("paged_attention: ") + kNoCacheParallelism);
    return check_paged_attention_limits(cuda, a);
}

// Checks (and with a stream, runs) any op.
pagoda_status_t dispatch_op(CudaBackend &cuda, pagoda_backend_stream_t *stream, pagoda_op_t op,
                            const void *args) {
    using namespace plugin;
    switch (op) {
        case PAGODA_OP_MATMUL:
            return dispatch<pagoda_op_matmul_t>(cuda, stream, op, args, check_matmul, run_matmul);
        case PAGODA_OP_EMBEDDING:
            return dispatch<pagoda_op_embedding_t>(
                cuda, stream, op, args, shared_check<pagoda_op_embedding_t, check_embedding>,
                run_embedding);
        case PAGODA_OP_RMSNORM:
            return dispatch<pagoda_op_rmsnorm_t>(
                cuda, stream, op, args, shared_check<pagoda_op_rmsnorm_t, check_rmsnorm>,
                run_rmsnorm);
        case PAGODA_OP_ROPE:
            return dispatch<pagoda_op_rope_t>(cuda, stream, op, args,
                                              shared_check<pagoda_op_rope_t, check_rope>, run_rope);
        case PAGODA_OP_SILU_MUL:
            return dispatch<pagoda_op_silu_mul_t>(
                cuda, stream, op, args, shared_check<pagoda_op_silu_mul_t, check_silu_mul>,
                run_silu_mul);
        case PAGODA_OP_ADD:
            return dispatch<pagoda_op_add_t>(cuda, stream, op, args,
                                             shared_check<pagoda_op_add_t, check_add>, run_add);
        case PAGODA_OP_ARGMAX:
            return dispatch<pagoda_op_argmax_t>(
                cuda, stream, op, args, shared_check<pagoda_op_argmax_t, check_argmax>, run_argmax);
        case PAGODA_OP_SOFTMAX:
            return dispatch<pagoda_op_softmax_t>(
                cuda, stream, op, args, shared_check<pagoda_op_softmax_t, check_softmax>,
                run_softmax);
        case PAGODA_OP_KV_WRITE:
            return dispatch<pagoda_op_kv_write_t>(
                cuda, stream, op, args, shared_check<pagoda_op_kv_write_t, check_kv_write>,
                run_kv_write);
        case PAGODA_OP_PAGED_ATTENTION:
            return dispatch<pagoda_op_paged_attention_t>(
                cuda, stream, op, args,
                check_paged_attention, run_paged_attention);
        case PAGODA_OP_COPY_BLOCKS:
            return dispatch<pagoda_op_copy_blocks_t>(
                cuda, stream, op, args, shared_check<pagoda_op_copy_blocks_t, check_copy_blocks>,
                run_copy_blocks);
        case PAGODA_OP_SWAP_BLOCKS:
            return dispatch<pagoda_op_copy_blocks_t>(
                cuda, stream, op, args, shared_check<pagoda_op_copy_blocks_t, check_swap_blocks>,
                run_swap_blocks);
        case PAGODA_OP_SAMPLE:
            return dispatch<pagoda_op_sample_t>(
                cuda, stream, op, args, shared_check<pagoda_op_sample_t, check_sample>, run_sample);
        case PAGODA_OP_ATTENTION_MERGE:
            return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                             std::string("attention_merge: ") + kNoCacheParallelism);
        case PAGODA_OP_SOFTCAP:
            return dispatch<pagoda_op_softcap_t>(
                cuda, stream, op, args, shared_check<pagoda_op_softcap_t, check_softcap>,
                run_softcap);
        case PAGODA_OP_MOE_ROUTE:
            return dispatch<pagoda_op_moe_route_t>(
                cuda, stream, op, args, shared_check<pagoda_op_moe_route_t, check_moe_route>,
                run_moe_route);
        case PAGODA_OP_MOE_MATMUL:
            return dispatch<pagoda_op_moe_matmul_t>(cuda, stream, op, args, check_moe_matmul,
                                                    run_moe_matmul);
        case PAGODA_OP_INVALID: break;
    }
    return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                     "op " + std::to_string(int(op)) + " is unknown to the CUDA backend");
}

pagoda_status_t supports(void *self, int32_t device, pagoda_op_t op, const void *args) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (pagoda_status_t s = cuda.check_device(device); s != PAGODA_OK) return s;
        return dispatch_op(cuda, nullptr, op, args);
    });
}

pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                       const void *args) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr) return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "launch: stream is NULL");
        return dispatch_op(cuda, stream, op, args);
    });
}

}  // namespace

const char *variant_name(void *self, int32_t device, pagoda_op_t op, int32_t variant) {
    if (self_of(self).check_device(device) != PAGODA_OK || op != PAGODA_OP_MATMUL) return nullptr;
    return matmul_variant_name(variant);
}

const pagoda_backend_kernels_t kKernels = {sizeof(pagoda_backend_kernels_t), supports, launch,
                                           variant_name};

}  // namespace pagoda::cuda
