//! version.h: the version of the headers this crate was written from, and of the library.

use std::os::raw::c_char;

pub const PAGODA_VERSION_MAJOR: i32 = 0;
pub const PAGODA_VERSION_MINOR: i32 = 1;
pub const PAGODA_VERSION_PATCH: i32 = 0;
pub const PAGODA_VERSION_NUMBER: i32 =
    PAGODA_VERSION_MAJOR * 10000 + PAGODA_VERSION_MINOR * 100 + PAGODA_VERSION_PATCH;

extern "C" {
    pub fn pagoda_version() -> *const c_char;
    pub fn pagoda_version_number() -> i32;
}
