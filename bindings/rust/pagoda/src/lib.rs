//! A safe Rust binding of libpagoda, an embeddable library for serving LLMs.
//!
//! Handles are RAII types (`Drop` releases them) that may be dropped in any order: an engine
//! keeps its model, mesh, plan and KV cache alive. Every failure is an [`Error`] carrying the
//! library's status and its message. `Send` and `Sync` follow each header's thread-safety
//! sentences (see each type's `unsafe impl`s). Streaming is an iterator over the engine's step
//! and poll ([`Engine::outputs`]); log lines, model-load progress and a request's
//! [`LogitsProcessor`] reach Rust closures through trampolines that never let a panic unwind
//! into C.
//!
//! ```no_run
//! use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions};
//! # fn main() -> pagoda::Result<()> {
//! let model = Model::open("stories260K.gguf")?;
//! let mesh = Mesh::new(&MeshOptions::default())?;
//! let cache = KvCache::new(&model, &mesh, None, &KvCacheOptions::default())?;
//! let engine = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default())?;
//! engine.submit_text("Once upon a time", &RequestOptions { max_tokens: 64, ..RequestOptions::greedy() })?;
//! for output in engine.outputs() {
//!     print!("{}", output?.text);
//! }
//! # Ok(())
//! # }
//! ```

// First: its macros serve the modules below.
#[macro_use]
mod convert;

pub mod backend;
mod constraint;
mod cstr;
mod dtype;
mod embedding;
mod engine;
mod engine_options;
mod error;
mod kv_cache;
mod log;
mod logits_processor;
mod mesh;
mod model;
mod output;
pub mod placement;
mod plan;
mod quantize;
mod request;
mod stats;
mod stream;
mod tokenizer;
mod version;

pub use backend::{Backend, DeviceInfo, DeviceKind, SkippedBackend};
pub use constraint::Constraint;
pub use dtype::Dtype;
pub use embedding::{Embedding, EmbeddingNormalize, Pooling};
pub use engine::Engine;
pub use engine_options::{
    DecodeGraphs, DeviceSampling, EngineOptions, KernelChoice, KvReservation, Preemption, QuantizedMatmul,
};
pub use error::{Error, Result, Status};
pub use kv_cache::{KvCache, KvCacheOptions, KvCacheStats};
pub use log::{clear_log_callback, log_level, set_log_callback, set_log_level, LogLevel};
pub use logits_processor::{LogitsContext, LogitsProcessor, ProcessorError};
pub use mesh::{Mesh, MeshOptions};
pub use model::{Model, ModelInfo, ModelLoader};
pub use output::{FinishReason, Logprob, Output};
pub use placement::{CostProfileOptions, LinkProfileOptions, SimulateOptions};
pub use plan::{Objective, Plan, PlanOptions, PlanStage, PlanSummary};
pub use quantize::{quantize, QuantType, QuantizeStats, QuantizedType};
pub use request::RequestOptions;
pub use stats::{DeviceStats, EngineStats, Histogram, KernelChoiceInfo, Metrics};
pub use stream::Outputs;
pub use tokenizer::{
    ChatTemplateOptions, Tokenizer, TokenizerInfo, DETOKENIZE_SKIP_SPECIAL, TOKENIZE_ADD_SPECIAL,
    TOKENIZE_PARSE_SPECIAL,
};
pub use version::{abi_compatible, version, version_number, HEADER_VERSION_NUMBER};

/// The raw C declarations, for calls this crate does not wrap.
pub use pagoda_sys as sys;
