//! kernel_choice.h: which of a backend's kernels runs each matrix product, by rules, by a file of
//! choices or by measurement.

use crate::common::pagoda_engine_t;
use crate::dtype::pagoda_dtype_t;
use crate::status::pagoda_status_t;
use std::os::raw::c_char;

/// `pagoda_kernel_choice_t` (`pagoda_engine_options_t::kernel_choice`).
pub type pagoda_kernel_choice_t = i32;
pub const PAGODA_KERNEL_CHOICE_FILE: pagoda_kernel_choice_t = 0;
pub const PAGODA_KERNEL_CHOICE_MEASURE: pagoda_kernel_choice_t = 1;
pub const PAGODA_KERNEL_CHOICE_RULES: pagoda_kernel_choice_t = 2;

/// `pagoda_kernel_choice_info_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_kernel_choice_info_t {
    pub struct_size: u32,
    pub w_dtype: pagoda_dtype_t,
    pub x_dtype: pagoda_dtype_t,
    pub y_dtype: pagoda_dtype_t,
    /// `PAGODA_MATMUL_*` bits (ops.h).
    pub flags: u32,
    pub n: i64,
    pub k: i64,
    /// A power of two: the choice holds for products of (m/2, m] rows.
    pub m: i64,
    pub seconds: f64,
    pub rules_seconds: f64,
    pub device: [c_char; 192],
    pub variant: [c_char; 32],
}

extern "C" {
    pub fn pagoda_engine_kernel_choice_count(
        engine: *const pagoda_engine_t,
        count: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_engine_kernel_choice(
        engine: *const pagoda_engine_t,
        index: usize,
        info: *mut pagoda_kernel_choice_info_t,
    ) -> pagoda_status_t;
}
