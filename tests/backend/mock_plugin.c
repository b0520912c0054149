/* A configurable mock backend for the loader tests. One source, built several times with
 * MOCK_KIND selecting how it misbehaves; MOCK_NAME sets the backend's name. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pagoda/backend.h"

#define MOCK_GOOD 0
#define MOCK_WRONG_ABI 1      /* returns a table of another major version */
#define MOCK_ENTRY_FAILS 2    /* the entry reports a failure */
#define MOCK_MISSING_SLOT 3   /* device_info left NULL */
#define MOCK_NO_ENTRY 4       /* exports something else */
#define MOCK_BAD_NAME 5       /* name with upper-case letters */
#define MOCK_ABI_1_0 6        /* an ABI 1.0 table: struct_size ends before the graph slots */
#define MOCK_HALF_GRAPHS 7    /* graph_capture_begin/end set, graph_launch/destroy NULL */
#define MOCK_ABI_1_1 8        /* a whole table that says ABI 1.1 (before 1.2's op fields) */
#define MOCK_NO_DEVICE 9      /* the entry finds no device of its kind (NOT_FOUND) */
#define MOCK_ABI_1_6_COLLECTIVES 10 /* ABI 1.6, with a collectives table of 1.6 (before 1.7's _ex slots) */

#ifndef MOCK_NAME
#define MOCK_NAME "mock"
#endif

#define EXPORT __attribute__((visibility("default")))

#if MOCK_KIND == MOCK_NO_ENTRY
EXPORT int not_the_entry(void) { return 42; }
#else

typedef struct mock_state {
    int magic;
} mock_state_t;

static void mock_destroy(void *self) { free(self); }

static pagoda_status_t mock_device_count(void *self, int32_t *count) {
    (void)self;
    *count = 2;
    return PAGODA_OK;
}

static pagoda_status_t mock_device_info(void *self, int32_t device, pagoda_device_info_t *info) {
    (void)self;
    memset(info->name, 0, sizeof info->name);
    strcpy(info->name, device == 0 ? "mock device zero" : "mock device one");
    strcpy(info->arch, "mock");
    info->kind = PAGODA_DEVICE_GPU;
    info->total_memory = 1u << 30;
    info->free_memory = 1u << 29;
    info->compute_units = 4;
    return PAGODA_OK;
}

static pagoda_status_t mock_alloc(void *self, int32_t device, size_t size, void **out) {
    (void)self, (void)device;
    *out = malloc(size ? size : 1);
    return *out ? PAGODA_OK : PAGODA_ERR_OUT_OF_MEMORY;
}
static void mock_free(void *self, int32_t device, void *ptr) { (void)self, (void)device, free(ptr); }
static pagoda_status_t mock_stream_create(void *self, int32_t d, pagoda_backend_stream_t **out) {
    (void)self, (void)d;
    *out = (pagoda_backend_stream_t *)malloc(1);
    return PAGODA_OK;
}
static void mock_stream_destroy(void *self, pagoda_backend_stream_t *s) { (void)self, free(s); }
static pagoda_status_t mock_stream_sync(void *self, pagoda_backend_stream_t *s) {
    (void)self, (void)s;
    return PAGODA_OK;
}
static pagoda_status_t mock_event_create(void *self, int32_t d, uint32_t flags,
                                         pagoda_backend_event_t **out) {
    (void)self, (void)d, (void)flags;
    *out = (pagoda_backend_event_t *)malloc(1);
    return PAGODA_OK;
}
static void mock_event_destroy(void *self, pagoda_backend_event_t *e) { (void)self, free(e); }
static pagoda_status_t mock_event_record(void *self, pagoda_backend_event_t *e,
                                         pagoda_backend_stream_t *s) {
    (void)self, (void)e, (void)s;
    return PAGODA_OK;
}
static pagoda_status_t mock_wait(void *self, pagoda_backend_stream_t *s, pagoda_backend_event_t *e) {
    (void)self, (void)e, (void)s;
    return PAGODA_OK;
}
static pagoda_status_t mock_event_sync(void *self, pagoda_backend_event_t *e) {
    (void)self, (void)e;
    return PAGODA_OK;
}
static pagoda_status_t mock_copy(void *self, pagoda_backend_stream_t *s, void *dst,
                                 const void *src, size_t n, pagoda_copy_kind_t k) {
    (void)self, (void)s, (void)k;
    memmove(dst, src, n);
    return PAGODA_OK;
}
static pagoda_status_t mock_memset(void *self, pagoda_backend_stream_t *s, void *dst, int v, size_t n) {
    (void)self, (void)s;
    memset(dst, v, n);
    return PAGODA_OK;
}
static pagoda_status_t mock_query(void *self, void *what, uint32_t *complete) {
    (void)self, (void)what;
    *complete = 1;
    return PAGODA_OK;
}
static pagoda_status_t mock_stream_query(void *self, pagoda_backend_stream_t *s, uint32_t *c) {
    return mock_query(self, s, c);
}
static pagoda_status_t mock_event_query(void *self, pagoda_backend_event_t *e, uint32_t *c) {
    return mock_query(self, e, c);
}
static pagoda_status_t mock_elapsed(void *self, pagoda_backend_event_t *a, pagoda_backend_event_t *b,
                                    float *ms) {
    (void)self, (void)a, (void)b;
    *ms = 0.0f;
    return PAGODA_OK;
}
static pagoda_status_t mock_supports(void *self, int32_t d, pagoda_op_t op, const void *args) {
    (void)self, (void)d, (void)op, (void)args;
    return PAGODA_ERR_UNSUPPORTED;
}
static pagoda_status_t mock_launch(void *self, pagoda_backend_stream_t *s, pagoda_op_t op,
                                   const void *args) {
    (void)self, (void)s, (void)op, (void)args;
    return PAGODA_ERR_UNSUPPORTED;
}

#if MOCK_KIND == MOCK_HALF_GRAPHS
static pagoda_status_t mock_capture_begin(void *self, pagoda_backend_stream_t *s) {
    (void)self, (void)s;
    return PAGODA_ERR_UNSUPPORTED;
}
static pagoda_status_t mock_capture_end(void *self, pagoda_backend_stream_t *s,
                                        pagoda_backend_graph_t **out) {
    (void)self, (void)s;
    *out = NULL;
    return PAGODA_ERR_UNSUPPORTED;
}
#endif

static const pagoda_backend_kernels_t mock_kernels = {sizeof(pagoda_backend_kernels_t),
                                                      mock_supports, mock_launch};

static pagoda_backend_iface_t mock_iface;

#if MOCK_KIND == MOCK_ABI_1_6_COLLECTIVES
static pagoda_status_t mock_comm_create(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                                        int32_t size, int32_t rank, pagoda_backend_comm_t **comm) {
    (void)self, (void)device, (void)id, (void)size, (void)rank, (void)comm;
    return PAGODA_ERR_UNSUPPORTED;
}
static pagoda_status_t mock_comm_async_error(void *self, pagoda_backend_comm_t *comm, pagoda_status_t *error) {
    (void)self, (void)comm;
    *error = PAGODA_OK;
    return PAGODA_OK;
}
/* What a plugin built against ABI 1.6 filled: everything before get_unique_id_ex; past it junk. */
static pagoda_backend_collectives_t mock_collectives;
static void fill_old_collectives(void) {
    memset(&mock_collectives, 0xA5, sizeof mock_collectives);
    memset(&mock_collectives, 0, offsetof(pagoda_backend_collectives_t, get_unique_id_ex));
    mock_collectives.struct_size = (uint32_t)offsetof(pagoda_backend_collectives_t, get_unique_id_ex);
    mock_collectives.comm_create = mock_comm_create;
    mock_collectives.comm_get_async_error = mock_comm_async_error;
}
#endif

EXPORT pagoda_status_t pagoda_backend_entry(const pagoda_backend_host_t *host, const char *config,
                                            const pagoda_backend_iface_t **out) {
#if MOCK_KIND != MOCK_WRONG_ABI
    if (PAGODA_BACKEND_ABI_MAJOR(host->abi_version) != PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION))
        return PAGODA_ERR_ABI_MISMATCH;
#endif
#if MOCK_KIND == MOCK_ENTRY_FAILS
    host->set_error(host->ctx, "mock backend: simulated device failure");
    return PAGODA_ERR_BACKEND;
#endif
#if MOCK_KIND == MOCK_NO_DEVICE
    host->set_error(host->ctx, "mock backend: no mock device on this machine");
    return PAGODA_ERR_NOT_FOUND;
#endif
    if (config != NULL && strcmp(config, "fail=1") == 0) {
        host->set_error(host->ctx, "mock backend: asked to fail by its config");
        return PAGODA_ERR_INVALID_ARGUMENT;
    }
    mock_state_t *state = (mock_state_t *)malloc(sizeof *state);
    if (state == NULL) return PAGODA_ERR_OUT_OF_MEMORY;
    state->magic = 7;
    memset(&mock_iface, 0, sizeof mock_iface);
    mock_iface.struct_size = sizeof mock_iface;
#if MOCK_KIND == MOCK_ABI_1_0
    /* A plugin built against ABI 1.0 knows nothing past event_elapsed. Whatever lies beyond its
     * struct_size (here: junk) must never be read by the host. */
    mock_iface.struct_size = (uint32_t)offsetof(pagoda_backend_iface_t, graph_capture_begin);
    memset((char *)&mock_iface + offsetof(pagoda_backend_iface_t, graph_capture_begin), 0xA5,
           sizeof mock_iface - offsetof(pagoda_backend_iface_t, graph_capture_begin));
#endif
#if MOCK_KIND == MOCK_WRONG_ABI
    mock_iface.abi_version = (PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION) + 1) << 16;
    free(state); /* the host must not call destroy on a table of another major version */
    state = NULL;
#elif MOCK_KIND == MOCK_ABI_1_0
    mock_iface.abi_version = (PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION) << 16) | 0u;
#elif MOCK_KIND == MOCK_ABI_1_1
    mock_iface.abi_version = (PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION) << 16) | 1u;
#elif MOCK_KIND == MOCK_ABI_1_6_COLLECTIVES
    mock_iface.abi_version = (PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION) << 16) | 6u;
    fill_old_collectives();
    mock_iface.collectives = &mock_collectives;
#else
    mock_iface.abi_version = PAGODA_BACKEND_ABI_VERSION;
#endif
#if MOCK_KIND == MOCK_BAD_NAME
    mock_iface.name = "Mock-Bad";
#else
    mock_iface.name = MOCK_NAME;
#endif
    mock_iface.description = "mock backend for the loader tests";
    mock_iface.self = state;
    mock_iface.destroy = mock_destroy;
    mock_iface.device_count = mock_device_count;
#if MOCK_KIND != MOCK_MISSING_SLOT
    mock_iface.device_info = mock_device_info;
#endif
    mock_iface.buffer_alloc = mock_alloc;
    mock_iface.buffer_free = mock_free;
    mock_iface.stream_create = mock_stream_create;
    mock_iface.stream_destroy = mock_stream_destroy;
    mock_iface.stream_synchronize = mock_stream_sync;
    mock_iface.event_create = mock_event_create;
    mock_iface.event_destroy = mock_event_destroy;
    mock_iface.event_record = mock_event_record;
    mock_iface.stream_wait_event = mock_wait;
    mock_iface.event_synchronize = mock_event_sync;
    mock_iface.copy = mock_copy;
    mock_iface.memset = mock_memset;
    mock_iface.kernels = &mock_kernels;
    mock_iface.stream_query = mock_stream_query;
    mock_iface.event_query = mock_event_query;
    mock_iface.event_elapsed = mock_elapsed;
#if MOCK_KIND == MOCK_HALF_GRAPHS
    mock_iface.graph_capture_begin = mock_capture_begin;
    mock_iface.graph_capture_end = mock_capture_end;
#endif
    *out = &mock_iface;
    return PAGODA_OK;
}
#endif
