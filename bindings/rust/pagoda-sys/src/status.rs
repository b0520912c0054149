//! status.h: status codes and the thread-local error message.

use std::os::raw::c_char;

/// `pagoda_status_t`. Values are stable; new codes are only appended.
pub type pagoda_status_t = i32;

pub const PAGODA_OK: pagoda_status_t = 0;
pub const PAGODA_ERR_INVALID_ARGUMENT: pagoda_status_t = 1;
pub const PAGODA_ERR_OUT_OF_MEMORY: pagoda_status_t = 2;
pub const PAGODA_ERR_NOT_FOUND: pagoda_status_t = 3;
pub const PAGODA_ERR_IO: pagoda_status_t = 4;
pub const PAGODA_ERR_FORMAT: pagoda_status_t = 5;
pub const PAGODA_ERR_UNSUPPORTED: pagoda_status_t = 6;
pub const PAGODA_ERR_ABI_MISMATCH: pagoda_status_t = 7;
pub const PAGODA_ERR_NOT_A_PLUGIN: pagoda_status_t = 8;
pub const PAGODA_ERR_BACKEND: pagoda_status_t = 9;
pub const PAGODA_ERR_INVALID_HANDLE: pagoda_status_t = 10;
pub const PAGODA_ERR_ALREADY_EXISTS: pagoda_status_t = 11;
pub const PAGODA_ERR_CANCELLED: pagoda_status_t = 12;
pub const PAGODA_ERR_EMPTY: pagoda_status_t = 13;
pub const PAGODA_ERR_INTERNAL: pagoda_status_t = 14;

extern "C" {
    pub fn pagoda_status_string(status: pagoda_status_t) -> *const c_char;
    /// Thread-local: read it on the failing call's thread, before any other pagoda call.
    pub fn pagoda_last_error_message() -> *const c_char;
    pub fn pagoda_clear_error();
}
