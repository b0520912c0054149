//! log.h: where libpagoda's log lines go and which are written.

use crate::status::pagoda_status_t;
use std::os::raw::{c_char, c_void};

/// `pagoda_log_level_t`.
pub type pagoda_log_level_t = i32;

pub const PAGODA_LOG_DEBUG: pagoda_log_level_t = 0;
pub const PAGODA_LOG_INFO: pagoda_log_level_t = 1;
pub const PAGODA_LOG_WARN: pagoda_log_level_t = 2;
pub const PAGODA_LOG_ERROR: pagoda_log_level_t = 3;
pub const PAGODA_LOG_OFF: pagoda_log_level_t = 4;

/// Receives one log line, on whichever thread logs; calls never overlap.
pub type pagoda_log_callback_t =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: pagoda_log_level_t, message: *const c_char)>;

extern "C" {
    /// Not from inside a log callback. When it returns, the previous callback is not running
    /// and will not be called again.
    pub fn pagoda_log_set_callback(callback: pagoda_log_callback_t, user_data: *mut c_void);
    pub fn pagoda_log_set_level(level: pagoda_log_level_t) -> pagoda_status_t;
    pub fn pagoda_log_get_level() -> pagoda_log_level_t;
}
