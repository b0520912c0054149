//! Multi-model placement (AlpaServe): simulate serving on a placement, or search for one.

use crate::cstr::{take_owned, to_c};
use crate::error::{check, Result};
use pagoda_sys as sys;
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
