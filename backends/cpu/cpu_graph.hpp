// Graphs on the CPU backend: a stream that records keeps each launch (the op and a deep copy of
// its descriptor), memset and device-to-device copy, and a graph launch replays them in order.
// The CPU runs work as it is issued, so a graph saves nothing here; it exists so that the host's
// graph path (decode steps recorded once per batch size) runs, and is tested, on every machine.
#pragma once

#include "cpu_backend.hpp"

namespace pagoda::cpu {

// The interface table's graph slots.
pagoda_status_t graph_capture_begin(void *self, pagoda_backend_stream_t *stream);
pagoda_status_t graph_capture_end(void *self, pagoda_backend_stream_t *stream,
                                  pagoda_backend_graph_t **out);
pagoda_status_t graph_launch(void *self, pagoda_backend_graph_t *graph,
                             pagoda_backend_stream_t *stream);
void graph_destroy(void *self, pagoda_backend_graph_t *graph);

// What launch, memset and copy do on a stream that records (stream.recording set): check the
// work now and record it, or refuse it and spoil the recording.
pagoda_status_t record_launch(CpuBackend &cpu, CpuStream &stream, pagoda_op_t op,
                              const void *args);
pagoda_status_t record_memset(CpuBackend &cpu, CpuStream &stream, void *dst, int value,
                              size_t size);
pagoda_status_t record_copy(CpuBackend &cpu, CpuStream &stream, void *dst, const void *src,
                            size_t size, pagoda_copy_kind_t kind);
// Refuses `call` (synchronize, query, event record or wait) on a recording stream and spoils
// the recording; PAGODA_OK when the stream is not recording.
pagoda_status_t refuse_while_recording(CpuBackend &cpu, CpuStream &stream, const char *call);

}  // namespace pagoda::cpu
