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
    /// GGUF's quantized block types: weights only, with no size per element (see `block`).
    Q8_0,
    Q4_0,
    Q4_K,
    Q5_K,
    Q6_K,
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
            sys::PAGODA_DTYPE_Q8_0 => Dtype::Q8_0,
            sys::PAGODA_DTYPE_Q4_0 => Dtype::Q4_0,
            sys::PAGODA_DTYPE_Q4_K => Dtype::Q4_K,
            sys::PAGODA_DTYPE_Q5_K => Dtype::Q5_K,
            sys::PAGODA_DTYPE_Q6_K => Dtype::Q6_K,
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
            Dtype::Q8_0 => sys::PAGODA_DTYPE_Q8_0,
            Dtype::Q4_0 => sys::PAGODA_DTYPE_Q4_0,
            Dtype::Q4_K => sys::PAGODA_DTYPE_Q4_K,
            Dtype::Q5_K => sys::PAGODA_DTYPE_Q5_K,
            Dtype::Q6_K => sys::PAGODA_DTYPE_Q6_K,
            Dtype::Other(raw) => raw,
        }
    }

    /// Bytes per element; 0 for the block types and a type the library does not know.
    pub fn size(self) -> usize {
        // SAFETY: accepts any value.
        unsafe { sys::pagoda_dtype_size(self.raw()) }
    }

    /// Values per block and bytes per block (1 and `size()` for the plain types); `None` for a
    /// type the library does not know.
    pub fn block(self) -> Option<(i64, usize)> {
        let (mut values, mut bytes) = (0i64, 0usize);
        // SAFETY: accepts any value; writes the two outputs, which live across the call.
        let status = unsafe { sys::pagoda_dtype_block(self.raw(), &mut values, &mut bytes) };
        (status == sys::PAGODA_OK).then_some((values, bytes))
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
