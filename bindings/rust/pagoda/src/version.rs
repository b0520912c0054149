//! The library's version, and the version of the headers this binding was written against.

use pagoda_sys as sys;
use std::ffi::CStr;

/// The version of the headers this binding declares, as `major·10000 + minor·100 + patch`.
pub const HEADER_VERSION_NUMBER: i32 = sys::PAGODA_VERSION_NUMBER;

/// The running library's version, such as `"0.1.0"`.
pub fn version() -> String {
    // SAFETY: a static string, never NULL.
    unsafe { CStr::from_ptr(sys::pagoda_version()) }.to_string_lossy().into_owned()
}

/// The running library's version number, comparable with [`HEADER_VERSION_NUMBER`].
pub fn version_number() -> i32 {
    // SAFETY: no arguments, no failure.
    unsafe { sys::pagoda_version_number() }
}

/// Whether the running library speaks the ABI this binding was written for (same major).
pub fn abi_compatible() -> bool {
    version_number() / 10000 == HEADER_VERSION_NUMBER / 10000
}
