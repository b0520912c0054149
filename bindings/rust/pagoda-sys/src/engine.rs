//! engine.h: continuous batching of requests over a model and a paged KV cache.

use crate::common::{pagoda_engine_t, pagoda_kv_cache_t, pagoda_mesh_t, pagoda_model_t, pagoda_plan_t};
use crate::status::pagoda_status_t;
use std::os::raw::{c_char, c_int, c_void};

/// `pagoda_finish_reason_t`.
pub type pagoda_finish_reason_t = i32;

pub const PAGODA_FINISH_NONE: pagoda_finish_reason_t = 0;
pub const PAGODA_FINISH_LENGTH: pagoda_finish_reason_t = 1;
pub const PAGODA_FINISH_STOP_TOKEN: pagoda_finish_reason_t = 2;
pub const PAGODA_FINISH_STOP_STRING: pagoda_finish_reason_t = 3;
pub const PAGODA_FINISH_ABORTED: pagoda_finish_reason_t = 4;
pub const PAGODA_FINISH_ERROR: pagoda_finish_reason_t = 5;

pub const PAGODA_REQUEST_IGNORE_EOS: u32 = 1;
pub const PAGODA_REQUEST_KEEP_SPECIAL_TEXT: u32 = 2;
pub const PAGODA_REQUEST_INCLUDE_STOP_STRING: u32 = 4;
pub const PAGODA_REQUEST_NO_SPECIAL_TOKENS: u32 = 8;
pub const PAGODA_REQUEST_FRESH_SEED: u32 = 16;
/// An embedding request: nothing is generated; its one output carries `embedding`.
pub const PAGODA_REQUEST_EMBED: u32 = 32;

/// `pagoda_pooling_t` (`pagoda_request_options_t::pooling`).
pub type pagoda_pooling_t = i32;
/// The checkpoint's own pooling (sentence-transformers modules.json, GGUF pooling_type); last-token
/// for a plain decoder.
pub const PAGODA_POOLING_MODEL: pagoda_pooling_t = 0;
pub const PAGODA_POOLING_LAST: pagoda_pooling_t = 1;
pub const PAGODA_POOLING_MEAN: pagoda_pooling_t = 2;

/// `pagoda_embedding_normalize_t` (`pagoda_request_options_t::embedding_normalize`).
pub type pagoda_embedding_normalize_t = i32;
/// The checkpoint's own rule; L2 for a plain decoder.
pub const PAGODA_EMBEDDING_NORMALIZE_MODEL: pagoda_embedding_normalize_t = 0;
pub const PAGODA_EMBEDDING_NORMALIZE_L2: pagoda_embedding_normalize_t = 1;
pub const PAGODA_EMBEDDING_NORMALIZE_NONE: pagoda_embedding_normalize_t = 2;

/// `pagoda_device_sampling_t`.
pub type pagoda_device_sampling_t = i32;
pub const PAGODA_DEVICE_SAMPLING_AUTO: pagoda_device_sampling_t = 0;
pub const PAGODA_DEVICE_SAMPLING_ON: pagoda_device_sampling_t = 1;
pub const PAGODA_DEVICE_SAMPLING_OFF: pagoda_device_sampling_t = 2;

/// `pagoda_quantized_matmul_t`.
pub type pagoda_quantized_matmul_t = i32;
pub const PAGODA_QUANTIZED_MATMUL_AUTO: pagoda_quantized_matmul_t = 0;
pub const PAGODA_QUANTIZED_MATMUL_EXACT: pagoda_quantized_matmul_t = 1;

/// `pagoda_decode_graphs_t`.
pub type pagoda_decode_graphs_t = i32;
pub const PAGODA_DECODE_GRAPHS_AUTO: pagoda_decode_graphs_t = 0;
pub const PAGODA_DECODE_GRAPHS_ON: pagoda_decode_graphs_t = 1;
pub const PAGODA_DECODE_GRAPHS_OFF: pagoda_decode_graphs_t = 2;

/// `pagoda_preemption_t`.
pub type pagoda_preemption_t = i32;
pub const PAGODA_PREEMPT_AUTO: pagoda_preemption_t = 0;
pub const PAGODA_PREEMPT_RECOMPUTE: pagoda_preemption_t = 1;
pub const PAGODA_PREEMPT_SWAP: pagoda_preemption_t = 2;

/// `pagoda_kv_reservation_t`.
pub type pagoda_kv_reservation_t = i32;
pub const PAGODA_KV_PAGED: pagoda_kv_reservation_t = 0;
pub const PAGODA_KV_CONTIGUOUS: pagoda_kv_reservation_t = 1;

/// Finite bucket bounds a `pagoda_histogram_t` holds at most.
pub const PAGODA_HISTOGRAM_MAX_BOUNDS: usize = 32;

/// `pagoda_request_options_t`. Initialise with `pagoda_request_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_request_options_t {
    pub struct_size: u32,
    pub flags: u32,
    pub max_tokens: i32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repetition_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    pub seed: u64,
    pub stop_token_ids: *const i32,
    pub n_stop_token_ids: usize,
    pub stop_strings: *const *const c_char,
    pub n_stop_strings: usize,
    pub logprobs: i32,
    pub prompt_logprobs: i32,
    pub n: i32,
    pub best_of: i32,
    pub beam_width: i32,
    pub length_penalty: f32,
    pub early_stopping: i32,
    pub priority: i32,
    pub logit_bias: *const pagoda_logit_bias_t,
    pub n_logit_bias: usize,
    pub bad_words_token_ids: *const i32,
    pub bad_words_lengths: *const usize,
    pub n_bad_words: usize,
    pub allowed_token_ids: *const i32,
    pub n_allowed_token_ids: usize,
    pub logits_processor: pagoda_logits_processor_fn,
    pub logits_processor_user: *mut c_void,
    pub min_tokens: i32,
    /// A `pagoda_constraint_kind_t`.
    pub constraint_kind: i32,
    /// NUL-terminated; copied at submit. Not read for `PAGODA_CONSTRAINT_JSON_OBJECT`.
    pub constraint: *const c_char,
    /// A `pagoda_pooling_t`; with `PAGODA_REQUEST_EMBED` only (0 without it).
    pub pooling: i32,
    /// A `pagoda_embedding_normalize_t`; with `PAGODA_REQUEST_EMBED` only (0 without it).
    pub embedding_normalize: i32,
}

/// `pagoda_logit_bias_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct pagoda_logit_bias_t {
    pub token_id: i32,
    pub bias: f32,
}

/// `pagoda_logits_processor_fn`: called on the thread that steps the engine, with its lock
/// held; it must not call back into that engine.
pub type pagoda_logits_processor_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        request_id: u64,
        sequence_index: i32,
        token_ids: *const i32,
        n_tokens: usize,
        n_prompt_tokens: usize,
        logits: *mut f32,
        n_logits: usize,
    ) -> i32,
>;

/// `pagoda_logprob_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct pagoda_logprob_t {
    pub token_id: i32,
    pub logprob: f32,
}

/// `pagoda_output_t`: filled by `pagoda_engine_poll`; its pointers stay valid until the same
/// thread polls the same engine again, or the engine is destroyed.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_output_t {
    pub struct_size: u32,
    pub request_id: u64,
    /// A `pagoda_finish_reason_t`.
    pub finish_reason: i32,
    /// A `pagoda_status_t`.
    pub status: i32,
    pub error: *const c_char,
    pub token_ids: *const i32,
    pub n_tokens: usize,
    pub text: *const c_char,
    pub text_len: usize,
    pub logprobs: *const f32,
    pub top_logprobs: *const pagoda_logprob_t,
    pub n_top_logprobs: i32,
    pub n_prompt_tokens: usize,
    pub n_generated: usize,
    pub prompt_logprobs: *const f32,
    pub prompt_top_logprobs: *const pagoda_logprob_t,
    pub n_prompt_top_logprobs: i32,
    pub sequence_index: i32,
    pub cumulative_logprob: f32,
    pub request_finished: i32,
    /// An embedding request's vector, `n_embedding` floats, on its one output when it finished
    /// normally; NULL otherwise. Valid until the next poll.
    pub embedding: *const f32,
    pub n_embedding: usize,
}

/// Called with each output, on the thread of the step (or abort) that produced it.
pub type pagoda_output_fn = Option<unsafe extern "C" fn(user: *mut c_void, output: *const pagoda_output_t)>;

/// `pagoda_engine_options_t`. Initialise with `pagoda_engine_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_engine_options_t {
    pub struct_size: u32,
    pub max_num_seqs: i32,
    pub max_num_batched_tokens: i32,
    pub on_output: pagoda_output_fn,
    pub on_output_user: *mut c_void,
    /// A `pagoda_preemption_t`.
    pub preemption: i32,
    /// A `pagoda_kv_reservation_t`.
    pub kv_reservation: i32,
    /// A `pagoda_decode_graphs_t`.
    pub decode_graphs: i32,
    /// A `pagoda_device_sampling_t`.
    pub device_sampling: i32,
    /// A `pagoda_dtype_t` (0: the engine picks).
    pub activation_dtype: i32,
    pub pipeline_micro_batches: i64,
    /// A `pagoda_quantized_matmul_t`.
    pub quantized_matmul: i32,
    /// A kernel choice file (kernel_choice.h), or NULL for none; read during
    /// `pagoda_engine_create` only.
    pub kernel_choices_file: *const c_char,
    /// A `pagoda_kernel_choice_t`.
    pub kernel_choice: i32,
}

/// `pagoda_engine_stats_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_engine_stats_t {
    pub struct_size: u32,
    pub requests_waiting: i64,
    pub requests_running: i64,
    pub requests_swapped: i64,
    pub requests_finished: i64,
    pub preemptions_recompute: i64,
    pub preemptions_swap: i64,
    pub steps: i64,
    pub prompt_tokens: i64,
    pub generated_tokens: i64,
    pub batched_sequences: i64,
    pub graph_steps: i64,
    pub device_sampled_tokens: i64,
}

/// `pagoda_device_stats_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_device_stats_t {
    pub struct_size: u32,
    pub device: [c_char; 32],
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
    /// Appended in 0.9: mixtures of experts.
    pub ep_rank: i32,
    pub ep_size: i32,
    pub expert_weight_bytes: u64,
}

/// `pagoda_histogram_t`: fixed layout, no `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_histogram_t {
    pub n_bounds: u32,
    pub upper_bounds: [f64; PAGODA_HISTOGRAM_MAX_BOUNDS],
    pub cumulative_counts: [u64; PAGODA_HISTOGRAM_MAX_BOUNDS],
    pub count: u64,
    pub sum: f64,
}

/// `pagoda_engine_metrics_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_engine_metrics_t {
    pub struct_size: u32,
    pub requests_running: i64,
    pub requests_waiting: i64,
    pub requests_swapped: i64,
    pub kv_blocks_used: i64,
    pub kv_blocks_total: i64,
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
    pub time_to_first_token: pagoda_histogram_t,
    pub inter_token_latency: pagoda_histogram_t,
    pub e2e_request_latency: pagoda_histogram_t,
    pub request_queue_time: pagoda_histogram_t,
}

extern "C" {
    pub fn pagoda_engine_options_init(options: *mut pagoda_engine_options_t, size: usize);
    pub fn pagoda_request_options_init(options: *mut pagoda_request_options_t, size: usize);
    pub fn pagoda_engine_create(
        model: *const pagoda_model_t,
        mesh: *const pagoda_mesh_t,
        plan: *const pagoda_plan_t,
        cache: *mut pagoda_kv_cache_t,
        options: *const pagoda_engine_options_t,
        out: *mut *mut pagoda_engine_t,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_destroy(engine: *mut pagoda_engine_t);
    pub fn pagoda_engine_submit_text(
        engine: *mut pagoda_engine_t,
        text: *const c_char,
        text_len: usize,
        options: *const pagoda_request_options_t,
        request_id: *mut u64,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_submit_tokens(
        engine: *mut pagoda_engine_t,
        ids: *const i32,
        n_ids: usize,
        options: *const pagoda_request_options_t,
        request_id: *mut u64,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_abort(engine: *mut pagoda_engine_t, request_id: u64) -> pagoda_status_t;
    pub fn pagoda_engine_step(engine: *mut pagoda_engine_t) -> pagoda_status_t;
    pub fn pagoda_engine_has_work(engine: *const pagoda_engine_t) -> c_int;
    pub fn pagoda_engine_has_work_v2(engine: *const pagoda_engine_t, has_work: *mut i32) -> pagoda_status_t;
    pub fn pagoda_engine_poll(engine: *mut pagoda_engine_t, output: *mut pagoda_output_t) -> pagoda_status_t;
    pub fn pagoda_engine_poll_batch(
        engine: *mut pagoda_engine_t,
        outputs: *mut pagoda_output_t,
        capacity: usize,
        n_polled: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_step_poll(
        engine: *mut pagoda_engine_t,
        outputs: *mut pagoda_output_t,
        capacity: usize,
        n_polled: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_get_stats(
        engine: *const pagoda_engine_t,
        stats: *mut pagoda_engine_stats_t,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_get_metrics(
        engine: *const pagoda_engine_t,
        metrics: *mut pagoda_engine_metrics_t,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_device_count(engine: *const pagoda_engine_t) -> usize;
    pub fn pagoda_engine_device_count_v2(
        engine: *const pagoda_engine_t,
        count: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_get_device_stats(
        engine: *const pagoda_engine_t,
        index: usize,
        stats: *mut pagoda_device_stats_t,
    ) -> pagoda_status_t;
}
