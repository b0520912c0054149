//! Multi-model placement (AlpaServe): simulate serving on a placement, search for one, and
//! measure the layer costs and the links between devices that a search and a plan price with.

use crate::convert::Defaults;
use crate::cstr::{opt_ptr, opt_to_c, path_to_c, take_owned, to_c};
use crate::error::{check, Result};
use crate::Mesh;
use pagoda_sys as sys;
use std::path::Path;
use std::ptr;

c_struct! {
    /// The traffic a placement is simulated on. `Default` gives the library's defaults.
    #[derive(Clone, Debug, PartialEq)]
    pub struct SimulateOptions options sys::pagoda_simulate_options_t {
        /// Requests per second for every model.
        pub rate_per_model: f64,
        /// When > 0: requests per second over all models, split evenly (overrides the above).
        pub total_rate: f64,
        /// Coefficient of variation of inter-arrival times; 1 = Poisson.
        pub cv: f64,
        /// SLO of models whose placement entry gives none; 0 = none.
        pub slo_seconds: f64,
        /// Simulated time.
        pub duration_seconds: f64,
        /// Same seed, same requests.
        pub seed: u64,
        /// Added to every request's latency.
        pub overhead_seconds: f64,
        /// Reject at arrival what would miss its SLO.
        pub reject_late: bool,
    }
}

/// Simulates serving Gamma-distributed requests on a placement (JSON, schema in plan.h) and
/// returns the result as JSON.
pub fn simulate(placement_json: &str, options: &SimulateOptions) -> Result<String> {
    let placement = to_c("placement_json", placement_json)?;
    let raw = options.to_raw();
    let mut result = ptr::null_mut();
    // SAFETY: a NUL-terminated string, an options struct and a valid out-pointer.
    check(unsafe { sys::pagoda_placement_simulate(placement.as_ptr(), &raw, &mut result) })?;
    // SAFETY: a string the library handed over.
    Ok(unsafe { take_owned(result) })
}

/// Searches for a placement of several models on a cluster (spec JSON, schema in plan.h),
/// scored on `workload` (`None`: the defaults); returns the placement as JSON.
pub fn search(spec_json: &str, workload: Option<&SimulateOptions>) -> Result<String> {
    let spec = to_c("spec_json", spec_json)?;
    let raw = workload.map(SimulateOptions::to_raw);
    let mut result = ptr::null_mut();
    let workload = raw.as_ref().map_or(ptr::null(), |r| r as *const sys::pagoda_simulate_options_t);
    // SAFETY: a NUL-terminated string, NULL or an options struct, and a valid out-pointer.
    check(unsafe { sys::pagoda_placement_search(spec.as_ptr(), workload, &mut result) })?;
    // SAFETY: a string the library handed over.
    Ok(unsafe { take_owned(result) })
}

/// How [`profile_costs`] times. `Default` gives the library's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct CostProfileOptions {
    /// L: the longest step and the longest context timed.
    pub max_tokens: i64,
    /// t(l, 0) is timed for l = g, 2g, …, L.
    pub granularity: i64,
    /// The context term is fitted on grid × grid points.
    pub grid: i32,
    /// Timed runs per point, the fastest kept.
    pub repeats: i32,
    /// Devices kept busy with the same work while timing; `None`: timed alone.
    pub beside: Option<String>,
}

impl Default for CostProfileOptions {
    fn default() -> CostProfileOptions {
        let raw = sys::pagoda_cost_profile_options_t::defaults();
        CostProfileOptions {
            max_tokens: raw.max_tokens,
            granularity: raw.granularity,
            grid: raw.grid,
            repeats: raw.repeats,
            beside: None, // the library's default is NULL
        }
    }
}

/// Times a model's decoder layers on `device` (such as "cpu:0", or a group such as "cpu:0-1"
/// timed as one tensor-parallel stage) and adds the entry to `cost_file`, which a placement
/// spec's `"costs"` and [`crate::PlanOptions::cost_file`] read; returns the entry as JSON.
pub fn profile_costs(
    model_path: impl AsRef<Path>,
    device: &str,
    options: &CostProfileOptions,
    cost_file: impl AsRef<Path>,
) -> Result<String> {
    let model = path_to_c("model_path", model_path.as_ref())?;
    let device = to_c("device", device)?;
    let file = path_to_c("cost_file", cost_file.as_ref())?;
    let beside = opt_to_c("beside", options.beside.as_deref())?;
    let mut raw = sys::pagoda_cost_profile_options_t::defaults();
    raw.max_tokens = options.max_tokens;
    raw.granularity = options.granularity;
    raw.grid = options.grid;
    raw.repeats = options.repeats;
    raw.beside = opt_ptr(&beside);
    let mut entry = ptr::null_mut();
    // SAFETY: NUL-terminated strings that outlive the call, an options struct and a valid
    // out-pointer.
    check(unsafe {
        sys::pagoda_cost_profile(model.as_ptr(), device.as_ptr(), &raw, file.as_ptr(), &mut entry)
    })?;
    // SAFETY: a string the library handed over.
    Ok(unsafe { take_owned(entry) })
}

c_struct! {
    /// How [`profile_links`] times the links. `Default` gives the library's defaults.
    #[derive(Clone, Debug, PartialEq)]
    pub struct LinkProfileOptions options sys::pagoda_link_profile_options_t {
        /// The smallest buffer timed, a multiple of 4.
        pub min_bytes: i64,
        /// The largest: sizes double from `min_bytes` up to it.
        pub max_bytes: i64,
        /// Timed rounds over every size; each size's median kept.
        pub repeats: i32,
    }
}

/// Times the links between `mesh`'s devices (a two-device all-reduce and a ping-pong per path:
/// within a process, within a machine, across machines) and, on rank 0, adds them to
/// `cost_file` when given; returns the links as a JSON array. Over several processes every rank
/// calls it at the same point.
pub fn profile_links(mesh: &Mesh, options: &LinkProfileOptions, cost_file: Option<&Path>) -> Result<String> {
    let file = cost_file.map(|p| path_to_c("cost_file", p)).transpose()?;
    let raw = options.to_raw();
    let mut links = ptr::null_mut();
    // SAFETY: a live mesh, an options struct, NULL or a NUL-terminated string that outlives the
    // call, and a valid out-pointer.
    check(unsafe {
        sys::pagoda_link_profile(
            mesh.as_ptr(),
            &raw,
            file.as_ref().map_or(ptr::null(), |f| f.as_ptr()),
            &mut links,
        )
    })?;
    // SAFETY: a string the library handed over.
    Ok(unsafe { take_owned(links) })
}
