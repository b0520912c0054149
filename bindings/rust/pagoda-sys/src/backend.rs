//! backend.h, the host-facing part: loading, discovering and listing backends and their
//! devices. The plugin ABI (the interface, kernel and collective tables) is for plugins and
//! tools that drive kernels themselves; this crate declares the interface table opaque.

use crate::common::{pagoda_backend_iface_t, pagoda_backend_t};
use crate::status::pagoda_status_t;
use std::os::raw::c_char;

/// `pagoda_device_kind_t`.
pub type pagoda_device_kind_t = i32;

pub const PAGODA_DEVICE_CPU: pagoda_device_kind_t = 0;
pub const PAGODA_DEVICE_GPU: pagoda_device_kind_t = 1;

/// `pagoda_device_info_t::flags`: the host can read and write device memory directly.
pub const PAGODA_DEVICE_HOST_ACCESSIBLE: u32 = 1;
/// `pagoda_device_info_t::flags`: kernels can run on weights in mmapped host memory.
pub const PAGODA_DEVICE_USES_HOST_WEIGHTS: u32 = 2;

/// `pagoda_device_info_t`: a device's description; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_device_info_t {
    pub struct_size: u32,
    /// A `pagoda_device_kind_t`.
    pub kind: i32,
    pub flags: u32,
    pub compute_units: i32,
    pub total_memory: u64,
    pub free_memory: u64,
    pub name: [c_char; 128],
    pub arch: [c_char; 32],
}

extern "C" {
    pub fn pagoda_backend_load(
        path: *const c_char,
        config: *const c_char,
        out: *mut *mut pagoda_backend_t,
    ) -> pagoda_status_t;
    pub fn pagoda_backends_discover(search_path: *const c_char, loaded_count: *mut usize) -> pagoda_status_t;
    pub fn pagoda_backend_count() -> usize;
    pub fn pagoda_backend_get(index: usize, out: *mut *mut pagoda_backend_t) -> pagoda_status_t;
    pub fn pagoda_backend_find(name: *const c_char, out: *mut *mut pagoda_backend_t) -> pagoda_status_t;
    pub fn pagoda_backend_name(backend: *const pagoda_backend_t) -> *const c_char;
    pub fn pagoda_backend_description(backend: *const pagoda_backend_t) -> *const c_char;
    pub fn pagoda_backend_path(backend: *const pagoda_backend_t) -> *const c_char;
    pub fn pagoda_backend_device_count(backend: *const pagoda_backend_t, count: *mut i32) -> pagoda_status_t;
    pub fn pagoda_backend_device_info(
        backend: *const pagoda_backend_t,
        device: i32,
        info: *mut pagoda_device_info_t,
    ) -> pagoda_status_t;
    pub fn pagoda_backend_interface(backend: *const pagoda_backend_t) -> *const pagoda_backend_iface_t;
    pub fn pagoda_backend_skipped_count() -> usize;
    pub fn pagoda_backend_skipped(
        index: usize,
        path: *mut *const c_char,
        status: *mut pagoda_status_t,
        message: *mut *const c_char,
    ) -> pagoda_status_t;
    /// Invalidates every backend handle; nothing using a backend may be alive.
    pub fn pagoda_backends_unload_all();
}
