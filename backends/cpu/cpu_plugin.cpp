// The CPU backend's entry point and interface table: devices "cpu:0".."cpu:N-1" (config
// "devices") whose memory is host memory under a per-device budget, synchronous streams, and the
// kernels of kernels.hpp, run on the pool of the stream's device.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "collectives.hpp"
#include "cpu_backend.hpp"
#include "cpu_graph.hpp"
#include "kernels.hpp"
#include "proc_info.hpp"

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
    Instance(const pagoda_backend_host_t &host, const CpuConfig &config) : backend(host, config) {}
};

CpuBackend &self_of(void *self) { return static_cast<Instance *>(self)->backend; }

pagoda_status_t device_count(void *self, int32_t *count) {
    *count = self_of(self).device_count();
    return PAGODA_OK;
}

pagoda_status_t device_info(void *self, int32_t device, pagoda_device_info_t *info) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
    if (info == nullptr || info->struct_size < sizeof(pagoda_device_info_t))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "device_info: info is NULL or too small");
    pagoda_device_info_t out{};
    out.struct_size = sizeof out;
    out.kind = PAGODA_DEVICE_CPU;
    // Weights in the file's mapping sit on 4 KiB pages, where a decode step streamed them at
    // about three quarters of the speed it reaches on the 2 MiB pages of this backend's own large
    // buffers (README.md, "weights=mapped"): by default the host copies them over.
    out.flags = PAGODA_DEVICE_HOST_ACCESSIBLE;
    if (cpu.mapped_weights()) out.flags |= PAGODA_DEVICE_USES_HOST_WEIGHTS;
    const CpuDevice &dev = cpu.device(device);
    out.compute_units = dev.pool.threads();
    // The budget bounds a device; the host's free memory, shared by all devices, may bound it
    // sooner (when /proc says how much there is).
    out.total_memory = dev.memory.budget();
    out.free_memory = dev.memory.budget() - dev.memory.allocated();
    if (const uint64_t available = meminfo_bytes("MemAvailable"); available != 0)
        out.free_memory = std::min(out.free_memory, available / uint64_t(cpu.device_count()));
    std::string model = proc_field("/proc/cpuinfo", "model name");
    std::snprintf(out.name, sizeof out.name, "%s", model.empty() ? "CPU" : model.c_str());
#if defined(__x86_64__)
    // The widest kernels this instance runs (config "isa" may hold it below the processor's).
    std::snprintf(out.arch, sizeof out.arch, "%s",
                  cpu.features().avx512_vnni     ? "x86_64-avx512vnni"
                  : cpu.features().avx2_fma_f16c ? "x86_64-avx2"
                                                 : "x86_64");
#elif defined(__aarch64__)
    std::snprintf(out.arch, sizeof out.arch, "aarch64");
#else
    std::snprintf(out.arch, sizeof out.arch, "generic");
#endif
    *info = out;
    return PAGODA_OK;
}

// Host memory for a buffer of `size` bytes, aligned as the ABI promises; `where` names the
// device or "host" in messages.
pagoda_status_t allocate(CpuBackend &cpu, const std::string &where, size_t size, void **out) {
    // aligned_alloc wants a multiple of the alignment; a zero-byte buffer still gets an address.
    const size_t align = size >= kHugePage ? kHugePage : kBufferAlignment;
    if (size > SIZE_MAX - align)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "allocating " + std::to_string(size) + " bytes on " + where + ": too large");
    size_t rounded = (size + align - 1) / align * align;
    void *p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (p == nullptr)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "allocating " + std::to_string(size) + " bytes on " + where + " failed");
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice only; failure is harmless
    *out = p;
    return PAGODA_OK;
}

// Counts the requested bytes against the device's budget (config "memory") before allocating.
pagoda_status_t buffer_alloc(void *self, int32_t device, size_t size, void **out) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
    if (out == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "buffer_alloc: out is NULL");
    const std::string where = "cpu:" + std::to_string(device);
    MemoryBudget &budget = cpu.device(device).memory;
    uint64_t left = 0;
    if (!budget.reserve(size, left))
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        "allocating " + std::to_string(size) + " bytes on " + where + ": only " +
                            std::to_string(left) + " of its " + std::to_string(budget.budget()) +
                            " bytes are left");
    void *p = nullptr;
    pagoda_status_t s = allocate(cpu, where, size, &p);
    if (s == PAGODA_OK) {
        try {
            budget.track(p, size);
        } catch (const std::bad_alloc &) {
            std::free(p);
            s = cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, "allocating " + std::to_string(size) +
                                                       " bytes on " + where + ": out of memory");
        }
    }
    if (s != PAGODA_OK) {
        budget.unreserve(size);
        return s;
    }
    *out = p;
    return PAGODA_OK;
}

void buffer_free(void *self, int32_t device, void *ptr) {
    CpuBackend &cpu = self_of(self);
    if (ptr == nullptr) return;
    // A pointer the device does not know is left alone: freeing it could free memory twice.
    if (device < 0 || device >= cpu.device_count() || !cpu.device(device).memory.release(ptr)) {
        char address[32];
        std::snprintf(address, sizeof address, "%p", ptr);
        cpu.log(PAGODA_LOG_ERROR, std::string("buffer_free: ") + address +
                                      " is not a buffer of cpu:" + std::to_string(device) +
                                      "; not freed");
        return;
    }
    std::free(ptr);
}

// Host buffers count against no device.
pagoda_status_t host_buffer_alloc(void *self, size_t size, void **out) {
    CpuBackend &cpu = self_of(self);
    if (out == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "host_buffer_alloc: out is NULL");
    return allocate(cpu, "the host", size, out);
}

void host_buffer_free(void *, void *ptr) { std::free(ptr); }

pagoda_status_t stream_create(void *self, int32_t device, pagoda_backend_stream_t **out) {
    CpuBackend &cpu = self_of(self);
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
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
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
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
    DeviceScope scope(cpu, stream->device);
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
    DeviceScope scope(cpu, stream->device);
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
    if (pagoda_status_t s = cpu.check_device(device); s != PAGODA_OK) return s;
    DeviceScope scope(cpu, device);
    return guarded_dispatch(cpu, op, args, false);
}

pagoda_status_t launch(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                       const void *args) {
    CpuBackend &cpu = self_of(self);
    if (stream == nullptr) return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, "launch: stream is NULL");
    if (stream->recording) return record_launch(cpu, *stream, op, args);
    DeviceScope scope(cpu, stream->device);
    return guarded_dispatch(cpu, op, args, true);
}

const char *variant_name(void *self, int32_t device, pagoda_op_t op, int32_t variant) {
    if (self_of(self).check_device(device) != PAGODA_OK || op != PAGODA_OP_MATMUL) return nullptr;
    return matmul_variant_name(variant);
}

const pagoda_backend_kernels_t kKernels = {sizeof(pagoda_backend_kernels_t), supports, launch,
                                           variant_name};

void destroy(void *self) { delete static_cast<Instance *>(self); }

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
        CpuConfig cpu_config;
        if (!parse_cpu_config(config, cpu_config, error)) {
            report(host, error);
            return PAGODA_ERR_INVALID_ARGUMENT;
        }
        auto instance = std::make_unique<Instance>(*host, cpu_config);
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
