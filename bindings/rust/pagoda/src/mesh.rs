//! Meshes: the devices a model is served on, arranged on named axes.

use crate::convert::Defaults;
use crate::cstr::{from_c, opt_ptr, opt_to_c};
use crate::error::{check, non_null, Result};
use pagoda_sys as sys;
use std::ptr::{self, NonNull};

/// How to build a mesh; the default is the one device `cpu:0` with no axes, in a world of
/// processes read from the environment (one process when nothing says otherwise).
///
/// A mesh may span the processes of one launch (ranks started by `mpirun`, or by the host): each
/// names its own devices, every process as many, and the mesh is their lists rank after rank,
/// named like "cpu:0@rank1". [`Mesh::new`] then blocks until every rank has called it. The ranks
/// meet on a TCP rendezvous address; the C bootstrap callback (the host's own broadcast, such as
/// `MPI_Bcast`) is not offered by this crate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeshOptions {
    /// This process's device list, such as "cpu:0-1" or "cuda:0-3,cuda:6"; `None` = "cpu:0".
    pub devices: Option<String>,
    /// Axis sizes over the whole mesh, such as "pp=2,tp=4" (names pp, tp, ep, kvp, dp); `None` =
    /// the plan decides.
    pub axes: Option<String>,
    /// This process's rank in its launch; `None` = `PAGODA_RANK`, else OpenMPI's
    /// `OMPI_COMM_WORLD_RANK`, else 0.
    pub rank: Option<i32>,
    /// Processes in the launch; `None` = `PAGODA_WORLD_SIZE`, else `OMPI_COMM_WORLD_SIZE`,
    /// else 1.
    pub world_size: Option<i32>,
    /// "host:port" (or "[v6]:port") where rank 0 listens and the others connect; `None` =
    /// `PAGODA_RENDEZVOUS`, else, under a one-machine `mpirun`, a port picked from its job id.
    pub rendezvous: Option<String>,
    /// How long a rank waits for the others, in milliseconds; 0 = 30 s.
    pub timeout_ms: i64,
}

/// Devices arranged on named axes. Dropping it releases the handle; plans, KV caches and
/// engines made with it keep what they need.
#[derive(Debug)]
pub struct Mesh {
    raw: NonNull<sys::pagoda_mesh_t>,
}

// SAFETY: mesh.h: a mesh never changes after creation and its getters are safe from any
// thread; nothing ties it to the creating thread, and destroy runs from Drop (`&mut self`).
unsafe impl Send for Mesh {}
// SAFETY: every `&self` use (the getters, and being read by plan, cache and engine creation,
// which only read it) is safe from several threads at once.
unsafe impl Sync for Mesh {}

impl Mesh {
    /// Builds a mesh (discovering backends first when none is loaded).
    pub fn new(options: &MeshOptions) -> Result<Mesh> {
        let devices = opt_to_c("devices", options.devices.as_deref())?;
        let axes = opt_to_c("axes", options.axes.as_deref())?;
        let rendezvous = opt_to_c("rendezvous", options.rendezvous.as_deref())?;
        let mut raw = sys::pagoda_mesh_options_t::defaults();
        raw.devices = opt_ptr(&devices);
        raw.axes = opt_ptr(&axes);
        if let Some(rank) = options.rank {
            raw.rank = rank;
        }
        if let Some(world_size) = options.world_size {
            raw.world_size = world_size;
        }
        raw.rendezvous = opt_ptr(&rendezvous);
        raw.timeout_ms = options.timeout_ms;
        let mut out = ptr::null_mut();
        // SAFETY: the strings outlive the call; a valid out-pointer.
        check(unsafe { sys::pagoda_mesh_create(&raw, &mut out) })?;
        Ok(Mesh { raw: non_null(out, "mesh")? })
    }

    /// The number of devices.
    pub fn device_count(&self) -> Result<usize> {
        let mut count = 0usize;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_mesh_device_count_v2(self.raw.as_ptr(), &mut count) })?;
        Ok(count)
    }

    /// The name of the `index`-th device, such as "cpu:0".
    pub fn device_name(&self, index: usize) -> Result<String> {
        let mut name = ptr::null();
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_mesh_device_name_v2(self.raw.as_ptr(), index, &mut name) })?;
        // SAFETY: the string lives as long as the mesh and is copied at once.
        Ok(unsafe { from_c(name) }.unwrap_or_default())
    }

    /// This process's rank and the number of processes the mesh spans: `(0, 1)` for a mesh in
    /// one process.
    pub fn world(&self) -> Result<(i32, i32)> {
        let (mut rank, mut world_size) = (0i32, 0i32);
        // SAFETY: a live handle and valid out-pointers.
        check(unsafe { sys::pagoda_mesh_world(self.raw.as_ptr(), &mut rank, &mut world_size) })?;
        Ok((rank, world_size))
    }

    /// Every device's name, in mesh order.
    pub fn device_names(&self) -> Result<Vec<String>> {
        (0..self.device_count()?).map(|i| self.device_name(i)).collect()
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pagoda_mesh_t {
        self.raw.as_ptr()
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`).
        unsafe { sys::pagoda_mesh_destroy(self.raw.as_ptr()) }
    }
}
