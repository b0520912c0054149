// CUDA graphs: a stream's work recorded by stream capture, instantiated once, and launched as one
// unit (cudaGraphLaunch), which turns a decode step's hundreds of kernel launches into one.
//
// While a stream captures, the calls that cannot be recorded (host copies, synchronisation,
// events, growing the stream's scratch) refuse with a message and mark the recording spoilt;
// a launch that fails its checks does too. graph_capture_end always ends the capture (CUDA keeps
// a stream capturing until then, even once the capture is invalidated), destroys whatever partial
// graph it yields, clears the thread's non-sticky error and reports the first reason.
#include <memory>
#include <string>
#include <utility>

#include "cuda_backend.hpp"
#include "cuda_iface.hpp"
#include "cuda_kernels.hpp"
#include "names.hpp"

// The ABI's opaque graph type in this backend: an instantiated graph and where it may run.
struct pagoda_backend_graph {
    int32_t device = 0;
    const pagoda_backend_stream_t *stream = nullptr;  // the stream it was recorded on
    cudaGraphExec_t exec = nullptr;
};

namespace pagoda::cuda {

namespace {

struct GraphLaunch {
    CudaBackend *cuda;
    cudaGraphExec_t exec;
    pagoda_backend_stream_t *stream;
};

pagoda_status_t launch_graph(void *context) {
    auto *l = static_cast<GraphLaunch *>(context);
    if (cudaError_t e = cudaGraphLaunch(l->exec, l->stream->stream); e != cudaSuccess)
        return l->cuda->fail_cuda(e, "graph_launch: cudaGraphLaunch", l->stream->device);
    return PAGODA_OK;
}

pagoda_status_t supports(void *self, int32_t device, pagoda_op_t op, const void *args) {
    return kKernels.supports(self, device, op, args);
}

// cuda_kernels.cpp's launch, noting a refusal during a capture as what spoils the recording:
// the failure happened before anything reached CUDA, which still considers the capture fine.
pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                       const void *args) {
    const pagoda_status_t s = kKernels.launch(self, stream, op, args);
    if (s != PAGODA_OK && stream != nullptr && stream->capturing &&
        stream->capture_spoilt.empty()) {
        try {
            stream->capture_spoilt = std::string("the ") + formats::op_name(op) +
                                     " launch was refused: " + CudaBackend::last_failure();
        } catch (...) {
            // Out of memory for the text: the capture still fails, with a shorter reason.
        }
    }
    return s;
}

}  // namespace

const pagoda_backend_kernels_t kGraphAwareKernels = {sizeof(pagoda_backend_kernels_t), supports,
                                                     launch, variant_name};

pagoda_status_t refuse_during_capture(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                      const std::string &what) {
    if (stream.capture_spoilt.empty()) stream.capture_spoilt = what;
    return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                     what + " (the stream is recording a graph, which this spoils)");
}

pagoda_status_t graph_capture_begin(void *self, pagoda_backend_stream_t *stream) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "graph_capture_begin: stream is NULL");
        if (stream->capturing)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "graph_capture_begin: the stream on " + device_name(stream->device) +
                                 " is already recording a graph");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        // Thread-local: only this thread's unsafe calls (an allocation, a synchronisation)
        // break the capture; other threads working on other streams are left alone.
        if (cudaError_t e = cudaStreamBeginCapture(stream->stream, cudaStreamCaptureModeThreadLocal);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "graph_capture_begin: cudaStreamBeginCapture", stream->device);
        stream->capturing = true;
        stream->capture_spoilt.clear();
        return PAGODA_OK;
    });
}

pagoda_status_t graph_capture_end(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_graph_t **out) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (out != nullptr) *out = nullptr;
        if (stream == nullptr || out == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "graph_capture_end: stream or out is NULL");
        if (!stream->capturing)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "graph_capture_end: the stream on " + device_name(stream->device) +
                                 " is not recording a graph");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        // Ends the capture whatever happened to it, so the stream runs work again.
        cudaGraph_t graph = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream->stream, &graph);
        stream->capturing = false;
        const std::string spoilt = std::move(stream->capture_spoilt);
        stream->capture_spoilt.clear();
        if (ended != cudaSuccess || !spoilt.empty()) {
            if (graph != nullptr) (void)cudaGraphDestroy(graph);  // a partial recording
            (void)cudaGetLastError();  // the capture's error is reported here, not later
            const std::string reason =
                !spoilt.empty() ? spoilt
                                : std::string("cudaStreamEndCapture: ") + cudaGetErrorName(ended) +
                                      ": " + cudaGetErrorString(ended);
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "graph_capture_end on " + device_name(stream->device) +
                                 ": the recording was spoilt: " + reason);
        }
        cudaGraphExec_t exec = nullptr;
        const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
        (void)cudaGraphDestroy(graph);  // the executable graph is independent of it
        if (made != cudaSuccess)
            return cuda.fail_cuda(made, "graph_capture_end: cudaGraphInstantiate", stream->device);
        auto recorded = std::make_unique<pagoda_backend_graph>();
        recorded->device = stream->device;
        recorded->stream = stream;
        recorded->exec = exec;
        stream->graphs_recorded = true;
        *out = recorded.release();
        return PAGODA_OK;
    });
}

pagoda_status_t graph_launch(void *self, pagoda_backend_graph_t *graph,
                             pagoda_backend_stream_t *stream) {
    CudaBackend &cuda = self_of(self);
    return guarded(cuda, [&] {
        if (graph == nullptr || stream == nullptr)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, "graph_launch: graph or stream is NULL");
        if (graph->stream != stream)
            return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                             "graph_launch: the graph was recorded on another stream");
        if (stream->capturing) return refuse_during_capture(cuda, *stream, "graph_launch");
        if (pagoda_status_t s = cuda.use_device(stream->device); s != PAGODA_OK) return s;
        GraphLaunch args{&cuda, graph->exec, stream};
        return order_with_matmul_scratch(cuda, *stream, launch_graph, &args);
    });
}

void graph_destroy(void *self, pagoda_backend_graph_t *graph) {
    if (graph == nullptr) return;
    CudaBackend &cuda = self_of(self);
    // Work already launched from it completes: CUDA defers the release until then.
    if (cuda.use_device(graph->device) == PAGODA_OK) (void)cudaGraphExecDestroy(graph->exec);
    (void)cudaGetLastError();
    delete graph;
}

}  // namespace pagoda::cuda
