//! dtype.h: element types.

use std::os::raw::c_char;

/// `pagoda_dtype_t`. Values are stable; new types are only appended.
pub type pagoda_dtype_t = i32;

pub const PAGODA_DTYPE_INVALID: pagoda_dtype_t = 0;
pub const PAGODA_DTYPE_F32: pagoda_dtype_t = 1;
pub const PAGODA_DTYPE_F16: pagoda_dtype_t = 2;
pub const PAGODA_DTYPE_BF16: pagoda_dtype_t = 3;
pub const PAGODA_DTYPE_I32: pagoda_dtype_t = 4;
pub const PAGODA_DTYPE_I64: pagoda_dtype_t = 5;
pub const PAGODA_DTYPE_I8: pagoda_dtype_t = 6;
pub const PAGODA_DTYPE_U8: pagoda_dtype_t = 7;
pub const PAGODA_DTYPE_Q8_0: pagoda_dtype_t = 8;
pub const PAGODA_DTYPE_Q4_0: pagoda_dtype_t = 9;
pub const PAGODA_DTYPE_Q4_K: pagoda_dtype_t = 10;
pub const PAGODA_DTYPE_Q5_K: pagoda_dtype_t = 11;
pub const PAGODA_DTYPE_Q6_K: pagoda_dtype_t = 12;

extern "C" {
    pub fn pagoda_dtype_size(dtype: pagoda_dtype_t) -> usize;
    pub fn pagoda_dtype_block(
        dtype: pagoda_dtype_t,
        elements: *mut i64,
        bytes: *mut usize,
    ) -> crate::pagoda_status_t;
    pub fn pagoda_dtype_name(dtype: pagoda_dtype_t) -> *const c_char;
}
