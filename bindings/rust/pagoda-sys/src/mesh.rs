//! mesh.h: the devices a model is served on, arranged on named axes.

use crate::common::pagoda_mesh_t;
use crate::status::pagoda_status_t;
use std::os::raw::c_char;

/// `pagoda_mesh_options_t`. Initialise with `pagoda_mesh_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_mesh_options_t {
    pub struct_size: u32,
    pub devices: *const c_char,
    pub axes: *const c_char,
}

extern "C" {
    pub fn pagoda_mesh_options_init(options: *mut pagoda_mesh_options_t, size: usize);
    pub fn pagoda_mesh_create(
        options: *const pagoda_mesh_options_t,
        out: *mut *mut pagoda_mesh_t,
    ) -> pagoda_status_t;
    pub fn pagoda_mesh_destroy(mesh: *mut pagoda_mesh_t);
    pub fn pagoda_mesh_device_count(mesh: *const pagoda_mesh_t) -> usize;
    pub fn pagoda_mesh_device_name(mesh: *const pagoda_mesh_t, index: usize) -> *const c_char;
    pub fn pagoda_mesh_device_count_v2(mesh: *const pagoda_mesh_t, count: *mut usize) -> pagoda_status_t;
    pub fn pagoda_mesh_device_name_v2(
        mesh: *const pagoda_mesh_t,
        index: usize,
        name: *mut *const c_char,
    ) -> pagoda_status_t;
}
