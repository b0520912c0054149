//! How an engine batches, preempts and places its work, and picks its kernels.

use crate::convert::{Defaults, ToC};
use crate::cstr::{from_c, opt_ptr, path_to_c};
use crate::dtype::Dtype;
use crate::error::Result;
use pagoda_sys as sys;
use std::ffi::CString;
use std::path::PathBuf;

c_enum!(
    /// What the engine does when running sequences need KV blocks and none are free.
    Preemption {
        /// vLLM's rule: recompute single-sequence requests, swap the others.
        Auto = sys::PAGODA_PREEMPT_AUTO,
        /// Free the blocks and prefill again later.
        Recompute = sys::PAGODA_PREEMPT_RECOMPUTE,
        /// Copy the blocks to host swap space and back.
        Swap = sys::PAGODA_PREEMPT_SWAP,
    }
);

c_enum!(
    /// How KV memory is lent to requests.
    KvReservation {
        /// Block by block as tokens arrive (PagedAttention).
        Paged = sys::PAGODA_KV_PAGED,
        /// Blocks for prompt + max_tokens reserved at admission (a baseline for comparisons).
        Contiguous = sys::PAGODA_KV_CONTIGUOUS,
    }
);

c_enum!(
    /// Whether decode steps are recorded once and replayed as graphs (CUDA graphs).
    DecodeGraphs {
        /// Where the backend records them and runs apart from the host (a GPU).
        Auto = sys::PAGODA_DECODE_GRAPHS_AUTO,
        On = sys::PAGODA_DECODE_GRAPHS_ON,
        Off = sys::PAGODA_DECODE_GRAPHS_OFF,
    }
);

c_enum!(
    /// Where the engine picks tokens.
    DeviceSampling {
        /// On a device whose memory is apart from the host's (a GPU), else on the host.
        Auto = sys::PAGODA_DEVICE_SAMPLING_AUTO,
        On = sys::PAGODA_DEVICE_SAMPLING_ON,
        Off = sys::PAGODA_DEVICE_SAMPLING_OFF,
    }
);

c_enum!(
    /// Whether products on block-quantized weights may round their operands (8-bit
    /// activations; on a GPU, f16 activations and weights).
    QuantizedMatmul {
        /// Where the backend takes the leave (llama.cpp's and vLLM's arithmetic).
        Auto = sys::PAGODA_QUANTIZED_MATMUL_AUTO,
        /// Activations as they are, in f32.
        Exact = sys::PAGODA_QUANTIZED_MATMUL_EXACT,
    }
);

c_enum!(
    /// How the engine picks among a backend's kernels for each matrix product (kernel_choice.h).
    KernelChoice {
        /// The choices of `kernel_choices_file` where it has them, the backend's built-in rules
        /// elsewhere; nothing is measured, so repeated runs choose alike.
        File = sys::PAGODA_KERNEL_CHOICE_FILE,
        /// As `File`, and every product shape the file lacks is measured when the engine is
        /// made, for each power-of-two row count up to `max_num_batched_tokens`; the file, when
        /// named, is then written with them (created if need be).
        Measure = sys::PAGODA_KERNEL_CHOICE_MEASURE,
        /// The backend's built-in rules everywhere; no file is read.
        Rules = sys::PAGODA_KERNEL_CHOICE_RULES,
    }
);

/// How the engine batches. `Default` gives the library's defaults. Outputs are always queued
/// for polling: this binding streams through [`crate::Engine::poll`] and
/// [`crate::Engine::outputs`], not through the output callback (left NULL, as the defaults
/// have it).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineOptions {
    /// Sequences in one step at most.
    pub max_num_seqs: i32,
    /// Tokens in one step at most; a longer prompt runs in chunks.
    pub max_num_batched_tokens: i32,
    pub preemption: Preemption,
    pub kv_reservation: KvReservation,
    pub decode_graphs: DecodeGraphs,
    pub device_sampling: DeviceSampling,
    /// The activations' type between kernels (F32, BF16 or F16); `None`: the engine picks.
    pub activation_dtype: Option<Dtype>,
    /// Micro-batches per step on a pipeline of several stages; 0 = the engine picks.
    pub pipeline_micro_batches: i64,
    /// Rounded operands on block-quantized weights (`Auto`) or not.
    pub quantized_matmul: QuantizedMatmul,
    /// A kernel choice file (`pagoda tune` writes one), read when the engine is made; `None` =
    /// none. A missing file is an error unless `kernel_choice` is [`KernelChoice::Measure`],
    /// which creates it.
    pub kernel_choices_file: Option<PathBuf>,
    /// How each matrix product's kernel is picked.
    pub kernel_choice: KernelChoice,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        let raw = sys::pagoda_engine_options_t::defaults();
        // SAFETY: the default path, if any, is static.
        let kernel_choices_file = unsafe { from_c(raw.kernel_choices_file) };
        EngineOptions {
            max_num_seqs: raw.max_num_seqs,
            max_num_batched_tokens: raw.max_num_batched_tokens,
            preemption: Preemption::from_raw(raw.preemption),
            kv_reservation: KvReservation::from_raw(raw.kv_reservation),
            decode_graphs: DecodeGraphs::from_raw(raw.decode_graphs),
            device_sampling: DeviceSampling::from_raw(raw.device_sampling),
            activation_dtype: Dtype::from_raw(raw.activation_dtype),
            pipeline_micro_batches: raw.pipeline_micro_batches,
            quantized_matmul: QuantizedMatmul::from_raw(raw.quantized_matmul),
            kernel_choices_file: kernel_choices_file.map(PathBuf::from),
            kernel_choice: KernelChoice::from_raw(raw.kernel_choice),
        }
    }
}

/// EngineOptions as C reads it, with the path its pointer points into (read during the create
/// call only).
pub(crate) struct RawEngineOptions {
    pub(crate) raw: sys::pagoda_engine_options_t,
    _kernel_choices_file: Option<CString>,
}

impl EngineOptions {
    pub(crate) fn to_raw(&self) -> Result<RawEngineOptions> {
        let kernel_choices_file =
            self.kernel_choices_file.as_deref().map(|p| path_to_c("kernel_choices_file", p)).transpose()?;
        let mut raw = sys::pagoda_engine_options_t::defaults();
        raw.max_num_seqs = self.max_num_seqs;
        raw.max_num_batched_tokens = self.max_num_batched_tokens;
        raw.preemption = self.preemption.raw();
        raw.kv_reservation = self.kv_reservation.raw();
        raw.decode_graphs = self.decode_graphs.raw();
        raw.device_sampling = self.device_sampling.raw();
        raw.activation_dtype = self.activation_dtype.to_c();
        raw.pipeline_micro_batches = self.pipeline_micro_batches;
        raw.quantized_matmul = self.quantized_matmul.raw();
        raw.kernel_choices_file = opt_ptr(&kernel_choices_file);
        raw.kernel_choice = self.kernel_choice.raw();
        // Moving the CString moves no bytes: the pointer above stays valid.
        Ok(RawEngineOptions { raw, _kernel_choices_file: kernel_choices_file })
    }
}
