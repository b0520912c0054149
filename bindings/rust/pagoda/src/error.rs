//! Errors: the library's status and its thread-local message, read right after the failing call.

use pagoda_sys as sys;
use std::ffi::CStr;
use std::fmt;
use std::ptr::NonNull;

c_enum!(
    /// Why a call failed: a `pagoda_status_t` other than `PAGODA_OK`.
    ///
    /// Codes the library appends later arrive as `Other`, never as undefined behaviour.
    Status {
        InvalidArgument = sys::PAGODA_ERR_INVALID_ARGUMENT,
        OutOfMemory = sys::PAGODA_ERR_OUT_OF_MEMORY,
        NotFound = sys::PAGODA_ERR_NOT_FOUND,
        Io = sys::PAGODA_ERR_IO,
        Format = sys::PAGODA_ERR_FORMAT,
        Unsupported = sys::PAGODA_ERR_UNSUPPORTED,
        AbiMismatch = sys::PAGODA_ERR_ABI_MISMATCH,
        NotAPlugin = sys::PAGODA_ERR_NOT_A_PLUGIN,
        Backend = sys::PAGODA_ERR_BACKEND,
        InvalidHandle = sys::PAGODA_ERR_INVALID_HANDLE,
        AlreadyExists = sys::PAGODA_ERR_ALREADY_EXISTS,
        Cancelled = sys::PAGODA_ERR_CANCELLED,
        Empty = sys::PAGODA_ERR_EMPTY,
        Internal = sys::PAGODA_ERR_INTERNAL,
    }
);

impl Status {
    /// The library's name for the code, such as `"PAGODA_ERR_FORMAT"`.
    pub fn name(self) -> &'static str {
        // SAFETY: pagoda_status_string accepts any value and returns a static string, never NULL.
        let name = unsafe { CStr::from_ptr(sys::pagoda_status_string(self.raw())) };
        name.to_str().unwrap_or("PAGODA_ERR_UNKNOWN")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its status and the sentence the library gave (`pagoda_last_error_message()`),
/// or, for arguments refused before reaching the library, this crate's own sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// The error of the call that just returned `code` on this thread. The message is
    /// thread-local and overwritten by the next call, so this must come right after the call.
    pub(crate) fn last(code: sys::pagoda_status_t) -> Error {
        // SAFETY: never NULL; valid until the next pagoda call on this thread, and copied now.
        let message = unsafe { CStr::from_ptr(sys::pagoda_last_error_message()) };
        Error::new(Status::from_raw(code), message.to_string_lossy())
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{} ({})", self.message, self.status)
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// `Ok` for `PAGODA_OK`, else the error with this thread's message. Call it on the status of
/// the call just made, before any other pagoda call.
pub(crate) fn check(code: sys::pagoda_status_t) -> Result<()> {
    if code == sys::PAGODA_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

/// The handle a create or lookup wrote on success; NULL there would be a library bug, reported
/// as one (`what` names the handle).
pub(crate) fn non_null<T>(out: *mut T, what: &str) -> Result<NonNull<T>> {
    NonNull::new(out)
        .ok_or_else(|| Error::new(Status::Internal, format!("the library returned a NULL {}", what)))
}
