//! Conversions between pagoda-sys's C structs and enums and this crate's types, so that each
//! struct's fields are listed once here (`c_struct!`) and each enum's values once (`c_enum!`),
//! instead of once in the declaration and again in every copy to and from C.

use crate::cstr::from_array;
use crate::error::{check, Result};
use pagoda_sys as sys;
use std::os::raw::c_char;

/// A field as this crate holds it, read from the field as C holds it.
pub(crate) trait FromC<C> {
    fn from_c(c: &C) -> Self;
}

/// A field as this crate holds it, written back in C's form.
pub(crate) trait ToC<C> {
    fn to_c(&self) -> C;
}

impl<T: Copy> FromC<T> for T {
    fn from_c(c: &T) -> T {
        *c
    }
}

impl<T: Copy> ToC<T> for T {
    fn to_c(&self) -> T {
        *self
    }
}

/// C's `int32_t` flags: nonzero is true.
impl FromC<i32> for bool {
    fn from_c(c: &i32) -> bool {
        *c != 0
    }
}

impl ToC<i32> for bool {
    fn to_c(&self) -> i32 {
        i32::from(*self)
    }
}

/// Token ids and counts where the library writes a negative value (-1) for "none".
impl FromC<i32> for Option<i32> {
    fn from_c(c: &i32) -> Option<i32> {
        if *c < 0 {
            None
        } else {
            Some(*c)
        }
    }
}

impl ToC<i32> for Option<i32> {
    fn to_c(&self) -> i32 {
        self.unwrap_or(-1)
    }
}

/// A fixed `char[N]` field, up to its NUL.
impl<const N: usize> FromC<[c_char; N]> for String {
    fn from_c(c: &[c_char; N]) -> String {
        from_array(c)
    }
}

/// A C struct the library fills: the caller zeroes it and sets `struct_size` (ABI rule 6).
pub(crate) trait Filled {
    fn sized() -> Self;
}

macro_rules! filled {
    ($($t:ident),* $(,)?) => {$(
        impl Filled for sys::$t {
            fn sized() -> sys::$t {
                // SAFETY: plain data (integers, floats, char arrays, NULL pointers): all-zero
                // is a valid value.
                let mut raw: sys::$t = unsafe { std::mem::zeroed() };
                raw.struct_size = std::mem::size_of::<sys::$t>() as u32;
                raw
            }
        }
    )*};
}

filled!(
    pagoda_device_info_t,
    pagoda_model_info_t,
    pagoda_tokenizer_info_t,
    pagoda_kv_cache_stats_t,
    pagoda_plan_stage_t,
    pagoda_plan_summary_t,
    pagoda_output_t,
    pagoda_engine_stats_t,
    pagoda_device_stats_t,
    pagoda_kernel_choice_info_t,
    pagoda_engine_metrics_t,
    pagoda_quantize_stats_t,
);

/// A C options struct, made by its `pagoda_X_options_init` with the library's defaults.
pub(crate) trait Defaults {
    fn defaults() -> Self;
}

macro_rules! defaults {
    ($($t:ident = $init:ident),* $(,)?) => {$(
        impl Defaults for sys::$t {
            fn defaults() -> sys::$t {
                // SAFETY: all-zero is a valid options struct (no callback, NULL pointers); init
                // then writes the defaults for the size given.
                let mut raw: sys::$t = unsafe { std::mem::zeroed() };
                unsafe { sys::$init(&mut raw, std::mem::size_of::<sys::$t>()) };
                raw
            }
        }
    )*};
}

defaults!(
    pagoda_model_options_t = pagoda_model_options_init,
    pagoda_chat_template_options_t = pagoda_chat_template_options_init,
    pagoda_mesh_options_t = pagoda_mesh_options_init,
    pagoda_kv_cache_options_t = pagoda_kv_cache_options_init,
    pagoda_plan_options_t = pagoda_plan_options_init,
    pagoda_simulate_options_t = pagoda_simulate_options_init,
    pagoda_cost_profile_options_t = pagoda_cost_profile_options_init,
    pagoda_link_profile_options_t = pagoda_link_profile_options_init,
    pagoda_request_options_t = pagoda_request_options_init,
    pagoda_engine_options_t = pagoda_engine_options_init,
    pagoda_quantize_options_t = pagoda_quantize_options_init,
);

/// Calls a getter on a freshly sized C struct and converts what it filled. `get` returns the
/// getter's status, checked before anything is read.
pub(crate) fn fetch<R: Filled, T: FromC<R>>(get: impl FnOnce(&mut R) -> sys::pagoda_status_t) -> Result<T> {
    let mut raw = R::sized();
    check(get(&mut raw))?;
    Ok(T::from_c(&raw))
}

/// Declares a Rust enum for a C enum carried as `int32_t`: known values by name, anything else
/// kept as `Other` so that values the library appends round-trip.
macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $raw:path),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value this binding does not know (appended to the library later).
            Other(i32),
        }

        impl $name {
            pub fn from_raw(raw: i32) -> $name {
                match raw {
                    $($raw => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            pub fn raw(self) -> i32 {
                match self {
                    $($name::$variant => $raw,)*
                    $name::Other(raw) => raw,
                }
            }
        }

        impl $crate::convert::FromC<i32> for $name {
            fn from_c(c: &i32) -> $name {
                $name::from_raw(*c)
            }
        }

        impl $crate::convert::ToC<i32> for $name {
            fn to_c(&self) -> i32 {
                self.raw()
            }
        }
    };
}

/// Declares a struct of this crate whose fields are those of a C struct, under the same names,
/// each converted with [`FromC`] (and [`ToC`]):
/// - `pub struct X from sys::y_t { ... }`: what the library fills; `X: FromC<sys::y_t>`.
/// - `pub struct X options sys::y_t { ... }`: options; `Default` is the library's defaults,
///   and `to_raw` gives the C struct (its defaults, with these fields written over them).
macro_rules! c_struct {
    (
        $(#[$attr:meta])*
        pub struct $name:ident from $raw:ty { $($(#[$fattr:meta])* pub $field:ident: $ty:ty),* $(,)? }
    ) => {
        $(#[$attr])*
        pub struct $name { $($(#[$fattr])* pub $field: $ty,)* }

        impl $crate::convert::FromC<$raw> for $name {
            fn from_c(raw: &$raw) -> $name {
                $name { $($field: $crate::convert::FromC::from_c(&raw.$field),)* }
            }
        }
    };
    (
        $(#[$attr:meta])*
        pub struct $name:ident options $raw:ty { $($(#[$fattr:meta])* pub $field:ident: $ty:ty),* $(,)? }
    ) => {
        c_struct!($(#[$attr])* pub struct $name from $raw { $($(#[$fattr])* pub $field: $ty),* });

        impl Default for $name {
            fn default() -> $name {
                $crate::convert::FromC::from_c(&<$raw as $crate::convert::Defaults>::defaults())
            }
        }

        impl $name {
            pub(crate) fn to_raw(&self) -> $raw {
                let mut raw = <$raw as $crate::convert::Defaults>::defaults();
                $(raw.$field = $crate::convert::ToC::to_c(&self.$field);)*
                raw
            }
        }
    };
}
