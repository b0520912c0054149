//! plan.h: plans (layers on devices, prompt slicing) and the multi-model placement simulator.

use crate::common::{pagoda_mesh_t, pagoda_model_t, pagoda_plan_t};
use crate::status::pagoda_status_t;
use std::os::raw::c_char;

/// `pagoda_plan_objective_t`.
pub type pagoda_plan_objective_t = i32;

pub const PAGODA_PLAN_LATENCY: pagoda_plan_objective_t = 0;
pub const PAGODA_PLAN_THROUGHPUT: pagoda_plan_objective_t = 1;

/// `pagoda_plan_options_t`. Initialise with `pagoda_plan_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_plan_options_t {
    pub struct_size: u32,
    /// A `pagoda_plan_objective_t`.
    pub objective: i32,
    pub micro_batches: i32,
    pub stages: i32,
    pub tensor_parallel: i32,
    pub device: *const c_char,
    pub cost_file: *const c_char,
    pub mesh_shape: *const c_char,
    pub step_tokens: i64,
    pub context_tokens: i64,
    pub kv_tokens: i64,
    pub prompt_tokens: i64,
    pub granularity: i64,
    pub epsilon_seconds: f64,
    /// Appended in 0.9: expert groups per stage; 0 = the planner's choice.
    pub expert_parallel: i32,
}

/// `pagoda_plan_stage_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_plan_stage_t {
    pub struct_size: u32,
    pub first_layer: i64,
    pub end_layer: i64,
    pub nodes: i32,
    pub devices: i32,
    pub tensor_parallel: i32,
    pub has_embedding: i32,
    pub has_head: i32,
    pub seconds: f64,
    pub memory_bytes: f64,
    /// Appended in 0.9: groups the stage's experts split into (1 for a dense model).
    pub expert_parallel: i32,
}

/// `pagoda_plan_summary_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_plan_summary_t {
    pub struct_size: u32,
    pub n_stages: usize,
    pub latency_seconds: f64,
    pub max_stage_seconds: f64,
    pub throughput_per_second: f64,
    pub objective_seconds: f64,
    pub n_slices: usize,
    pub sliced_prefill_seconds: f64,
    pub uniform_prefill_seconds: f64,
}

/// `pagoda_simulate_options_t`. Initialise with `pagoda_simulate_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_simulate_options_t {
    pub struct_size: u32,
    pub rate_per_model: f64,
    pub total_rate: f64,
    pub cv: f64,
    pub slo_seconds: f64,
    pub duration_seconds: f64,
    pub seed: u64,
    pub overhead_seconds: f64,
    pub reject_late: i32,
}

/// `pagoda_cost_profile_options_t`. Initialise with `pagoda_cost_profile_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_cost_profile_options_t {
    pub struct_size: u32,
    pub max_tokens: i64,
    pub granularity: i64,
    pub grid: i32,
    pub repeats: i32,
    pub beside: *const c_char,
}

/// `pagoda_link_profile_options_t`. Initialise with `pagoda_link_profile_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_link_profile_options_t {
    pub struct_size: u32,
    pub min_bytes: i64,
    pub max_bytes: i64,
    pub repeats: i32,
}

extern "C" {
    pub fn pagoda_plan_options_init(options: *mut pagoda_plan_options_t, size: usize);
    pub fn pagoda_plan_create(
        model: *const pagoda_model_t,
        mesh: *const pagoda_mesh_t,
        options: *const pagoda_plan_options_t,
        out: *mut *mut pagoda_plan_t,
    ) -> pagoda_status_t;
    pub fn pagoda_plan_create_from_config(
        config_path: *const c_char,
        options: *const pagoda_plan_options_t,
        out: *mut *mut pagoda_plan_t,
    ) -> pagoda_status_t;
    pub fn pagoda_plan_destroy(plan: *mut pagoda_plan_t);
    /// `*json` is released with `pagoda_free`.
    pub fn pagoda_plan_to_json(plan: *const pagoda_plan_t, json: *mut *mut c_char) -> pagoda_status_t;
    pub fn pagoda_plan_from_json(json: *const c_char, out: *mut *mut pagoda_plan_t) -> pagoda_status_t;
    pub fn pagoda_plan_get_summary(
        plan: *const pagoda_plan_t,
        summary: *mut pagoda_plan_summary_t,
    ) -> pagoda_status_t;
    pub fn pagoda_plan_get_stage(
        plan: *const pagoda_plan_t,
        index: usize,
        stage: *mut pagoda_plan_stage_t,
    ) -> pagoda_status_t;
    pub fn pagoda_plan_slice_length(plan: *const pagoda_plan_t, index: usize) -> i64;
    pub fn pagoda_plan_slice_length_v2(
        plan: *const pagoda_plan_t,
        index: usize,
        length: *mut i64,
    ) -> pagoda_status_t;
    pub fn pagoda_simulate_options_init(options: *mut pagoda_simulate_options_t, size: usize);
    /// `*result_json` is released with `pagoda_free`.
    pub fn pagoda_placement_simulate(
        placement_json: *const c_char,
        options: *const pagoda_simulate_options_t,
        result_json: *mut *mut c_char,
    ) -> pagoda_status_t;
    /// `*placement_json` is released with `pagoda_free`.
    pub fn pagoda_placement_search(
        spec_json: *const c_char,
        workload: *const pagoda_simulate_options_t,
        placement_json: *mut *mut c_char,
    ) -> pagoda_status_t;
    pub fn pagoda_cost_profile_options_init(options: *mut pagoda_cost_profile_options_t, size: usize);
    /// `*entry_json` (may be null) is released with `pagoda_free`.
    pub fn pagoda_cost_profile(
        model_path: *const c_char,
        device: *const c_char,
        options: *const pagoda_cost_profile_options_t,
        cost_file: *const c_char,
        entry_json: *mut *mut c_char,
    ) -> pagoda_status_t;
    pub fn pagoda_link_profile_options_init(options: *mut pagoda_link_profile_options_t, size: usize);
    /// `cost_file` may be null; `*links_json` (may be null) is released with `pagoda_free`.
    pub fn pagoda_link_profile(
        mesh: *const pagoda_mesh_t,
        options: *const pagoda_link_profile_options_t,
        cost_file: *const c_char,
        links_json: *mut *mut c_char,
    ) -> pagoda_status_t;
}
