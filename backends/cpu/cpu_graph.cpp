// Recording a CPU stream's work and replaying it (cpu_graph.hpp). A launch is checked when it is
// recorded (the descriptor's types and shapes, as `supports` checks them) and checked again in
// full each time the graph replays it, because the device memory it reads (token ids, slots,
// block tables) only holds its values then.
#include "cpu_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "kernels.hpp"
#include "names.hpp"

namespace pagoda::cpu {

namespace {

// Host memory aligned for the descriptors' int64 and pointer fields.
using DescriptorBytes = std::vector<uint64_t>;

// A descriptor's own copy of `bytes` bytes from `src`.
DescriptorBytes copy_descriptor(const void *src, size_t bytes) {
    DescriptorBytes out((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
    std::memcpy(out.data(), src, bytes);
    return out;
}

// The bytes a caller's struct declares in its leading struct_size (at least the field itself).
size_t declared_size(const void *args) {
    uint32_t declared = 0;
    std::memcpy(&declared, args, sizeof declared);
    return declared < sizeof declared ? sizeof declared : declared;
}

struct RecordedWork {
    enum class Kind { Launch, Memset, Copy } kind = Kind::Launch;
    // Launch: the op and its descriptor, with any nested host struct copied too and the
    // descriptor's pointer to it re-pointed at the copy. A vector's buffer survives moves, so
    // the re-pointed address stays valid as the work list grows.
    pagoda_op_t op = PAGODA_OP_INVALID;
    DescriptorBytes args;
    DescriptorBytes nested;
    // Memset and copy.
    void *dst = nullptr;
    const void *src = nullptr;
    size_t size = 0;
    int value = 0;
};

}  // namespace

struct CpuGraph {
    const CpuStream *stream = nullptr;  // the stream recorded on, the only one it may run on
    std::thread::id recording_thread;
    std::string spoilt;  // why the recording cannot become a graph; empty while it can
    std::vector<RecordedWork> work;
};

void CpuGraphDeleter::operator()(CpuGraph *graph) const noexcept { delete graph; }

}  // namespace pagoda::cpu

// The ABI's opaque graph type is the recording, handed over whole by graph_capture_end.
struct pagoda_backend_graph : pagoda::cpu::CpuGraph {};

namespace pagoda::cpu {

namespace {

// Marks the recording spoilt by `why` (the first reason is kept) and fails with `status`.
pagoda_status_t spoil(CpuBackend &cpu, CpuGraph &recording, pagoda_status_t status,
                      const std::string &why) {
    if (recording.spoilt.empty()) recording.spoilt = why;
    return cpu.fail(status, why + " (the stream is recording a graph, which this spoils)");
}

// Work may only be recorded from the thread that began the recording (the ABI's rule, which
// CUDA's thread-local capture mode enforces too).
pagoda_status_t check_thread(CpuBackend &cpu, CpuGraph &recording, const char *call) {
    if (std::this_thread::get_id() == recording.recording_thread) return PAGODA_OK;
    return spoil(cpu, recording, PAGODA_ERR_INVALID_ARGUMENT,
                 std::string(call) + " from another thread than the one recording the stream");
}

// Runs `body` so that nothing thrown while recording (bad_alloc copying a descriptor) crosses
// the C ABI; a throw spoils the recording.
template <typename Body>
pagoda_status_t guarded_record(CpuBackend &cpu, CpuGraph &recording, Body &&body) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return spoil(cpu, recording, PAGODA_ERR_OUT_OF_MEMORY, "out of memory while recording");
    } catch (const std::exception &e) {
        return spoil(cpu, recording, PAGODA_ERR_INTERNAL,
                     std::string("internal error while recording: ") + e.what());
    }
}

// Runs one recorded launch, reporting a failure with its place in the graph.
pagoda_status_t replay_launch(CpuBackend &cpu, const RecordedWork &w, size_t index) {
    pagoda_status_t s;
    try {
        s = dispatch_op(cpu, w.op, w.args.data(), true);
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "out of memory while running an op");
    } catch (const std::exception &e) {
        return cpu.fail(PAGODA_ERR_INTERNAL, std::string("internal error: ") + e.what());
    }
    if (s == PAGODA_OK) return s;
    const std::string reason = CpuBackend::last_failure();
    return cpu.fail(s, "graph_launch: work " + std::to_string(index) + " (" +
                           formats::op_name(w.op) + ") failed: " + reason);
}

}  // namespace

pagoda_status_t record_launch(CpuBackend &cpu, CpuStream &stream, pagoda_op_t op,
                              const void *args) {
    CpuGraph &rec = *stream.recording;
    if (pagoda_status_t s = check_thread(cpu, rec, "launch"); s != PAGODA_OK) return s;
    // SWAP_BLOCKS names host memory, and both block copies read their pair lists from host
    // arrays the descriptor only points to: neither fits "device memory read when it runs".
    if (op == PAGODA_OP_SWAP_BLOCKS || op == PAGODA_OP_COPY_BLOCKS)
        return spoil(cpu, rec, PAGODA_ERR_UNSUPPORTED,
                     std::string(formats::op_name(op)) +
                         " cannot be recorded into a graph (its block pairs are host arrays): "
                         "run it before or after the capture");
    return guarded_record(cpu, rec, [&] {
        // The checks `supports` makes (types, shapes, flags, struct_size); indices in device memory
        // are checked when the graph runs.
        pagoda_status_t s = dispatch_op(cpu, op, args, false);
        if (s != PAGODA_OK) {
            const std::string reason = CpuBackend::last_failure();
            return spoil(cpu, rec, s,
                         "launch " + std::to_string(rec.work.size()) + " (" + formats::op_name(op) +
                             ") was refused: " + reason);
        }
        RecordedWork w;
        w.kind = RecordedWork::Kind::Launch;
        w.op = op;
        w.args = copy_descriptor(args, declared_size(args));
        if (op == PAGODA_OP_KV_WRITE &&
            declared_size(args) >= offsetof(pagoda_op_kv_write_t, k_rope) + sizeof(void *)) {
            // The fused RoPE's descriptor is host memory read during the launch: keep a copy.
            auto *kv = reinterpret_cast<pagoda_op_kv_write_t *>(w.args.data());
            if (kv->k_rope != nullptr) {
                w.nested = copy_descriptor(kv->k_rope, declared_size(kv->k_rope));
                kv->k_rope = reinterpret_cast<const pagoda_op_rope_t *>(w.nested.data());
            }
        }
        rec.work.push_back(std::move(w));
        return PAGODA_OK;
    });
}

pagoda_status_t record_memset(CpuBackend &cpu, CpuStream &stream, void *dst, int value,
                              size_t size) {
    CpuGraph &rec = *stream.recording;
    if (pagoda_status_t s = check_thread(cpu, rec, "memset"); s != PAGODA_OK) return s;
    if (size == 0) return PAGODA_OK;
    if (dst == nullptr) return spoil(cpu, rec, PAGODA_ERR_INVALID_ARGUMENT, "memset: dst is NULL");
    RecordedWork w;
    w.kind = RecordedWork::Kind::Memset;
    w.dst = dst;
    w.value = value;
    w.size = size;
    return guarded_record(cpu, rec, [&] {
        rec.work.push_back(std::move(w));
        return PAGODA_OK;
    });
}

pagoda_status_t record_copy(CpuBackend &cpu, CpuStream &stream, void *dst, const void *src,
                            size_t size, pagoda_copy_kind_t kind) {
    CpuGraph &rec = *stream.recording;
    if (pagoda_status_t s = check_thread(cpu, rec, "copy"); s != PAGODA_OK) return s;
    if (kind != PAGODA_COPY_DEVICE_TO_DEVICE)
        return spoil(cpu, rec, PAGODA_ERR_INVALID_ARGUMENT,
                     "copy: only device-to-device copies can be recorded into a graph (this one "
                     "is of kind " + std::to_string(int(kind)) +
                         "): copy host memory before or after the capture");
    if (size == 0) return PAGODA_OK;
    if (dst == nullptr || src == nullptr)
        return spoil(cpu, rec, PAGODA_ERR_INVALID_ARGUMENT, "copy: dst or src is NULL");
    RecordedWork w;
    w.kind = RecordedWork::Kind::Copy;
    w.dst = dst;
    w.src = src;
    w.size = size;
    return guarded_record(cpu, rec, [&] {
        rec.work.push_back(std::move(w));
        return PAGODA_OK;
    });
}

pagoda_status_t refuse_while_recording(CpuBackend &cpu, CpuStream &stream, const char *call) {
    if (!stream.recording) return PAGODA_OK;
    return spoil(cpu, *stream.recording, PAGODA_ERR_INVALID_ARGUMENT,
                 std::string(call) + " is not allowed while the stream records a graph");
}

pagoda_status_t graph_capture_begin(void *self, pagoda_backend_stream_t *stream) {
    CpuBackend &cpu = backend_from_self(self);
    if (stream == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "graph_capture_begin: stream is NULL");
    if (stream->recording)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "graph_capture_begin: the stream is already recording a graph");
    auto *recording = new (std::nothrow) CpuGraph{};
    if (recording == nullptr)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "graph_capture_begin: out of memory");
    recording->stream = stream;
    recording->recording_thread = std::this_thread::get_id();
    stream->recording.reset(recording);
    return PAGODA_OK;
}

pagoda_status_t graph_capture_end(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_graph_t **out) {
    CpuBackend &cpu = backend_from_self(self);
    if (out != nullptr) *out = nullptr;
    if (stream == nullptr || out == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "graph_capture_end: stream or out is NULL");
    if (!stream->recording)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "graph_capture_end: the stream is not recording a graph");
    // The stream runs work again from here on, whatever the recording's fate.
    std::unique_ptr<CpuGraph, CpuGraphDeleter> recording = std::move(stream->recording);
    if (!recording->spoilt.empty())
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "graph_capture_end: the recording was spoilt: " + recording->spoilt);
    auto *graph = new (std::nothrow) pagoda_backend_graph{};
    if (graph == nullptr) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "graph_capture_end: out of memory");
    static_cast<CpuGraph &>(*graph) = std::move(*recording);
    *out = graph;
    return PAGODA_OK;
}

pagoda_status_t graph_launch(void *self, pagoda_backend_graph_t *graph,
                             pagoda_backend_stream_t *stream) {
    CpuBackend &cpu = backend_from_self(self);
    if (graph == nullptr || stream == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "graph_launch: graph or stream is NULL");
    if (graph->stream != stream)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "graph_launch: the graph was recorded on another stream");
    if (pagoda_status_t s = refuse_while_recording(cpu, *stream, "graph_launch"); s != PAGODA_OK)
        return s;
    DeviceScope scope(cpu, stream->device);
    for (size_t i = 0; i < graph->work.size(); ++i) {
        const RecordedWork &w = graph->work[i];
        switch (w.kind) {
            case RecordedWork::Kind::Launch:
                if (pagoda_status_t s = replay_launch(cpu, w, i); s != PAGODA_OK) return s;
                break;
            case RecordedWork::Kind::Memset: std::memset(w.dst, w.value, w.size); break;
            case RecordedWork::Kind::Copy: std::memmove(w.dst, w.src, w.size); break;
        }
    }
    return PAGODA_OK;
}

void graph_destroy(void *, pagoda_backend_graph_t *graph) { delete graph; }

}  // namespace pagoda::cpu
