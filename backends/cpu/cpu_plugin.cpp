// The CPU backend's entry point and interface table: one device ("cpu:0") whose memory is host
// memory, synchronous streams, and the kernels of kernels.hpp.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "collectives.hpp"
#include "cpu_backend.hpp"
#include "cpu_graph.hpp"
#include "kernels.hpp"
#include "plugin_config.hpp"

namespace pagoda::cpu {

namespace {

constexpr size_t kBufferAlignment = 256;  // the ABI's promise for buffer_alloc
// Buffers this large (weights, KV pools) are aligned to and advised as transparent huge pages:
// fewer TLB misses measured about 8 % faster paged-attention decode.
constexpr size_t kHugePage = size_t(2) << 20;

// The plugin state and its table live together so destroy frees both; `self` points here.
struct Instance {
    CpuBackend backend;
    pagoda_backend_iface_t iface{};
    Instance(const pagoda_backend_host_t &host, int threads, bool portable_only)
        : backend(host, threads, portable_only) {}
};

CpuBackend &self_of(void *self) { return static_cast<Instance *>(self)->backend; }

// Reads one "Key: value" entry of a /proc file such as /proc/meminfo; empty if absent.
std::string proc_field(const char *file, const std::string &key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) == 0) {
            size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            size_t start = line.find_first_not_of(" \t", colon + 1);
            return start == std::string::npos ? std::string() : line.substr(start);
        }
    }
    return {};
}

uint64_t meminfo_bytes(const char *key) {
    std::string v = proc_field("/proc/meminfo", key);
    return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10) * 1024ull;  // "N kB"
}

pagoda_status_t check_device(CpuBackend &cpu, int32_t device) {
    if (device != 0)
        return cpu.fail(PAGODA_ERR_NOT_FOUND,
                        "device " + std::to_string(device) + " does not exist (only cpu:0)");
    return PAGODA_OK;
}

pagoda_status_t device_count(void *, int32_t *count) {
    *count = 1;
    return PAGODA_OK;
}

pagoda_status_t device_info(void *self, int32_t device, pagoda_device_info_t *info) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = check_device(cpu, device); s != PAGODA_OK) return s;
    if (info == nullptr || info->struct_size < sizeof(pagoda_device_info_t))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "device_info: info is NULL or too small");
    pagoda_device_info_t out{};
    out.struct_size = sizeof out;
    out.kind = PAGODA_DEVICE_CPU;
    out.flags = PAGODA_DEVICE_HOST_ACCESSIBLE | PAGODA_DEVICE_USES_HOST_WEIGHTS;
    out.compute_units = cpu.threads();
    out.total_memory = meminfo_bytes("MemTotal");
    out.free_memory = meminfo_bytes("MemAvailable");
    std::string model = proc_field("/proc/cpuinfo", "model name");
    std::snprintf(out.name, sizeof out.name, "%s", model.empty() ? "CPU" : model.c_str());
#if defined(__x86_64__)
    std::snprintf(out.arch, sizeof out.arch, "%s",
                  cpu.features().avx2_fma_f16c ? "x86_64-avx2" : "x86_64");
#elif defined(__aarch64__)
    std::snprintf(out.arch, sizeof out.arch, "aarch64");
#else
    std::snprintf(out.arch, sizeof out.arch, "generic");
#endif
    *info = out;
    return PAGODA_OK;
}

pagoda_status_t buffer_alloc(void *self, int32_t device, size_t size, void **out) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = check_device(cpu, device); s != PAGODA_OK) return s;
    // aligned_alloc wants a multiple of the alignment; a zero-byte buffer still gets an address.
    const size_t align = size >= kHugePage ? kHugePage : kBufferAlignment;
    if (size > SIZE_MAX - align)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "allocating " + std::to_string(size) +
                                                      " bytes on cpu:0: too large");
    size_t rounded = (size + align - 1) / align * align;
    void *p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (p == nullptr)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "allocating " + std::to_string(size) + " bytes on cpu:0 failed");
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice only; failure is harmless
    *out = p;
    return PAGODA_OK;
}

void buffer_free(void *, int32_t, void *ptr) { std::free(ptr); }

pagoda_status_t host_buffer_alloc(void *self, size_t size, void **out) {
    return buffer_alloc(self, 0, size, out);
}

void host_buffer_free(void *, void *ptr) { std::free(ptr); }

pagoda_status_t stream_create(void *self, int32_t device, pagoda_backend_stream_t **out) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = check_device(cpu, device); s != PAGODA_OK) return s;
    auto *stream = new (std::nothrow) pagoda_backend_stream{};
    if (stream == nullptr) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "stream_create: out of memory");
    stream->device = device;
    *out = stream;
    return PAGODA_OK;
}

void stream_destroy(void *, pagoda_backend_stream_t *stream) { delete stream; }

pagoda_status_t stream_synchronize(void *self, pagoda_backend_stream_t *stream) {
    if (stream == nullptr)
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
    return refuse_while_recording(self_of(self), *stream, "stream_synchronize");
}

pagoda_status_t event_create(void *self, int32_t device, uint32_t flags,
                             pagoda_backend_event_t **out) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = check_device(cpu, device); s != PAGODA_OK) return s;
    if ((flags & ~PAGODA_EVENT_TIMING) != 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "event_create: flags " + std::to_string(flags) + " has unknown bits");
    auto *event = new (std::nothrow) pagoda_backend_event{};
    if (event == nullptr) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "event_create: out of memory");
    event->device = device;
    event->timing = (flags & PAGODA_EVENT_TIMING) != 0;
    *out = event;
    return PAGODA_OK;
}

void event_destroy(void *, pagoda_backend_event_t *event) { delete event; }

// Work is complete when launched, so waiting and synchronising have nothing to do, and an
// event's moment is the moment it is recorded.
pagoda_status_t event_record(void *self, pagoda_backend_event_t *event,
                             pagoda_backend_stream_t *stream) {
    if (event == nullptr || stream == nullptr)
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "event_record: event or stream is NULL");
    if (pagoda_status_t s = refuse_while_recording(self_of(self), *stream, "event_record");
        s != PAGODA_OK)
        return s;
    event->recorded = true;
    if (event->timing)
        event->recorded_at =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return PAGODA_OK;
}
pagoda_status_t stream_wait_event(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_event_t *) {
    if (stream == nullptr) return PAGODA_OK;
    return refuse_while_recording(self_of(self), *stream, "stream_wait_event");
}
pagoda_status_t event_synchronize(void *, pagoda_backend_event_t *) { return PAGODA_OK; }

pagoda_status_t stream_query(void *self, pagoda_backend_stream_t *stream, uint32_t *complete) {
    if (stream == nullptr || complete == nullptr)
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "stream_query: stream or complete is NULL");
    if (pagoda_status_t s = refuse_while_recording(self_of(self), *stream, "stream_query");
        s != PAGODA_OK)
        return s;
    *complete = 1;
    return PAGODA_OK;
}

pagoda_status_t event_query(void *self, pagoda_backend_event_t *event, uint32_t *complete) {
    if (event == nullptr || complete == nullptr)
        return self_of(self).fail(PAGODA_ERR_INVALID_ARGUMENT, "event_query: event or complete is NULL");
    *complete = 1;
    return PAGODA_OK;
}

pagoda_status_t event_elapsed(void *self, pagoda_backend_event_t *start,
                              pagoda_backend_event_t *end, float *milliseconds) {
    CpuBackend &cpu = self_of(self);
    if (start == nullptr || end == nullptr || milliseconds == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "event_elapsed: an argument is NULL");
    if (!start->timing || !end->timing)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "event_elapsed: both events need PAGODA_EVENT_TIMING");
    if (!start->recorded || !end->recorded)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "event_elapsed: both events must have been recorded");
    *milliseconds = float((end->recorded_at - start->recorded_at) * 1e3);
    return PAGODA_OK;
}

pagoda_status_t copy(void *self, pagoda_backend_stream_t *stream, void *dst, const void *src,
                     size_t size, pagoda_copy_kind_t kind) {
    CpuBackend &cpu = self_of(self);
    if (stream == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "copy: stream is NULL");
    if (stream->recording) return record_copy(cpu, *stream, dst, src, size, kind);
    if (size == 0) return PAGODA_OK;
    if (dst == nullptr || src == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "copy: dst or src is NULL");
    if (kind < PAGODA_COPY_HOST_TO_DEVICE || kind > PAGODA_COPY_HOST_TO_HOST)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "copy: unknown copy kind " + std::to_string(int(kind)));
    std::memmove(dst, src, size);
    return PAGODA_OK;
}

pagoda_status_t memset_(void *self, pagoda_backend_stream_t *stream, void *dst, int value,
                        size_t size) {
    CpuBackend &cpu = self_of(self);
    if (stream == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "memset: stream is NULL");
    if (stream->recording) return record_memset(cpu, *stream, dst, value, size);
    if (size == 0) return PAGODA_OK;
    if (dst == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "memset: dst is NULL");
    std::memset(dst, value, size);
    return PAGODA_OK;
}

// Runs a kernel's check (and with `launch`, the kernel) so that nothing thrown inside, such as
// bad_alloc while building a message or sizing scratch, crosses the C ABI.
pagoda_status_t guarded_dispatch(CpuBackend &cpu, pagoda_op_t op, const void *args, bool launch) {
    try {
        return dispatch_op(cpu, op, args, launch);
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "out of memory while running an op");
    } catch (const std::exception &e) {
        return cpu.fail(PAGODA_ERR_INTERNAL, std::string("internal error: ") + e.what());
    }
}

pagoda_status_t supports(void *self, int32_t device, pagoda_op_t op, const void *args) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = check_device(cpu, device); s != PAGODA_OK) return s;
    return guarded_dispatch(cpu, op, args, false);
}

pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                       const void *args) {
    CpuBackend &cpu = self_of(self);
    if (stream == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "launch: stream is NULL");
    if (stream->recording) return record_launch(cpu, *stream, op, args);
    return guarded_dispatch(cpu, op, args, true);
}

const pagoda_backend_kernels_t kKernels = {sizeof(pagoda_backend_kernels_t), supports, launch};

void destroy(void *self) { delete static_cast<Instance *>(self); }

// Config keys: "threads=N" (else PAGODA_NUM_THREADS, else every core) and "isa=native|portable".
bool parse_threads(const std::string &text, int &out) {
    char *end = nullptr;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 1 || v > 1024) return false;
    out = int(v);
    return true;
}

void report(const pagoda_backend_host_t *host, const std::string &message) {
    if (host != nullptr && host->set_error != nullptr)
        host->set_error(host->ctx, ("cpu backend: " + message).c_str());
}

}  // namespace

CpuBackend &backend_from_self(void *self) { return self_of(self); }

}  // namespace pagoda::cpu

extern "C" __attribute__((visibility("default"))) pagoda_status_t pagoda_backend_entry(
    const pagoda_backend_host_t *host, const char *config, const pagoda_backend_iface_t **out) {
    using namespace pagoda::cpu;
    if (host == nullptr || out == nullptr) return PAGODA_ERR_INVALID_ARGUMENT;
    if (host->struct_size < sizeof(pagoda_backend_host_t) ||
        PAGODA_BACKEND_ABI_MAJOR(host->abi_version) !=
            PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)) {
        report(host, "host speaks plugin ABI " + std::to_string(PAGODA_BACKEND_ABI_MAJOR(host->abi_version)) +
                         ", this plugin speaks " +
                         std::to_string(PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION)));
        return PAGODA_ERR_ABI_MISMATCH;
    }
    try {
        std::string error;
        auto pairs = pagoda::plugin::parse_config(config, error);
        if (!pairs) {
            report(host, error);
            return PAGODA_ERR_INVALID_ARGUMENT;
        }
        int threads = int(std::thread::hardware_concurrency());
        if (threads < 1) threads = 1;
        if (const char *env = std::getenv("PAGODA_NUM_THREADS"); env != nullptr && *env) {
            if (!parse_threads(env, threads)) {
                report(host, std::string("PAGODA_NUM_THREADS='") + env + "' is not a count in 1..1024");
                return PAGODA_ERR_INVALID_ARGUMENT;
            }
        }
        bool portable_only = false;
        for (const auto &[key, value] : *pairs) {
            if (key == "threads") {
                if (!parse_threads(value, threads)) {
                    report(host, "config threads='" + value + "' is not a count in 1..1024");
                    return PAGODA_ERR_INVALID_ARGUMENT;
                }
            } else if (key == "isa") {
                if (value != "native" && value != "portable") {
                    report(host, "config isa='" + value + "' is not one of native, portable");
                    return PAGODA_ERR_INVALID_ARGUMENT;
                }
                portable_only = value == "portable";
            } else {
                report(host, "unknown config key '" + key + "' (known: threads, isa)");
                return PAGODA_ERR_INVALID_ARGUMENT;
            }
        }
        auto instance = std::make_unique<Instance>(*host, threads, portable_only);
        pagoda_backend_iface_t &t = instance->iface;
        t.struct_size = sizeof t;
        t.abi_version = PAGODA_BACKEND_ABI_VERSION;
        t.name = "cpu";
        t.description =
            "CPU backend: AVX2/FMA kernels, OpenBLAS for large matrix products, in-process collectives";
        t.self = instance.get();
        t.destroy = destroy;
        t.device_count = device_count;
        t.device_info = device_info;
        t.buffer_alloc = buffer_alloc;
        t.buffer_free = buffer_free;
        t.host_buffer_alloc = host_buffer_alloc;
        t.host_buffer_free = host_buffer_free;
        t.stream_create = stream_create;
        t.stream_destroy = stream_destroy;
        t.stream_synchronize = stream_synchronize;
        t.event_create = event_create;
        t.event_destroy = event_destroy;
        t.event_record = event_record;
        t.stream_wait_event = stream_wait_event;
        t.event_synchronize = event_synchronize;
        t.copy = copy;
        t.memset = memset_;
        t.kernels = &kKernels;
        t.collectives = &cpu_collectives();  // ranks as threads of this process; MPI comes later
        t.stream_query = stream_query;
        t.event_query = event_query;
        t.event_elapsed = event_elapsed;
        t.graph_capture_begin = graph_capture_begin;
        t.graph_capture_end = graph_capture_end;
        t.graph_launch = graph_launch;
        t.graph_destroy = graph_destroy;
        *out = &instance.release()->iface;
        return PAGODA_OK;
    } catch (const std::bad_alloc &) {
        report(host, "out of memory while starting");
        return PAGODA_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        report(host, std::string("failed to start: ") + e.what());
        return PAGODA_ERR_BACKEND;
    }
}
