//! An engine's counters, its per-device usage and its serving metrics.

use crate::convert::FromC;
use crate::dtype::Dtype;
use pagoda_sys as sys;

c_struct! {
    /// The engine's counters.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct EngineStats from sys::pagoda_engine_stats_t {
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
}

c_struct! {
    /// What one device of an engine's mesh holds and runs.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DeviceStats from sys::pagoda_device_stats_t {
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
        /// Its group among the stage's expert-parallel groups (0 without).
        pub ep_rank: i32,
        /// Groups the stage's experts split into (the mesh's `ep`; 1 without).
        pub ep_size: i32,
        /// Of `layer_weight_bytes`, those of the experts it holds (0 for a dense model).
        pub expert_weight_bytes: u64,
    }
}

c_struct! {
    /// The kernel an engine runs for one matrix product shape on one kind of device
    /// (kernel_choice.h).
    #[derive(Clone, Debug, PartialEq)]
    pub struct KernelChoiceInfo from sys::pagoda_kernel_choice_info_t {
        /// The weights' type.
        pub w_dtype: Option<Dtype>,
        /// The activations' type.
        pub x_dtype: Option<Dtype>,
        /// The outputs' type.
        pub y_dtype: Option<Dtype>,
        /// The products' `PAGODA_MATMUL_*` bits (ops.h).
        pub flags: u32,
        /// Outputs (rows of the weights).
        pub n: i64,
        /// Inputs (columns of the weights).
        pub k: i64,
        /// Rows: the choice holds for products of (m/2, m] rows; a power of two.
        pub m: i64,
        /// Seconds per product of the chosen kernel as measured; 0 if the file did not say.
        pub seconds: f64,
        /// The same for the backend's built-in rules.
        pub rules_seconds: f64,
        /// The kind of device: "backend / arch / model / N units".
        pub device: String,
        /// The kernel chosen (a name of the backend's), or "rules" for its built-in rules.
        pub variant: String,
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

impl FromC<sys::pagoda_histogram_t> for Histogram {
    fn from_c(h: &sys::pagoda_histogram_t) -> Histogram {
        let n = (h.n_bounds as usize).min(sys::PAGODA_HISTOGRAM_MAX_BOUNDS);
        Histogram {
            upper_bounds: h.upper_bounds[..n].to_vec(),
            cumulative_counts: h.cumulative_counts[..n].to_vec(),
            count: h.count,
            sum: h.sum,
        }
    }
}

c_struct! {
    /// What a serving host monitors: gauges, counters (growing from 0) and latency histograms.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Metrics from sys::pagoda_engine_metrics_t {
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
}
