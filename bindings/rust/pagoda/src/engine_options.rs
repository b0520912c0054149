//! How an engine batches, preempts and places its work.

use crate::dtype::{raw_or_zero, Dtype};
use pagoda_sys as sys;

/// Declares a Rust enum for a C enum that options carry as `int32_t`: known values by name,
/// anything else kept as `Other` so that values the library appends round-trip.
macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $raw:path),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value this binding does not know (appended to the library later).
            Other(i32),
        }

        impl $name {
            pub fn from_raw(raw: i32) -> $name {
                match raw {
                    $($raw => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            pub fn raw(self) -> i32 {
                match self {
                    $($name::$variant => $raw,)*
                    $name::Other(raw) => raw,
                }
            }
        }
    };
}

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

/// How the engine batches. `Default` gives the library's defaults. Outputs are always queued
/// for polling: this binding streams through [`crate::Engine::poll`] and
/// [`crate::Engine::outputs`], not through the output callback.
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
}

fn default_raw() -> sys::pagoda_engine_options_t {
    // SAFETY: all-zero is a valid options struct (no callback); init fills the defaults.
    let mut raw: sys::pagoda_engine_options_t = unsafe { std::mem::zeroed() };
    unsafe { sys::pagoda_engine_options_init(&mut raw, std::mem::size_of_val(&raw)) };
    raw
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        let raw = default_raw();
        EngineOptions {
            max_num_seqs: raw.max_num_seqs,
            max_num_batched_tokens: raw.max_num_batched_tokens,
            preemption: Preemption::from_raw(raw.preemption),
            kv_reservation: KvReservation::from_raw(raw.kv_reservation),
            decode_graphs: DecodeGraphs::from_raw(raw.decode_graphs),
            device_sampling: DeviceSampling::from_raw(raw.device_sampling),
            activation_dtype: Dtype::from_raw(raw.activation_dtype),
            pipeline_micro_batches: raw.pipeline_micro_batches,
        }
    }
}

impl EngineOptions {
    pub(crate) fn to_raw(&self) -> sys::pagoda_engine_options_t {
        let mut raw = default_raw();
        raw.max_num_seqs = self.max_num_seqs;
        raw.max_num_batched_tokens = self.max_num_batched_tokens;
        raw.on_output = None;
        raw.on_output_user = std::ptr::null_mut();
        raw.preemption = self.preemption.raw();
        raw.kv_reservation = self.kv_reservation.raw();
        raw.decode_graphs = self.decode_graphs.raw();
        raw.device_sampling = self.device_sampling.raw();
        raw.activation_dtype = raw_or_zero(self.activation_dtype);
        raw.pipeline_micro_batches = self.pipeline_micro_batches;
        raw
    }
}
