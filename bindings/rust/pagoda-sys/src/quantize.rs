//! quantize.h: a GGUF model rewritten with quantized weight matrices.

use crate::model::pagoda_progress_fn;
use crate::status::pagoda_status_t;
use std::os::raw::{c_char, c_void};

/// `pagoda_quant_type_t` values.
pub type pagoda_quant_type_t = i32;
pub const PAGODA_QUANT_Q8_0: pagoda_quant_type_t = 0;
pub const PAGODA_QUANT_Q4_0: pagoda_quant_type_t = 1;
pub const PAGODA_QUANT_Q4_K_M: pagoda_quant_type_t = 2;
pub const PAGODA_QUANT_Q5_K_M: pagoda_quant_type_t = 3;
pub const PAGODA_QUANT_Q6_K: pagoda_quant_type_t = 4;

/// `PAGODA_QUANTIZE_MAX_TYPES`.
pub const PAGODA_QUANTIZE_MAX_TYPES: usize = 8;

/// `pagoda_quantize_options_t`. Initialise with `pagoda_quantize_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_quantize_options_t {
    pub struct_size: u32,
    pub r#type: i32,
    pub threads: i32,
    pub progress: pagoda_progress_fn,
    pub progress_user: *mut c_void,
}

/// `pagoda_quantized_type_stats_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_quantized_type_stats_t {
    pub ggml_type: i32,
    pub name: [c_char; 8],
    pub tensors: i64,
    pub values: u64,
    pub rmse: f64,
    pub relative_rmse: f64,
}

/// `pagoda_quantize_stats_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_quantize_stats_t {
    pub struct_size: u32,
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub tensors_kept: i64,
    pub n_types: i32,
    pub types: [pagoda_quantized_type_stats_t; PAGODA_QUANTIZE_MAX_TYPES],
}

extern "C" {
    pub fn pagoda_quantize_options_init(options: *mut pagoda_quantize_options_t, size: usize);
    pub fn pagoda_model_quantize(
        input_path: *const c_char,
        output_path: *const c_char,
        options: *const pagoda_quantize_options_t,
        stats: *mut pagoda_quantize_stats_t,
    ) -> pagoda_status_t;
}
