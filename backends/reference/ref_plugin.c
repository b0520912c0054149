/* libpagoda-backend-reference.so: the reference backend, plain C11, one device ("reference:0")
 * whose memory is host memory and whose streams run each op when it is launched. It implements
 * every op of ops.h with naive loops and is the worked example of docs/BACKENDS.md; the
 * conformance suite (pagoda-conformance) checks it against the CPU backend.
 *
 * This file is the plugin's outside: the entry point and ABI negotiation, devices, memory,
 * streams, events and copies. The kernels are in ref_kernels.c and ref_ops_*.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ref_internal.h"

/* The ABI promises buffer_alloc's memory is aligned to at least 256 bytes. */
#define REF_BUFFER_ALIGNMENT 256

pagoda_status_t ref_fail(const ref_backend_t *b, pagoda_status_t status, const char *fmt, ...) {
    char message[512];
    int n = snprintf(message, sizeof message, "reference: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message + n, sizeof message - (size_t)n, fmt, ap);
    va_end(ap);
    b->host.set_error(b->host.ctx, message); /* the host keeps it per thread */
    return status;
}

static ref_backend_t *backend_of(void *self) { return self; }

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static pagoda_status_t check_device(const ref_backend_t *b, int32_t device) {
    if (device == 0) return PAGODA_OK;
    return ref_fail(b, PAGODA_ERR_NOT_FOUND, "device %d does not exist (reference:0 only)",
                    (int)device);
}

static pagoda_status_t device_count(void *self, int32_t *count) {
    if (count == NULL)
        return ref_fail(backend_of(self), PAGODA_ERR_INVALID_ARGUMENT, "device_count: count is NULL");
    *count = 1;
    return PAGODA_OK;
}

static pagoda_status_t device_info(void *self, int32_t device, pagoda_device_info_t *info) {
    const ref_backend_t *b = backend_of(self);
    if (check_device(b, device) != PAGODA_OK) return PAGODA_ERR_NOT_FOUND;
    if (info == NULL || info->struct_size < offsetof(pagoda_device_info_t, name))
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "device_info: info is NULL or too small");
    pagoda_device_info_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    out.kind = PAGODA_DEVICE_CPU;
    out.flags = PAGODA_DEVICE_HOST_ACCESSIBLE; /* "device" memory is host memory */
    out.compute_units = 1;                    /* no threads */
    const long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
    const long free_pages = sysconf(_SC_AVPHYS_PAGES);
    out.total_memory = page > 0 && pages > 0 ? (uint64_t)page * (uint64_t)pages : 0;
    out.free_memory = page > 0 && free_pages > 0 ? (uint64_t)page * (uint64_t)free_pages : 0;
    snprintf(out.name, sizeof out.name, "reference (plain C, naive loops)");
    snprintf(out.arch, sizeof out.arch, "portable-c");
    /* Fill no more than the caller's struct holds (it may come from an older header). */
    const uint32_t size = info->struct_size < sizeof out ? info->struct_size : (uint32_t)sizeof out;
    memcpy(info, &out, size);
    info->struct_size = size;
    return PAGODA_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Memory: device buffers are host memory from the host's own allocator                         */
/* ------------------------------------------------------------------------------------------ */

static pagoda_status_t buffer_alloc(void *self, int32_t device, size_t size, void **out) {
    const ref_backend_t *b = backend_of(self);
    if (check_device(b, device) != PAGODA_OK) return PAGODA_ERR_NOT_FOUND;
    if (out == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "buffer_alloc: out is NULL");
    /* A zero-byte buffer still gets an address of its own. */
    void *p = b->host.host_alloc(b->host.ctx, size > 0 ? size : 1, REF_BUFFER_ALIGNMENT);
    if (p == NULL)
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "allocating %zu bytes on reference:0 failed",
                        size);
    *out = p;
    return PAGODA_OK;
}

static void buffer_free(void *self, int32_t device, void *ptr) {
    const ref_backend_t *b = backend_of(self);
    (void)device;
    b->host.host_free(b->host.ctx, ptr); /* NULL is ignored, as the slot promises */
}

/* ------------------------------------------------------------------------------------------ */
/* Streams and events: every launch and copy completes before it returns                         */
/* ------------------------------------------------------------------------------------------ */

static pagoda_status_t stream_create(void *self, int32_t device, pagoda_backend_stream_t **out) {
    const ref_backend_t *b = backend_of(self);
    if (check_device(b, device) != PAGODA_OK) return PAGODA_ERR_NOT_FOUND;
    if (out == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "stream_create: out is NULL");
    pagoda_backend_stream_t *s = calloc(1, sizeof *s);
    if (s == NULL) return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "stream_create: out of memory");
    s->device = device;
    *out = s;
    return PAGODA_OK;
}

static void stream_destroy(void *self, pagoda_backend_stream_t *stream) {
    (void)self;
    free(stream);
}

static pagoda_status_t stream_synchronize(void *self, pagoda_backend_stream_t *stream) {
    if (stream == NULL)
        return ref_fail(backend_of(self), PAGODA_ERR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
    return PAGODA_OK; /* nothing is ever pending */
}

static pagoda_status_t stream_query(void *self, pagoda_backend_stream_t *stream, uint32_t *complete) {
    if (stream == NULL || complete == NULL)
        return ref_fail(backend_of(self), PAGODA_ERR_INVALID_ARGUMENT,
                        "stream_query: stream or complete is NULL");
    *complete = 1;
    return PAGODA_OK;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pagoda_status_t event_create(void *self, int32_t device, uint32_t flags,
                                    pagoda_backend_event_t **out) {
    const ref_backend_t *b = backend_of(self);
    if (check_device(b, device) != PAGODA_OK) return PAGODA_ERR_NOT_FOUND;
    if ((flags & ~PAGODA_EVENT_TIMING) != 0 || out == NULL)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "event_create: unknown flags %u or out NULL",
                        (unsigned)flags);
    pagoda_backend_event_t *e = calloc(1, sizeof *e);
    if (e == NULL) return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "event_create: out of memory");
    e->device = device;
    e->timing = (flags & PAGODA_EVENT_TIMING) != 0;
    *out = e;
    return PAGODA_OK;
}

static void event_destroy(void *self, pagoda_backend_event_t *event) {
    (void)self;
    free(event);
}

/* Work before the event is done when it is recorded, so its moment is now. */
static pagoda_status_t event_record(void *self, pagoda_backend_event_t *event,
                                    pagoda_backend_stream_t *stream) {
    if (event == NULL || stream == NULL)
        return ref_fail(backend_of(self), PAGODA_ERR_INVALID_ARGUMENT,
                        "event_record: event or stream is NULL");
    event->recorded = 1;
    event->seconds = now_seconds();
    return PAGODA_OK;
}

static pagoda_status_t stream_wait_event(void *self, pagoda_backend_stream_t *stream,
                                         pagoda_backend_event_t *event) {
    (void)self;
    (void)stream;
    (void)event;
    return PAGODA_OK;
}

static pagoda_status_t event_synchronize(void *self, pagoda_backend_event_t *event) {
    (void)self;
    (void)event;
    return PAGODA_OK;
}

static pagoda_status_t event_query(void *self, pagoda_backend_event_t *event, uint32_t *complete) {
    if (event == NULL || complete == NULL)
        return ref_fail(backend_of(self), PAGODA_ERR_INVALID_ARGUMENT,
                        "event_query: event or complete is NULL");
    *complete = 1;
    return PAGODA_OK;
}

static pagoda_status_t event_elapsed(void *self, pagoda_backend_event_t *start,
                                     pagoda_backend_event_t *end, float *milliseconds) {
    const ref_backend_t *b = backend_of(self);
    if (start == NULL || end == NULL || milliseconds == NULL)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "event_elapsed: an argument is NULL");
    if (!start->timing || !end->timing || !start->recorded || !end->recorded)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                        "event_elapsed: both events need PAGODA_EVENT_TIMING and a record");
    *milliseconds = (float)((end->seconds - start->seconds) * 1e3);
    return PAGODA_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Copies                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static pagoda_status_t copy(void *self, pagoda_backend_stream_t *stream, void *dst,
                            const void *src, size_t size, pagoda_copy_kind_t kind) {
    const ref_backend_t *b = backend_of(self);
    if (stream == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "copy: stream is NULL");
    if (kind < PAGODA_COPY_HOST_TO_DEVICE || kind > PAGODA_COPY_HOST_TO_HOST)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "copy: unknown kind %d", (int)kind);
    if (size == 0) return PAGODA_OK;
    if (dst == NULL || src == NULL)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "copy: dst or src is NULL");
    memmove(dst, src, size); /* every kind is host to host here */
    return PAGODA_OK;
}

static pagoda_status_t memset_(void *self, pagoda_backend_stream_t *stream, void *dst, int value,
                               size_t size) {
    const ref_backend_t *b = backend_of(self);
    if (stream == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "memset: stream is NULL");
    if (size == 0) return PAGODA_OK;
    if (dst == NULL) return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "memset: dst is NULL");
    memset(dst, value, size);
    return PAGODA_OK;
}

static void destroy(void *self) { free(self); }

/* ------------------------------------------------------------------------------------------ */
/* The entry point                                                                              */
/* ------------------------------------------------------------------------------------------ */

#ifdef PAGODA_REFERENCE_BROKEN
#define REF_NAME "reference_broken"
#define REF_DESCRIPTION "reference backend, DELIBERATELY BROKEN (rmsnorm off by 0.1 %) to test the tests"
#else
#define REF_NAME "reference"
#define REF_DESCRIPTION "reference backend: plain C11, naive loops, one host device, no collectives"
#endif

__attribute__((visibility("default"))) pagoda_status_t pagoda_backend_entry(
    const pagoda_backend_host_t *host, const char *config, const pagoda_backend_iface_t **out) {
    if (host == NULL || out == NULL) return PAGODA_ERR_INVALID_ARGUMENT;
    /* Negotiation: the same major version, and a host table holding every service we call. */
    if (PAGODA_BACKEND_ABI_MAJOR(host->abi_version) !=
            PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION) ||
        host->struct_size < sizeof(pagoda_backend_host_t)) {
        if (host->struct_size >= offsetof(pagoda_backend_host_t, host_alloc) && host->set_error != NULL) {
            char message[160];
            snprintf(message, sizeof message,
                     "reference: the host speaks plugin ABI %u, this plugin speaks %u",
                     (unsigned)PAGODA_BACKEND_ABI_MAJOR(host->abi_version),
                     (unsigned)PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION));
            host->set_error(host->ctx, message);
        }
        return PAGODA_ERR_ABI_MISMATCH;
    }
    if (config != NULL && config[0] != '\0') {
        char message[256];
        snprintf(message, sizeof message, "reference: unknown config \"%.200s\" (it takes no keys)",
                 config);
        host->set_error(host->ctx, message);
        return PAGODA_ERR_INVALID_ARGUMENT;
    }
    ref_backend_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        host->set_error(host->ctx, "reference: out of memory while starting");
        return PAGODA_ERR_OUT_OF_MEMORY;
    }
    b->host = *host;
    pagoda_backend_iface_t *t = &b->iface;
    t->struct_size = sizeof *t;
    t->abi_version = PAGODA_BACKEND_ABI_VERSION;
    t->name = REF_NAME;
    t->description = REF_DESCRIPTION;
    t->self = b;
    t->destroy = destroy;
    t->device_count = device_count;
    t->device_info = device_info;
    t->buffer_alloc = buffer_alloc;
    t->buffer_free = buffer_free;
    t->host_buffer_alloc = NULL; /* optional: the host uses its own allocator */
    t->host_buffer_free = NULL;
    t->stream_create = stream_create;
    t->stream_destroy = stream_destroy;
    t->stream_synchronize = stream_synchronize;
    t->event_create = event_create;
    t->event_destroy = event_destroy;
    t->event_record = event_record;
    t->stream_wait_event = stream_wait_event;
    t->event_synchronize = event_synchronize;
    t->copy = copy;
    t->memset = memset_;
    t->kernels = &ref_kernels;
    t->collectives = NULL; /* optional: one device, nothing to communicate with */
    t->stream_query = stream_query;
    t->event_query = event_query;
    t->event_elapsed = event_elapsed;
    /* Graph capture (ABI 1.1) is optional: NULL slots make the host launch op by op. */
    t->graph_capture_begin = NULL;
    t->graph_capture_end = NULL;
    t->graph_launch = NULL;
    t->graph_destroy = NULL;
    *out = t;
    return PAGODA_OK;
}
