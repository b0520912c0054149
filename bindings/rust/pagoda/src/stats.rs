//! An engine's counters, its per-device usage and its serving metrics.

use crate::cstr::from_array;
use pagoda_sys as sys;

/// The engine's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineStats {
    pub requests_waiting: i64,
    pub requests_running: i64,
    pub requests_swapped: i64,
    pub requests_finished: i64,
    pub preemptions_recompute: i64,
    pub preemptions_swap: i64,
    /// Steps that ran the model.
    pub steps: i64,
    /// Prompt tokens computed (recomputed ones and prefix-cache hits excluded).
    pub prompt_tokens: i64,
    /// Tokens sampled.
    pub generated_tokens: i64,
    /// Sum over steps of the sequences in the batch.
    pub batched_sequences: i64,
    pub graph_steps: i64,
    pub device_sampled_tokens: i64,
}

impl EngineStats {
    pub(crate) fn from_raw(s: &sys::pagoda_engine_stats_t) -> EngineStats {
        EngineStats {
            requests_waiting: s.requests_waiting,
            requests_running: s.requests_running,
            requests_swapped: s.requests_swapped,
            requests_finished: s.requests_finished,
            preemptions_recompute: s.preemptions_recompute,
            preemptions_swap: s.preemptions_swap,
            steps: s.steps,
            prompt_tokens: s.prompt_tokens,
            generated_tokens: s.generated_tokens,
            batched_sequences: s.batched_sequences,
            graph_steps: s.graph_steps,
            device_sampled_tokens: s.device_sampled_tokens,
        }
    }
}

/// What one device of an engine's mesh holds and runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStats {
    /// The device's name, such as "cpu:1".
    pub device: String,
    pub stage: i32,
    pub tp_rank: i32,
    pub tp_size: i32,
    pub first_layer: i64,
    pub end_layer: i64,
    pub kv_heads: i64,
    pub weight_bytes: u64,
    pub kv_bytes: u64,
    pub layer_weight_bytes: u64,
    pub kvp_rank: i32,
    pub kvp_size: i32,
}

impl DeviceStats {
    pub(crate) fn from_raw(s: &sys::pagoda_device_stats_t) -> DeviceStats {
        DeviceStats {
            device: from_array(&s.device),
            stage: s.stage,
            tp_rank: s.tp_rank,
            tp_size: s.tp_size,
            first_layer: s.first_layer,
            end_layer: s.end_layer,
            kv_heads: s.kv_heads,
            weight_bytes: s.weight_bytes,
            kv_bytes: s.kv_bytes,
            layer_weight_bytes: s.layer_weight_bytes,
            kvp_rank: s.kvp_rank,
            kvp_size: s.kvp_size,
        }
    }
}

/// Durations in seconds counted into buckets with fixed upper bounds (a Prometheus histogram).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Ascending bucket bounds, seconds.
    pub upper_bounds: Vec<f64>,
    /// Observations ≤ each bound.
    pub cumulative_counts: Vec<u64>,
    /// All observations.
    pub count: u64,
    /// Their sum, seconds.
    pub sum: f64,
}

impl Histogram {
    fn from_raw(h: &sys::pagoda_histogram_t) -> Histogram {
        let n = (h.n_bounds as usize).min(sys::PAGODA_HISTOGRAM_MAX_BOUNDS);
        Histogram {
            upper_bounds: h.upper_bounds[..n].to_vec(),
            cumulative_counts: h.cumulative_counts[..n].to_vec(),
            count: h.count,
            sum: h.sum,
        }
    }
}

/// What a serving host monitors: gauges, counters (growing from 0) and latency histograms.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    pub requests_running: i64,
    pub requests_waiting: i64,
    pub requests_swapped: i64,
    pub kv_blocks_used: i64,
    pub kv_blocks_total: i64,
    /// kv_blocks_used / kv_blocks_total.
    pub kv_cache_usage: f64,
    pub prompt_tokens: i64,
    pub prompt_tokens_computed: i64,
    pub generation_tokens: i64,
    pub requests_finished_stop: i64,
    pub requests_finished_length: i64,
    pub requests_finished_aborted: i64,
    pub requests_finished_error: i64,
    pub preemptions_recompute: i64,
    pub preemptions_swap: i64,
    pub prefix_cache_queries: i64,
    pub prefix_cache_hits: i64,
    pub time_to_first_token: Histogram,
    pub inter_token_latency: Histogram,
    pub e2e_request_latency: Histogram,
    pub request_queue_time: Histogram,
}

impl Metrics {
    pub(crate) fn from_raw(m: &sys::pagoda_engine_metrics_t) -> Metrics {
        Metrics {
            requests_running: m.requests_running,
            requests_waiting: m.requests_waiting,
            requests_swapped: m.requests_swapped,
            kv_blocks_used: m.kv_blocks_used,
            kv_blocks_total: m.kv_blocks_total,
            kv_cache_usage: m.kv_cache_usage,
            prompt_tokens: m.prompt_tokens,
            prompt_tokens_computed: m.prompt_tokens_computed,
            generation_tokens: m.generation_tokens,
            requests_finished_stop: m.requests_finished_stop,
            requests_finished_length: m.requests_finished_length,
            requests_finished_aborted: m.requests_finished_aborted,
            requests_finished_error: m.requests_finished_error,
            preemptions_recompute: m.preemptions_recompute,
            preemptions_swap: m.preemptions_swap,
            prefix_cache_queries: m.prefix_cache_queries,
            prefix_cache_hits: m.prefix_cache_hits,
            time_to_first_token: Histogram::from_raw(&m.time_to_first_token),
            inter_token_latency: Histogram::from_raw(&m.inter_token_latency),
            e2e_request_latency: Histogram::from_raw(&m.e2e_request_latency),
            request_queue_time: Histogram::from_raw(&m.request_queue_time),
        }
    }
}
