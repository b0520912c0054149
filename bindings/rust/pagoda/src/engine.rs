//! The engine: continuous batching of many requests over a model and a paged KV cache, driven
//! by the host through step and poll.

use crate::convert::{fetch, Filled};
use crate::embedding::Embedding;
use crate::engine_options::EngineOptions;
use crate::error::{check, non_null, Error, Result, Status};
use crate::kv_cache::KvCache;
use crate::logits_processor::Processors;
use crate::mesh::Mesh;
use crate::model::Model;
use crate::output::Output;
use crate::plan::Plan;
use crate::request::{RawRequest, RequestOptions};
use crate::stats::{DeviceStats, EngineStats, KernelChoiceInfo, Metrics};
use crate::stream::Outputs;
use pagoda_sys as sys;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

/// An engine serving requests. It keeps its model, mesh, plan and KV cache alive, so their
/// handles may be dropped before it, in any order.
///
/// Share it between threads with `&Engine` or an `Arc`: submitting, aborting, polling, the
/// statistics and stepping all take `&self`.
#[derive(Debug)]
pub struct Engine {
    raw: NonNull<sys::pagoda_engine_t>,
    /// The live requests' logits processors; dropped after the engine (Drop destroys it first).
    processors: Processors,
}

// SAFETY: engine.h ties an engine to no thread; destroy ("not while another call on this
// engine runs") runs from Drop, with `&mut self`, so alone.
unsafe impl Send for Engine {}
// SAFETY: engine.h: submit, abort and poll are "safe from any thread, also while another thread
// steps or polls"; has_work, the statistics and the device queries are "safe from any thread";
// step from two threads at once is "serialized, not parallel" by the library itself.
unsafe impl Sync for Engine {}

impl Engine {
    /// Makes an engine serving `model` on `mesh` with `cache`; `plan` is `None` to run the
    /// cache's layout. A cache serves one engine at a time: a second engine on it is refused
    /// until the first is dropped.
    pub fn new(
        model: &Model,
        mesh: &Mesh,
        plan: Option<&Plan>,
        cache: &KvCache,
        options: &EngineOptions,
    ) -> Result<Engine> {
        let o = options.to_raw()?;
        let plan = plan.map_or(ptr::null(), Plan::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: live handles (the plan may be NULL), options whose path outlives the call and a
        // valid out-pointer.
        check(unsafe {
            sys::pagoda_engine_create(
                model.as_ptr(),
                mesh.as_ptr(),
                plan,
                cache.as_engine_ptr(),
                &o.raw,
                &mut out,
            )
        })?;
        Ok(Engine { raw: non_null(out, "engine")?, processors: Processors::default() })
    }

    /// Submits a text prompt, tokenized with the model's tokenizer; returns the request's id.
    pub fn submit_text(&self, prompt: &str, options: &RequestOptions) -> Result<u64> {
        let mut o = RawRequest::new(options)?;
        self.processors.submit(options.logits_processor.as_ref(), &mut o.raw, |raw| {
            let mut id = 0u64;
            // SAFETY: the prompt with its length, options whose memory outlives the call (the
            // library copies it), a valid out-pointer; safe from any thread.
            check(unsafe {
                sys::pagoda_engine_submit_text(
                    self.raw.as_ptr(),
                    prompt.as_ptr() as *const c_char,
                    prompt.len(),
                    raw,
                    &mut id,
                )
            })?;
            Ok(id)
        })
    }

    /// Submits a prompt of token ids; returns the request's id.
    pub fn submit_tokens(&self, prompt: &[i32], options: &RequestOptions) -> Result<u64> {
        let mut o = RawRequest::new(options)?;
        self.processors.submit(options.logits_processor.as_ref(), &mut o.raw, |raw| {
            let mut id = 0u64;
            // SAFETY: the ids with their count (copied), options as above, a valid out-pointer.
            check(unsafe {
                sys::pagoda_engine_submit_tokens(
                    self.raw.as_ptr(),
                    prompt.as_ptr(),
                    prompt.len(),
                    raw,
                    &mut id,
                )
            })?;
            Ok(id)
        })
    }

    /// The embedding of a text prompt: its hidden states after the model's final norm, pooled
    /// and scaled as `embedding` says, the model's hidden size of `f32`.
    ///
    /// It steps and polls the engine until the request's output comes, so it takes `&mut self`
    /// (no other thread submits or polls meanwhile) and refuses with `Status::InvalidArgument`,
    /// submitting nothing, while another request is waiting or running, whose outputs it would
    /// take. Outputs of finished requests still queued when it is called are taken and dropped:
    /// poll them first. To embed beside other requests, set
    /// [`RequestOptions::embedding`] and read [`Output::embedding`] off the polled outputs.
    pub fn embed_text(&mut self, prompt: &str, embedding: &Embedding) -> Result<Vec<f32>> {
        self.embed(|engine, options| engine.submit_text(prompt, options), embedding)
    }

    /// The embedding of a prompt of token ids, as [`Engine::embed_text`].
    pub fn embed_tokens(&mut self, prompt: &[i32], embedding: &Embedding) -> Result<Vec<f32>> {
        self.embed(|engine, options| engine.submit_tokens(prompt, options), embedding)
    }

    fn embed(
        &mut self,
        submit: impl FnOnce(&Engine, &RequestOptions) -> Result<u64>,
        embedding: &Embedding,
    ) -> Result<Vec<f32>> {
        if self.has_work()? {
            return Err(Error::new(
                Status::InvalidArgument,
                "embed_text and embed_tokens run on an idle engine: another request is live \
                 (set RequestOptions::embedding and poll instead)",
            ));
        }
        let options = RequestOptions { embedding: Some(*embedding), ..RequestOptions::default() };
        let id = submit(self, &options)?;
        for output in self.outputs() {
            let output = output?;
            if output.request_id != id {
                continue; // an earlier request's, left queued (see embed_text)
            }
            if let Some(error) = output.error {
                return Err(error);
            }
            if let Some(vector) = output.embedding {
                return Ok(vector);
            }
            if output.request_finished {
                // The library promises the vector on a normal finish.
                return Err(Error::new(
                    Status::Internal,
                    format!("embedding request {id} ended ({:?}) without its vector", output.finish_reason),
                ));
            }
        }
        Err(Error::new(Status::Internal, format!("embedding request {id} ended without its last output")))
    }

    /// Ends a request now; its last output (finish reason `Aborted`) is queued.
    pub fn abort(&self, request_id: u64) -> Result<()> {
        // SAFETY: a live handle; safe from any thread.
        check(unsafe { sys::pagoda_engine_abort(self.raw.as_ptr(), request_id) })
    }

    /// Runs one iteration: schedule, run the model over the batch, sample, queue the outputs.
    /// Calls from several threads take turns.
    pub fn step(&self) -> Result<()> {
        // SAFETY: a live handle; the library serializes concurrent steps.
        check(unsafe { sys::pagoda_engine_step(self.raw.as_ptr()) })
    }

    /// Whether any request is waiting or running (other threads may change it at once).
    pub fn has_work(&self) -> Result<bool> {
        let mut has_work = 0i32;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_engine_has_work_v2(self.raw.as_ptr(), &mut has_work) })?;
        Ok(has_work != 0)
    }

    /// Takes the oldest queued output, or `None` when none is queued.
    pub fn poll(&self) -> Result<Option<Output>> {
        let mut raw = sys::pagoda_output_t::sized();
        // SAFETY: a live handle and a struct whose struct_size says how much to fill; safe from
        // any thread.
        let status = unsafe { sys::pagoda_engine_poll(self.raw.as_ptr(), &mut raw) };
        if status == sys::PAGODA_ERR_EMPTY {
            return Ok(None);
        }
        check(status)?;
        // SAFETY: just filled on this thread: its pointers are valid until this thread polls
        // again, and everything is copied now.
        let mut output = unsafe { Output::copy_from(&raw) };
        self.processors.polled(&mut output);
        Ok(Some(output))
    }

    /// Every output, as they come: polls, and steps the engine whenever nothing is queued, until
    /// no request is left and every output has been taken. See [`Outputs`].
    pub fn outputs(&self) -> Outputs<'_> {
        Outputs::new(self)
    }

    /// The engine's counters.
    pub fn stats(&self) -> Result<EngineStats> {
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|s| unsafe { sys::pagoda_engine_get_stats(self.raw.as_ptr(), s) })
    }

    /// The engine's serving metrics: gauges, counters and latency histograms.
    pub fn metrics(&self) -> Result<Metrics> {
        // SAFETY: as for stats.
        fetch(|m| unsafe { sys::pagoda_engine_get_metrics(self.raw.as_ptr(), m) })
    }

    /// The number of devices the engine runs on.
    pub fn device_count(&self) -> Result<usize> {
        let mut count = 0usize;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_engine_device_count_v2(self.raw.as_ptr(), &mut count) })?;
        Ok(count)
    }

    /// What device `index` (in mesh order) holds and runs.
    pub fn device_stats(&self, index: usize) -> Result<DeviceStats> {
        // SAFETY: as for stats; a bad index is refused with a status.
        fetch(|s| unsafe { sys::pagoda_engine_get_device_stats(self.raw.as_ptr(), index, s) })
    }

    /// The number of entries of the engine's kernel choice table (kernel_choice.h); 0 under
    /// [`crate::KernelChoice::Rules`].
    pub fn kernel_choice_count(&self) -> Result<usize> {
        let mut count = 0usize;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::pagoda_engine_kernel_choice_count(self.raw.as_ptr(), &mut count) })?;
        Ok(count)
    }

    /// Entry `index` of the engine's kernel choice table, in an order fixed for the engine's
    /// life (by device kind, then types, flags, shape and rows).
    pub fn kernel_choice(&self, index: usize) -> Result<KernelChoiceInfo> {
        // SAFETY: as for stats; a bad index is refused with a status.
        fetch(|c| unsafe { sys::pagoda_engine_kernel_choice(self.raw.as_ptr(), index, c) })
    }

    /// The engine's kernel choice table: the choices file's entries and what the engine
    /// measured.
    pub fn kernel_choices(&self) -> Result<Vec<KernelChoiceInfo>> {
        (0..self.kernel_choice_count()?).map(|i| self.kernel_choice(i)).collect()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`); outputs handed out
        // were copied, so nothing points into the engine's storage. The logits processors
        // (a field) are dropped after this body, once C can no longer call them.
        unsafe { sys::pagoda_engine_destroy(self.raw.as_ptr()) }
    }
}
