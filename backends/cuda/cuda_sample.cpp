// PAGODA_OP_SAMPLE's glue: the descriptor has passed the shared checks (op_checks.hpp), the
// pointers are checked here, and the per-row values live in device memory, so the kernel checks
// them (sample_kernel.cu) and reports through the stream's DeviceError. The kernel needs no
// scratch memory, so a launch can be recorded in a graph and replayed with new parameters.
#include <string>

#include "check_helpers.hpp"
#include "cuda_kernels.hpp"
#include "sample_kernel.hpp"
#include "sample_rules.hpp"

namespace pagoda::cuda {

pagoda_status_t run_sample(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_sample_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_sample_pointers(cuda, a));
    SampleRows rows{};
    rows.rows = a.rows;
    rows.cols = a.cols;
    rows.logits = a.logits;
    rows.logits_dtype = plugin::act_dtype_of(a.logits_dtype);
    rows.ldx = plugin::packed_or(a.ldx, a.cols);
    rows.temperature = a.temperature;
    rows.top_k = a.top_k;
    rows.top_p = a.top_p;
    rows.min_p = a.min_p;
    rows.uniform = a.uniform;
    rows.out = a.out;
    rows.logprobs = a.logprobs;
    const cudaError_t e = launch_sample(rows, stream.error, stream.stream);
    if (e == cudaSuccess) return PAGODA_OK;
    return cuda.fail_cuda(e, "sample: kernel launch", stream.device);
}

}  // namespace pagoda::cuda
