// The interface table's functions, grouped by the file that defines them; cuda_plugin.cpp puts
// them into the table. Each has the exact signature of its slot in pagoda_backend_iface_t.
#pragma once

#include "pagoda/backend.h"

namespace pagoda::cuda {

// cuda_memory.cpp: device and pinned host memory, copies and memset.
pagoda_status_t buffer_alloc(void *self, int32_t device, size_t size, void **out);
void buffer_free(void *self, int32_t device, void *ptr);
pagoda_status_t host_buffer_alloc(void *self, size_t size, void **out);
void host_buffer_free(void *self, void *ptr);
pagoda_status_t copy(void *self, pagoda_backend_stream_t *stream, void *dst, const void *src,
                     size_t size, pagoda_copy_kind_t kind);
pagoda_status_t memset_async(void *self, pagoda_backend_stream_t *stream, void *dst, int value,
                             size_t size);

// cuda_streams.cpp: streams and events.
pagoda_status_t stream_create(void *self, int32_t device, pagoda_backend_stream_t **out);
void stream_destroy(void *self, pagoda_backend_stream_t *stream);
pagoda_status_t stream_synchronize(void *self, pagoda_backend_stream_t *stream);
pagoda_status_t event_create(void *self, int32_t device, uint32_t flags,
                             pagoda_backend_event_t **out);
void event_destroy(void *self, pagoda_backend_event_t *event);
pagoda_status_t event_record(void *self, pagoda_backend_event_t *event,
                             pagoda_backend_stream_t *stream);
pagoda_status_t stream_wait_event(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_event_t *event);
pagoda_status_t event_synchronize(void *self, pagoda_backend_event_t *event);
pagoda_status_t stream_query(void *self, pagoda_backend_stream_t *stream, uint32_t *complete);
pagoda_status_t event_query(void *self, pagoda_backend_event_t *event, uint32_t *complete);
pagoda_status_t event_elapsed(void *self, pagoda_backend_event_t *start,
                              pagoda_backend_event_t *end, float *milliseconds);

// cuda_graphs.cpp: stream capture into CUDA graphs, and the kernel table the plugin hands out
// (cuda_kernels.cpp's, noting launches refused during a capture).
pagoda_status_t graph_capture_begin(void *self, pagoda_backend_stream_t *stream);
pagoda_status_t graph_capture_end(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_graph_t **out);
pagoda_status_t graph_launch(void *self, pagoda_backend_graph_t *graph,
                             pagoda_backend_stream_t *stream);
void graph_destroy(void *self, pagoda_backend_graph_t *graph);
extern const pagoda_backend_kernels_t kGraphAwareKernels;

// cuda_kernels.cpp: the kernel table.
extern const pagoda_backend_kernels_t kKernels;

// nccl_collectives.cpp: the collectives table.
extern const pagoda_backend_collectives_t kCollectives;

}  // namespace pagoda::cuda
