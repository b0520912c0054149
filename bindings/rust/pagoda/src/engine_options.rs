//! How an engine batches, preempts and places its work.

use crate::dtype::Dtype;
use pagoda_sys as sys;

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

c_struct! {
    /// How the engine batches. `Default` gives the library's defaults. Outputs are always queued
    /// for polling: this binding streams through [`crate::Engine::poll`] and
    /// [`crate::Engine::outputs`], not through the output callback (left NULL, as the defaults
    /// have it).
    #[derive(Clone, Debug, PartialEq)]
    pub struct EngineOptions options sys::pagoda_engine_options_t {
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
    }
}
