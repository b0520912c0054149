//! Element types of weights, activations and KV caches.

use crate::convert::{FromC, ToC};
use pagoda_sys as sys;
use std::ffi::CStr;

/// A `pagoda_dtype_t`. Where the library takes `PAGODA_DTYPE_INVALID` (0) to mean "pick for
/// me", this crate uses `Option<Dtype>` and `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    F32,
    F16,
    BF16,
    I32,
    I64,
    I8,
    U8,
    /// A type this binding does not know (appended to the library later).
    Other(i32),
}

impl Dtype {
    /// `None` for 0, which the library reads as "not set".
    pub fn from_raw(raw: sys::pagoda_dtype_t) -> Option<Dtype> {
        Some(match raw {
            sys::PAGODA_DTYPE_INVALID => return None,
            sys::PAGODA_DTYPE_F32 => Dtype::F32,
            sys::PAGODA_DTYPE_F16 => Dtype::F16,
            sys::PAGODA_DTYPE_BF16 => Dtype::BF16,
            sys::PAGODA_DTYPE_I32 => Dtype::I32,
            sys::PAGODA_DTYPE_I64 => Dtype::I64,
            sys::PAGODA_DTYPE_I8 => Dtype::I8,
            sys::PAGODA_DTYPE_U8 => Dtype::U8,
            other => Dtype::Other(other),
        })
    }

    pub fn raw(self) -> sys::pagoda_dtype_t {
        match self {
            Dtype::F32 => sys::PAGODA_DTYPE_F32,
            Dtype::F16 => sys::PAGODA_DTYPE_F16,
            Dtype::BF16 => sys::PAGODA_DTYPE_BF16,
            Dtype::I32 => sys::PAGODA_DTYPE_I32,
            Dtype::I64 => sys::PAGODA_DTYPE_I64,
            Dtype::I8 => sys::PAGODA_DTYPE_I8,
            Dtype::U8 => sys::PAGODA_DTYPE_U8,
            Dtype::Other(raw) => raw,
        }
    }

    /// Bytes per element; 0 for a type the library does not know.
    pub fn size(self) -> usize {
        // SAFETY: accepts any value.
        unsafe { sys::pagoda_dtype_size(self.raw()) }
    }

    /// The library's lower-case name, such as `"bf16"`.
    pub fn name(self) -> String {
        // SAFETY: accepts any value; returns a static string, never NULL.
        unsafe { CStr::from_ptr(sys::pagoda_dtype_name(self.raw())) }.to_string_lossy().into_owned()
    }
}

/// Options fields where 0 means "the library picks".
impl FromC<sys::pagoda_dtype_t> for Option<Dtype> {
    fn from_c(c: &sys::pagoda_dtype_t) -> Option<Dtype> {
        Dtype::from_raw(*c)
    }
}

impl ToC<sys::pagoda_dtype_t> for Option<Dtype> {
    fn to_c(&self) -> sys::pagoda_dtype_t {
        self.map_or(sys::PAGODA_DTYPE_INVALID, Dtype::raw)
    }
}
