//! Backends: the plugins that bring devices and kernels, loaded into a process-wide registry.

use crate::convert::fetch;
use crate::cstr::{from_c, opt_ptr, opt_to_c, path_to_c, to_c};
use crate::error::{check, non_null, Error, Result, Status};
use pagoda_sys as sys;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

/// A loaded backend plugin. The registry owns it: the handle stays valid until
/// [`unload_all`] or the end of the process, so it is `Copy` and needs no `Drop`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backend {
    raw: NonNull<sys::pagoda_backend_t>,
}

// SAFETY: backend.h says every registry function, and every function on a backend handle, is
// "safe from any thread"; the handle is never freed while it may be used (unload_all is unsafe).
unsafe impl Send for Backend {}
// SAFETY: as for Send: all its functions may run from several threads at once.
unsafe impl Sync for Backend {}

c_enum!(
    /// What kind of processor a device is.
    DeviceKind {
        Cpu = sys::PAGODA_DEVICE_CPU,
        Gpu = sys::PAGODA_DEVICE_GPU,
    }
);

c_struct! {
    /// A device's description, as its backend gives it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DeviceInfo from sys::pagoda_device_info_t {
        pub kind: DeviceKind,
        /// `PAGODA_DEVICE_*` bits; see [`DeviceInfo::host_accessible`] and
        /// [`DeviceInfo::uses_host_weights`].
        pub flags: u32,
        /// Threads the backend uses (CPU) or multiprocessors (GPU).
        pub compute_units: i32,
        pub total_memory: u64,
        pub free_memory: u64,
        /// Model name, such as "NVIDIA H100".
        pub name: String,
        /// Architecture tag, such as "x86_64-avx2" or "sm_90".
        pub arch: String,
    }
}

impl DeviceInfo {
    /// The host can read and write the device's memory directly.
    pub fn host_accessible(&self) -> bool {
        self.flags & sys::PAGODA_DEVICE_HOST_ACCESSIBLE != 0
    }

    /// Kernels can run on weights in mmapped host memory.
    pub fn uses_host_weights(&self) -> bool {
        self.flags & sys::PAGODA_DEVICE_USES_HOST_WEIGHTS != 0
    }
}

/// A plugin that a load or discovery skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedBackend {
    pub path: PathBuf,
    pub error: Error,
}

/// Loads every `libpagoda-backend-<name>.so` on `search_path` (colon-separated folders), or,
/// with `None`, on `PAGODA_BACKEND_PATH` and then libpagoda's own folder. Plugins that fail to
/// load are skipped (see [`skipped`]). Returns how many were newly loaded.
pub fn discover(search_path: Option<&str>) -> Result<usize> {
    let path = opt_to_c("search_path", search_path)?;
    let mut loaded = 0usize;
    // SAFETY: a NULL or NUL-terminated path, and a valid out-pointer.
    check(unsafe { sys::pagoda_backends_discover(opt_ptr(&path), &mut loaded) })?;
    Ok(loaded)
}

/// The number of backends in the registry.
pub fn count() -> usize {
    // SAFETY: no arguments, no failure.
    unsafe { sys::pagoda_backend_count() }
}

/// Every backend in the registry, in load order.
pub fn all() -> Result<Vec<Backend>> {
    (0..count()).map(Backend::get).collect()
}

/// The plugins skipped by loads and discoveries so far.
pub fn skipped() -> Result<Vec<SkippedBackend>> {
    // SAFETY: no arguments, no failure.
    let n = unsafe { sys::pagoda_backend_skipped_count() };
    let mut list = Vec::with_capacity(n);
    for index in 0..n {
        let (mut path, mut status, mut message) = (ptr::null(), sys::PAGODA_OK, ptr::null());
        // SAFETY: valid out-pointers; the strings live until unload_all and are copied at once.
        check(unsafe { sys::pagoda_backend_skipped(index, &mut path, &mut status, &mut message) })?;
        let (path, message) =
            unsafe { (from_c(path).unwrap_or_default(), from_c(message).unwrap_or_default()) };
        list.push(SkippedBackend {
            path: PathBuf::from(path),
            error: Error::new(Status::from_raw(status), message),
        });
    }
    Ok(list)
}

/// Destroys every loaded backend and clears the skipped list.
///
/// # Safety
/// Every [`Backend`] handle obtained before becomes dangling and must not be used again, and
/// nothing that uses a backend (engines, KV caches, meshes) may be alive; no other thread may
/// use a backend meanwhile.
pub unsafe fn unload_all() {
    sys::pagoda_backends_unload_all()
}

impl Backend {
    fn from_out(raw: *mut sys::pagoda_backend_t) -> Result<Backend> {
        Ok(Backend { raw: non_null(raw, "backend")? })
    }

    /// Loads the plugin at `path` (the handle loaded first, if it was loaded already). `config`
    /// is the plugin's `key=value,...` string; `None` reads `PAGODA_BACKEND_<NAME>_CONFIG`.
    pub fn load(path: &Path, config: Option<&str>) -> Result<Backend> {
        let path = path_to_c("path", path)?;
        let config = opt_to_c("config", config)?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated strings (config may be NULL) and a valid out-pointer.
        check(unsafe { sys::pagoda_backend_load(path.as_ptr(), opt_ptr(&config), &mut out) })?;
        Backend::from_out(out)
    }

    /// The backend at `index` in load order.
    pub fn get(index: usize) -> Result<Backend> {
        let mut out = ptr::null_mut();
        // SAFETY: a valid out-pointer.
        check(unsafe { sys::pagoda_backend_get(index, &mut out) })?;
        Backend::from_out(out)
    }

    /// The backend registered under `name`, such as "cpu".
    pub fn find(name: &str) -> Result<Backend> {
        let name = to_c("name", name)?;
        let mut out = ptr::null_mut();
        // SAFETY: a NUL-terminated name and a valid out-pointer.
        check(unsafe { sys::pagoda_backend_find(name.as_ptr(), &mut out) })?;
        Backend::from_out(out)
    }

    /// A string getter that answers NULL for a dead handle (it has no status to say so).
    fn text(
        &self,
        what: &str,
        get: unsafe extern "C" fn(*const sys::pagoda_backend_t) -> *const std::os::raw::c_char,
    ) -> Result<String> {
        // SAFETY: a live handle (see the type's docs); the string lives as long as the backend
        // and is copied at once.
        unsafe { from_c(get(self.raw.as_ptr())) }.ok_or_else(|| {
            Error::new(Status::InvalidHandle, format!("the backend has no {} (an invalid handle)", what))
        })
    }

    /// The short name, such as "cpu".
    pub fn name(&self) -> Result<String> {
        self.text("name", sys::pagoda_backend_name)
    }

    /// One line for humans: library versions, build options.
    pub fn description(&self) -> Result<String> {
        self.text("description", sys::pagoda_backend_description)
    }

    /// The file the plugin was loaded from.
    pub fn path(&self) -> Result<PathBuf> {
        self.text("path", sys::pagoda_backend_path).map(PathBuf::from)
    }

    /// How many devices the backend drives.
    pub fn device_count(&self) -> Result<usize> {
        let mut count = 0i32;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_backend_device_count(self.raw.as_ptr(), &mut count) })?;
        usize::try_from(count)
            .map_err(|_| Error::new(Status::Internal, format!("the backend has {} devices", count)))
    }

    /// Describes device `device` (0 ≤ device < [`Backend::device_count`]).
    pub fn device_info(&self, device: usize) -> Result<DeviceInfo> {
        let device = i32::try_from(device).map_err(|_| {
            Error::new(Status::InvalidArgument, format!("device index {} is out of range", device))
        })?;
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|info| unsafe { sys::pagoda_backend_device_info(self.raw.as_ptr(), device, info) })
    }

    /// The raw handle, for calls this crate does not wrap (such as the plugin's interface table).
    pub fn as_ptr(&self) -> *mut sys::pagoda_backend_t {
        self.raw.as_ptr()
    }
}
