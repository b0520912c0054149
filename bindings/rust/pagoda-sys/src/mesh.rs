//! mesh.h: the devices a model is served on, arranged on named axes.

use crate::common::pagoda_mesh_t;
use crate::status::pagoda_status_t;
use std::os::raw::{c_char, c_void};

/// A host's broadcast among every process of its launch, such as `MPI_Bcast` on
/// `MPI_COMM_WORLD`: every rank passes `bytes` at `data`; on return each holds rank `root`'s.
/// Returns `PAGODA_OK`, or any other status on failure.
pub type pagoda_bootstrap_broadcast_fn = Option<
    unsafe extern "C" fn(user: *mut c_void, data: *mut c_void, bytes: usize, root: i32) -> pagoda_status_t,
>;

/// `pagoda_mesh_options_t`. Initialise with `pagoda_mesh_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_mesh_options_t {
    pub struct_size: u32,
    pub devices: *const c_char,
    pub axes: *const c_char,
    /// -1 (the default) = from the environment.
    pub rank: i32,
    /// 0 (the default) = from the environment.
    pub world_size: i32,
    /// `host:port`; NULL = `PAGODA_RENDEZVOUS`, or found under a one-machine `mpirun`.
    pub rendezvous: *const c_char,
    pub bootstrap: pagoda_bootstrap_broadcast_fn,
    pub bootstrap_user: *mut c_void,
    /// 0 = 30 s.
    pub timeout_ms: i64,
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
    pub fn pagoda_mesh_world(
        mesh: *const pagoda_mesh_t,
        rank: *mut i32,
        world_size: *mut i32,
    ) -> pagoda_status_t;
}
