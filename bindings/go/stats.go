package pagoda

/*
#include "pagoda/engine.h"
*/
import "C"

import "unsafe"

// EngineStats is a pagoda_engine_stats_t: the engine's counters.
type EngineStats struct {
	RequestsWaiting      int64
	RequestsRunning      int64
	RequestsSwapped      int64
	RequestsFinished     int64
	PreemptionsRecompute int64
	PreemptionsSwap      int64
	Steps                int64
	PromptTokens         int64
	GeneratedTokens      int64
	BatchedSequences     int64
	GraphSteps           int64
	DeviceSampledTokens  int64
}

// Stats reads the engine's counters; safe while another goroutine steps.
func (e *Engine) Stats() (EngineStats, error) {
	var c C.pagoda_engine_stats_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := e.h.call(func(p unsafe.Pointer) C.pagoda_status_t { return C.pagoda_engine_get_stats(e.ptr(p), &c) }); err != nil {
		return EngineStats{}, err
	}
	return EngineStats{
		RequestsWaiting:      int64(c.requests_waiting),
		RequestsRunning:      int64(c.requests_running),
		RequestsSwapped:      int64(c.requests_swapped),
		RequestsFinished:     int64(c.requests_finished),
		PreemptionsRecompute: int64(c.preemptions_recompute),
		PreemptionsSwap:      int64(c.preemptions_swap),
		Steps:                int64(c.steps),
		PromptTokens:         int64(c.prompt_tokens),
		GeneratedTokens:      int64(c.generated_tokens),
		BatchedSequences:     int64(c.batched_sequences),
		GraphSteps:           int64(c.graph_steps),
		DeviceSampledTokens:  int64(c.device_sampled_tokens),
	}, nil
}

// DeviceStats is a pagoda_device_stats_t: what one device of the engine holds and runs.
type DeviceStats struct {
	Device            string // such as "cpu:1"
	Stage             int32
	TPRank            int32
	TPSize            int32
	FirstLayer        int64
	EndLayer          int64
	KVHeads           int64
	WeightBytes       uint64
	KVBytes           uint64
	LayerWeightBytes  uint64
	KVPRank           int32
	KVPSize           int32
	EPRank            int32  // its group among the stage's expert-parallel groups (0 without)
	EPSize            int32  // groups the stage's experts split into (the mesh's ep; 1 without)
	ExpertWeightBytes uint64 // of LayerWeightBytes, those of the experts it holds (0 for a dense model)
}

// DeviceCount is the number of devices the engine runs on.
func (e *Engine) DeviceCount() (int, error) {
	var n C.size_t
	err := e.h.call(func(p unsafe.Pointer) C.pagoda_status_t { return C.pagoda_engine_device_count_v2(e.ptr(p), &n) })
	return int(n), err
}

// DeviceStats describes the engine's index-th device, in mesh order.
func (e *Engine) DeviceStats(index int) (DeviceStats, error) {
	p, err := e.h.acquire()
	if err != nil {
		return DeviceStats{}, err
	}
	defer e.h.release()
	if index < 0 {
		return DeviceStats{}, errArgument("device index is negative")
	}
	var c C.pagoda_device_stats_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_engine_get_device_stats(e.ptr(p), C.size_t(index), &c)
	}); err != nil {
		return DeviceStats{}, err
	}
	return DeviceStats{
		Device:            charArray(c.device[:]),
		Stage:             int32(c.stage),
		TPRank:            int32(c.tp_rank),
		TPSize:            int32(c.tp_size),
		FirstLayer:        int64(c.first_layer),
		EndLayer:          int64(c.end_layer),
		KVHeads:           int64(c.kv_heads),
		WeightBytes:       uint64(c.weight_bytes),
		KVBytes:           uint64(c.kv_bytes),
		LayerWeightBytes:  uint64(c.layer_weight_bytes),
		KVPRank:           int32(c.kvp_rank),
		KVPSize:           int32(c.kvp_size),
		EPRank:            int32(c.ep_rank),
		EPSize:            int32(c.ep_size),
		ExpertWeightBytes: uint64(c.expert_weight_bytes),
	}, nil
}

// Histogram is a pagoda_histogram_t: durations in seconds counted into buckets, as Prometheus
// exposes them (CumulativeCounts[i] observations ≤ UpperBounds[i]).
type Histogram struct {
	UpperBounds      []float64
	CumulativeCounts []uint64
	Count            uint64
	Sum              float64
}

func histogram(c *C.pagoda_histogram_t) Histogram {
	n := int(c.n_bounds)
	if n > len(c.upper_bounds) {
		n = len(c.upper_bounds)
	}
	h := Histogram{UpperBounds: make([]float64, n), CumulativeCounts: make([]uint64, n),
		Count: uint64(c.count), Sum: float64(c.sum)}
	for i := 0; i < n; i++ {
		h.UpperBounds[i] = float64(c.upper_bounds[i])
		h.CumulativeCounts[i] = uint64(c.cumulative_counts[i])
	}
	return h
}

// EngineMetrics is a pagoda_engine_metrics_t: gauges, counters and latency histograms.
type EngineMetrics struct {
	RequestsRunning         int64
	RequestsWaiting         int64
	RequestsSwapped         int64
	KVBlocksUsed            int64
	KVBlocksTotal           int64
	KVCacheUsage            float64
	PromptTokens            int64
	PromptTokensComputed    int64
	GenerationTokens        int64
	RequestsFinishedStop    int64
	RequestsFinishedLength  int64
	RequestsFinishedAborted int64
	RequestsFinishedError   int64
	PreemptionsRecompute    int64
	PreemptionsSwap         int64
	PrefixCacheQueries      int64
	PrefixCacheHits         int64
	TimeToFirstToken        Histogram
	InterTokenLatency       Histogram
	E2ERequestLatency       Histogram
	RequestQueueTime        Histogram
}

// Metrics reads the engine's serving metrics; safe while another goroutine steps.
func (e *Engine) Metrics() (EngineMetrics, error) {
	var c C.pagoda_engine_metrics_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := e.h.call(func(p unsafe.Pointer) C.pagoda_status_t { return C.pagoda_engine_get_metrics(e.ptr(p), &c) }); err != nil {
		return EngineMetrics{}, err
	}
	return EngineMetrics{
		RequestsRunning:         int64(c.requests_running),
		RequestsWaiting:         int64(c.requests_waiting),
		RequestsSwapped:         int64(c.requests_swapped),
		KVBlocksUsed:            int64(c.kv_blocks_used),
		KVBlocksTotal:           int64(c.kv_blocks_total),
		KVCacheUsage:            float64(c.kv_cache_usage),
		PromptTokens:            int64(c.prompt_tokens),
		PromptTokensComputed:    int64(c.prompt_tokens_computed),
		GenerationTokens:        int64(c.generation_tokens),
		RequestsFinishedStop:    int64(c.requests_finished_stop),
		RequestsFinishedLength:  int64(c.requests_finished_length),
		RequestsFinishedAborted: int64(c.requests_finished_aborted),
		RequestsFinishedError:   int64(c.requests_finished_error),
		PreemptionsRecompute:    int64(c.preemptions_recompute),
		PreemptionsSwap:         int64(c.preemptions_swap),
		PrefixCacheQueries:      int64(c.prefix_cache_queries),
		PrefixCacheHits:         int64(c.prefix_cache_hits),
		TimeToFirstToken:        histogram(&c.time_to_first_token),
		InterTokenLatency:       histogram(&c.inter_token_latency),
		E2ERequestLatency:       histogram(&c.e2e_request_latency),
		RequestQueueTime:        histogram(&c.request_queue_time),
	}, nil
}
