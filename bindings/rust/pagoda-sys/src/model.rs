//! model.h: opening a model, with progress and cancellation.

use crate::common::{pagoda_model_loader_t, pagoda_model_t};
use crate::status::pagoda_status_t;
use std::os::raw::{c_char, c_float, c_int, c_void};

/// Called as opening advances; returns nonzero to go on, 0 to cancel.
pub type pagoda_progress_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, fraction: c_float, stage: *const c_char) -> c_int>;

/// `pagoda_model_options_t`. Initialise with `pagoda_model_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_model_options_t {
    pub struct_size: u32,
    pub progress: pagoda_progress_fn,
    pub progress_user: *mut c_void,
}

/// `pagoda_model_info_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_model_info_t {
    pub struct_size: u32,
    pub architecture: [c_char; 32],
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub intermediate_size: i64,
    pub n_layers: i64,
    pub n_heads: i64,
    pub n_kv_heads: i64,
    pub head_dim: i64,
    pub max_position: i64,
    pub n_parameters: u64,
    pub bos_token_id: i32,
    pub eos_token_id: i32,
    pub n_experts: i64,
    pub experts_per_token: i64,
    pub expert_intermediate_size: i64,
    pub n_sparse_layers: i64,
}

extern "C" {
    pub fn pagoda_model_options_init(options: *mut pagoda_model_options_t, size: usize);
    pub fn pagoda_model_open(
        path: *const c_char,
        options: *const pagoda_model_options_t,
        out: *mut *mut pagoda_model_t,
    ) -> pagoda_status_t;
    pub fn pagoda_model_load_start(
        path: *const c_char,
        options: *const pagoda_model_options_t,
        out: *mut *mut pagoda_model_loader_t,
    ) -> pagoda_status_t;
    pub fn pagoda_model_loader_progress(
        loader: *const pagoda_model_loader_t,
        fraction: *mut c_float,
        done: *mut c_int,
    ) -> pagoda_status_t;
    pub fn pagoda_model_loader_cancel(loader: *mut pagoda_model_loader_t);
    /// Releases the loader whatever the result.
    pub fn pagoda_model_loader_finish(
        loader: *mut pagoda_model_loader_t,
        out: *mut *mut pagoda_model_t,
    ) -> pagoda_status_t;
    pub fn pagoda_model_destroy(model: *mut pagoda_model_t);
    pub fn pagoda_model_get_info(
        model: *const pagoda_model_t,
        info: *mut pagoda_model_info_t,
    ) -> pagoda_status_t;
    pub fn pagoda_model_path(model: *const pagoda_model_t) -> *const c_char;
    pub fn pagoda_model_path_v2(model: *const pagoda_model_t, path: *mut *const c_char) -> pagoda_status_t;
}
