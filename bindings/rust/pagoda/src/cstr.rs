//! Strings across the boundary: Rust text to NUL-terminated C strings, and C strings (borrowed,
//! library-owned or fixed arrays) back to owned Rust strings.

use crate::error::{Error, Result, Status};
use pagoda_sys as sys;
use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

/// C bytes as a C string; `what` names the argument when they hold a NUL byte, which C would cut.
fn bytes_to_c(what: &str, bytes: &[u8]) -> Result<CString> {
    CString::new(bytes)
        .map_err(|_| Error::new(Status::InvalidArgument, format!("{} contains a NUL byte", what)))
}

/// A C string of `text`.
pub(crate) fn to_c(what: &str, text: &str) -> Result<CString> {
    bytes_to_c(what, text.as_bytes())
}

/// A path as the library reads it: its bytes (UTF-8 on the systems Pagoda runs on).
pub(crate) fn path_to_c(what: &str, path: &Path) -> Result<CString> {
    bytes_to_c(what, path.as_os_str().as_bytes())
}

/// C strings for optional arguments: `None` stays NULL.
pub(crate) fn opt_to_c(what: &str, text: Option<&str>) -> Result<Option<CString>> {
    text.map(|t| to_c(what, t)).transpose()
}

pub(crate) fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// Reads a borrowed C string as text (invalid UTF-8 becomes U+FFFD); "" for NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn text<'a>(p: *const c_char) -> Cow<'a, str> {
    if p.is_null() {
        Cow::Borrowed("")
    } else {
        CStr::from_ptr(p).to_string_lossy()
    }
}

/// Copies a borrowed C string; `None` for NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
pub(crate) unsafe fn from_c(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| text(p).into_owned())
}

/// Copies a fixed `char[N]` field up to its NUL (or its end, should the NUL be missing).
pub(crate) fn from_array(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Takes a string the library handed over (NUL-terminated, released with `pagoda_free`).
///
/// # Safety
/// `p` is NULL or a string the library returned with ownership; it is freed here.
pub(crate) unsafe fn take_owned(p: *mut c_char) -> String {
    let text = from_c(p).unwrap_or_default();
    sys::pagoda_free(p as *mut c_void);
    text
}

/// A slice from a pointer and a length, where the library leaves the pointer NULL for none.
///
/// # Safety
/// When `len > 0`, `p` points to `len` initialised values that outlive the returned slice.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if len == 0 || p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}
