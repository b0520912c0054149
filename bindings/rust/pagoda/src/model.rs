//! Models: opening a GGUF file or a Hugging Face folder, with progress and cancellation.

use crate::convert::{fetch, Defaults};
use crate::cstr::{from_c, path_to_c, text};
use crate::error::{check, non_null, Result};
use pagoda_sys as sys;
use std::any::Any;
use std::os::raw::{c_char, c_float, c_int, c_void};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

/// An open model: a description plus weights. Dropping it releases the handle; tokenizers,
/// plans, KV caches and engines made from it keep what they need alive.
#[derive(Debug)]
pub struct Model {
    raw: NonNull<sys::pagoda_model_t>,
}

// SAFETY: model.h: "An open model is immutable: every function taking a const pagoda_model_t *
// is safe from any thread". Nothing ties a model to the thread that opened it; destroying it
// needs `&mut` (Drop), so it never runs beside another call on the handle.
unsafe impl Send for Model {}
// SAFETY: every `&self` method calls a const-taking function, safe from any thread at once.
unsafe impl Sync for Model {}

c_struct! {
    /// What a model is.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ModelInfo from sys::pagoda_model_info_t {
        /// "llama", "mistral" or "qwen2".
        pub architecture: String,
        pub vocab_size: i64,
        pub hidden_size: i64,
        pub intermediate_size: i64,
        pub n_layers: i64,
        pub n_heads: i64,
        pub n_kv_heads: i64,
        pub head_dim: i64,
        /// The trained context length.
        pub max_position: i64,
        pub n_parameters: u64,
        /// `None` when the model has none.
        pub bos_token_id: Option<i32>,
        /// The first end-of-sequence id; `None` when the model has none.
        pub eos_token_id: Option<i32>,
        /// A mixture of experts' experts per sparse layer (0 for a dense model).
        pub n_experts: i64,
        /// Experts each token is routed to.
        pub experts_per_token: i64,
        /// Each expert's MLP width.
        pub expert_intermediate_size: i64,
        /// Layers whose MLP is the mixture.
        pub n_sparse_layers: i64,
    }
}

/// A progress callback's state, reached from C through `progress_user`.
struct Progress<F> {
    callback: F,
    /// A panic caught in `callback`, resumed on the caller's thread once C has returned.
    panic: Option<Box<dyn Any + Send>>,
}

unsafe extern "C" fn progress_trampoline<F>(
    user: *mut c_void,
    fraction: c_float,
    stage: *const c_char,
) -> c_int
where
    F: FnMut(f32, &str) -> bool,
{
    // SAFETY: `user` is the Progress<F> that open_with_progress keeps alive across the open, and
    // the callback runs on that thread only (model.h: "Runs on the opening thread").
    let state = &mut *(user as *mut Progress<F>);
    if state.panic.is_some() {
        return 0;
    }
    let stage = text(stage);
    // Unwinding into C is undefined: catch the panic, cancel the open, and resume it later.
    match catch_unwind(AssertUnwindSafe(|| (state.callback)(fraction, &stage))) {
        Ok(go_on) => c_int::from(go_on),
        Err(panic) => {
            state.panic = Some(panic);
            0
        }
    }
}

impl Model {
    /// Opens a `.gguf` file or a Hugging Face model folder, blocking until it is ready.
    pub fn open(path: impl AsRef<Path>) -> Result<Model> {
        let path = path_to_c("path", path.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: a NUL-terminated path, NULL options (the defaults), a valid out-pointer.
        check(unsafe { sys::pagoda_model_open(path.as_ptr(), ptr::null(), &mut out) })?;
        Model::from_out(out)
    }

    /// Opens a model as [`Model::open`] does, calling `progress(fraction, stage)` as it advances,
    /// on this thread. `progress` returns `true` to go on, `false` to cancel (the open then fails
    /// with [`crate::Status::Cancelled`]). A panic in `progress` cancels the open and is resumed
    /// here.
    pub fn open_with_progress<F>(path: impl AsRef<Path>, progress: F) -> Result<Model>
    where
        F: FnMut(f32, &str) -> bool,
    {
        let path = path_to_c("path", path.as_ref())?;
        let mut state = Progress { callback: progress, panic: None };
        let mut options = sys::pagoda_model_options_t::defaults();
        options.progress = Some(progress_trampoline::<F>);
        options.progress_user = &mut state as *mut Progress<F> as *mut c_void;
        let mut out = ptr::null_mut();
        // SAFETY: `state` outlives the call, which is the only time C calls the trampoline.
        let status = unsafe { sys::pagoda_model_open(path.as_ptr(), &options, &mut out) };
        let result = check(status).and_then(|()| Model::from_out(out));
        if let Some(panic) = state.panic {
            drop(result);
            resume_unwind(panic);
        }
        result
    }

    /// Starts opening a model on a background thread and returns at once: poll the loader's
    /// progress, cancel it, and collect the model with [`ModelLoader::finish`].
    pub fn load_start(path: impl AsRef<Path>) -> Result<ModelLoader> {
        let path = path_to_c("path", path.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: a NUL-terminated path, NULL options (no callback), a valid out-pointer.
        check(unsafe { sys::pagoda_model_load_start(path.as_ptr(), ptr::null(), &mut out) })?;
        Ok(ModelLoader { raw: non_null(out, "loader")? })
    }

    fn from_out(raw: *mut sys::pagoda_model_t) -> Result<Model> {
        Ok(Model { raw: non_null(raw, "model")? })
    }

    /// Describes the model.
    pub fn info(&self) -> Result<ModelInfo> {
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|info| unsafe { sys::pagoda_model_get_info(self.raw.as_ptr(), info) })
    }

    /// The file or folder the model was opened from.
    pub fn path(&self) -> Result<PathBuf> {
        let mut path = ptr::null();
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_model_path_v2(self.raw.as_ptr(), &mut path) })?;
        // SAFETY: the string lives as long as the model and is copied at once.
        Ok(PathBuf::from(unsafe { from_c(path) }.unwrap_or_default()))
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pagoda_model_t {
        self.raw.as_ptr()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`).
        unsafe { sys::pagoda_model_destroy(self.raw.as_ptr()) }
    }
}

/// A model being opened on a background thread. Dropping it unfinished cancels the open and
/// waits for the thread to end.
#[derive(Debug)]
pub struct ModelLoader {
    raw: NonNull<sys::pagoda_model_loader_t>,
}

// SAFETY: model.h: progress and cancel are "safe from any thread, concurrently with the other
// loader calls except finish", and finish may run on any thread once; finish takes `self` and
// Drop `&mut self`, so neither runs beside another call.
unsafe impl Send for ModelLoader {}
// SAFETY: the `&self` methods are progress and cancel, safe from several threads at once.
unsafe impl Sync for ModelLoader {}

impl ModelLoader {
    /// How far the open has come (0 to 1), and whether it has ended (well or not).
    pub fn progress(&self) -> Result<(f32, bool)> {
        let (mut fraction, mut done) = (0.0f32, 0 as c_int);
        // SAFETY: a live loader and valid out-pointers.
        check(unsafe { sys::pagoda_model_loader_progress(self.raw.as_ptr(), &mut fraction, &mut done) })?;
        Ok((fraction, done != 0))
    }

    /// Asks the open to stop; [`ModelLoader::finish`] then fails with [`crate::Status::Cancelled`]
    /// (unless the open ended first).
    pub fn cancel(&self) {
        // SAFETY: a live loader; safe from any thread.
        unsafe { sys::pagoda_model_loader_cancel(self.raw.as_ptr()) }
    }

    /// Waits for the open to end and hands over the model.
    pub fn finish(self) -> Result<Model> {
        let raw = self.raw;
        // finish releases the loader, so Drop must not touch it again.
        std::mem::forget(self);
        let mut out = ptr::null_mut();
        // SAFETY: a live loader, released by this call whatever it returns.
        check(unsafe { sys::pagoda_model_loader_finish(raw.as_ptr(), &mut out) })?;
        Model::from_out(out)
    }
}

impl Drop for ModelLoader {
    fn drop(&mut self) {
        let mut out = ptr::null_mut();
        // SAFETY: a live loader, cancelled then released by finish. Its status (most likely
        // CANCELLED) is of no use to a host that dropped the loader; a model that was ready
        // anyway is destroyed (NULL otherwise, which destroy accepts).
        unsafe {
            sys::pagoda_model_loader_cancel(self.raw.as_ptr());
            let _status = sys::pagoda_model_loader_finish(self.raw.as_ptr(), &mut out);
            sys::pagoda_model_destroy(out);
        }
    }
}
