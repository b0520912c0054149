//! Plans: where each layer of a model runs on a mesh, and how a long prompt is sliced.

use crate::convert::{fetch, Defaults};
use crate::cstr::{from_c, opt_ptr, opt_to_c, path_to_c, take_owned, to_c};
use crate::error::{check, non_null, Result};
use crate::mesh::Mesh;
use crate::model::Model;
use pagoda_sys as sys;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

c_enum!(
    /// What the stage partition minimises.
    Objective {
        /// One batch through the pipeline: Σ t_i.
        Latency = sys::PAGODA_PLAN_LATENCY,
        /// B micro-batches: Σ t_i + (B − 1)·max t_i.
        Throughput = sys::PAGODA_PLAN_THROUGHPUT,
    }
);

/// How to plan. `Default` gives the library's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    pub objective: Objective,
    /// B for [`Objective::Throughput`].
    pub micro_batches: i32,
    /// Exactly this many stages; 0 = the planner's choice.
    pub stages: i32,
    /// Every stage on this many devices; 0 = the planner's choice.
    pub tensor_parallel: i32,
    /// Device preset, "h100" or "cpu"; `None` = "cpu".
    pub device: Option<String>,
    /// Measured layer costs; `None` = the analytic cost model.
    pub cost_file: Option<PathBuf>,
    /// "NxM" (nodes × devices per node); `None` = one node of the mesh's devices.
    pub mesh_shape: Option<String>,
    /// New tokens per pipeline step, sizing stage times.
    pub step_tokens: i64,
    /// Cached tokens before them.
    pub context_tokens: i64,
    /// KV-cache tokens every layer reserves.
    pub kv_tokens: i64,
    /// > 0: also slice a prompt this long across the stages.
    pub prompt_tokens: i64,
    /// Slices are multiples of this many tokens.
    pub granularity: i64,
    /// Skip bottleneck candidates closer than this; 0 = exact.
    pub epsilon_seconds: f64,
    /// Every stage splits a mixture of experts' experts into this many groups of its devices
    /// (the mesh's `ep` axis); 0 = the planner's choice. Must be 0 or 1 for a dense model.
    pub expert_parallel: i32,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        let raw = sys::pagoda_plan_options_t::defaults();
        // SAFETY: the default strings, if any, are static.
        let (device, cost_file, mesh_shape) =
            unsafe { (from_c(raw.device), from_c(raw.cost_file), from_c(raw.mesh_shape)) };
        PlanOptions {
            objective: Objective::from_raw(raw.objective),
            micro_batches: raw.micro_batches,
            stages: raw.stages,
            tensor_parallel: raw.tensor_parallel,
            device,
            cost_file: cost_file.map(PathBuf::from),
            mesh_shape,
            step_tokens: raw.step_tokens,
            context_tokens: raw.context_tokens,
            kv_tokens: raw.kv_tokens,
            prompt_tokens: raw.prompt_tokens,
            granularity: raw.granularity,
            epsilon_seconds: raw.epsilon_seconds,
            expert_parallel: raw.expert_parallel,
        }
    }
}

/// PlanOptions as C reads it, with the strings its pointers point into.
struct RawPlanOptions {
    raw: sys::pagoda_plan_options_t,
    _strings: [Option<CString>; 3],
}

impl PlanOptions {
    fn to_raw(&self) -> Result<RawPlanOptions> {
        let device = opt_to_c("device", self.device.as_deref())?;
        let cost_file = self.cost_file.as_deref().map(|p| path_to_c("cost_file", p)).transpose()?;
        let mesh_shape = opt_to_c("mesh_shape", self.mesh_shape.as_deref())?;
        let mut raw = sys::pagoda_plan_options_t::defaults();
        raw.objective = self.objective.raw();
        raw.micro_batches = self.micro_batches;
        raw.stages = self.stages;
        raw.tensor_parallel = self.tensor_parallel;
        raw.device = opt_ptr(&device);
        raw.cost_file = opt_ptr(&cost_file);
        raw.mesh_shape = opt_ptr(&mesh_shape);
        raw.step_tokens = self.step_tokens;
        raw.context_tokens = self.context_tokens;
        raw.kv_tokens = self.kv_tokens;
        raw.prompt_tokens = self.prompt_tokens;
        raw.granularity = self.granularity;
        raw.epsilon_seconds = self.epsilon_seconds;
        raw.expert_parallel = self.expert_parallel;
        // Moving the CStrings moves no bytes: the pointers above stay valid.
        Ok(RawPlanOptions { raw, _strings: [device, cost_file, mesh_shape] })
    }
}

c_struct! {
    /// One pipeline stage of a plan.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PlanStage from sys::pagoda_plan_stage_t {
        /// Decoder layers [first_layer, end_layer).
        pub first_layer: i64,
        pub end_layer: i64,
        /// The sub-mesh: nodes it spans and devices per node it uses.
        pub nodes: i32,
        pub devices: i32,
        /// Devices the stage's layers are split over.
        pub tensor_parallel: i32,
        pub has_embedding: bool,
        pub has_head: bool,
        /// Predicted time for one workload step, the send to the next stage included.
        pub seconds: f64,
        /// Predicted memory per device.
        pub memory_bytes: f64,
        /// Groups of the stage's devices its experts split into (1: every expert's columns
        /// over all of them; always 1 for a dense model).
        pub expert_parallel: i32,
    }
}

c_struct! {
    /// A plan's predicted totals.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PlanSummary from sys::pagoda_plan_summary_t {
        pub n_stages: usize,
        pub latency_seconds: f64,
        pub max_stage_seconds: f64,
        pub throughput_per_second: f64,
        pub objective_seconds: f64,
        /// Prompt slices; 0 when no prompt length was given.
        pub n_slices: usize,
        pub sliced_prefill_seconds: f64,
        pub uniform_prefill_seconds: f64,
    }
}

/// A plan: data the engine executes as is; it can be written as JSON and read back.
#[derive(Debug)]
pub struct Plan {
    raw: NonNull<sys::pagoda_plan_t>,
}

// SAFETY: plan.h: a plan never changes after creation and its getters are safe from any
// thread; nothing ties it to a thread, and destroy runs from Drop (`&mut self`).
unsafe impl Send for Plan {}
// SAFETY: every `&self` use (the getters, and being read by cache and engine creation) is safe
// from several threads at once.
unsafe impl Sync for Plan {}

impl Plan {
    /// Plans `model` on `mesh` (or on `options.mesh_shape` when `mesh` is `None`).
    pub fn new(model: &Model, mesh: Option<&Mesh>, options: &PlanOptions) -> Result<Plan> {
        let o = options.to_raw()?;
        let mesh = mesh.map_or(ptr::null(), Mesh::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: live handles (the mesh may be NULL), options whose strings outlive the call.
        check(unsafe { sys::pagoda_plan_create(model.as_ptr(), mesh, &o.raw, &mut out) })?;
        Plan::from_out(out)
    }

    /// Plans a model described by a Hugging Face `config.json`, without its weights;
    /// `options.mesh_shape` is required.
    pub fn from_config(config_path: impl AsRef<Path>, options: &PlanOptions) -> Result<Plan> {
        let path = path_to_c("config_path", config_path.as_ref())?;
        let o = options.to_raw()?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated path, options whose strings outlive the call.
        check(unsafe { sys::pagoda_plan_create_from_config(path.as_ptr(), &o.raw, &mut out) })?;
        Plan::from_out(out)
    }

    /// Reads a plan written by [`Plan::to_json`].
    pub fn from_json(json: &str) -> Result<Plan> {
        let json = to_c("json", json)?;
        let mut out = ptr::null_mut();
        // SAFETY: a NUL-terminated string and a valid out-pointer.
        check(unsafe { sys::pagoda_plan_from_json(json.as_ptr(), &mut out) })?;
        Plan::from_out(out)
    }

    fn from_out(raw: *mut sys::pagoda_plan_t) -> Result<Plan> {
        Ok(Plan { raw: non_null(raw, "plan")? })
    }

    /// The plan as JSON (the schema of plan.h).
    pub fn to_json(&self) -> Result<String> {
        let mut json = ptr::null_mut();
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_plan_to_json(self.raw.as_ptr(), &mut json) })?;
        // SAFETY: a string the library handed over.
        Ok(unsafe { take_owned(json) })
    }

    /// The plan's predicted totals.
    pub fn summary(&self) -> Result<PlanSummary> {
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|s| unsafe { sys::pagoda_plan_get_summary(self.raw.as_ptr(), s) })
    }

    /// Stage `index` (0 ≤ index < `summary().n_stages`).
    pub fn stage(&self, index: usize) -> Result<PlanStage> {
        // SAFETY: as for summary; a bad index is refused with a status.
        fetch(|s| unsafe { sys::pagoda_plan_get_stage(self.raw.as_ptr(), index, s) })
    }

    /// Every stage, in pipeline order.
    pub fn stages(&self) -> Result<Vec<PlanStage>> {
        (0..self.summary()?.n_stages).map(|i| self.stage(i)).collect()
    }

    /// The length in tokens of prompt slice `index` (0 ≤ index < `summary().n_slices`).
    pub fn slice_length(&self, index: usize) -> Result<i64> {
        let mut length = 0i64;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_plan_slice_length_v2(self.raw.as_ptr(), index, &mut length) })?;
        Ok(length)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pagoda_plan_t {
        self.raw.as_ptr()
    }
}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`).
        unsafe { sys::pagoda_plan_destroy(self.raw.as_ptr()) }
    }
}
