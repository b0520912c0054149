//! Embedding requests (`PAGODA_REQUEST_EMBED`): a prompt's pooled hidden state instead of
//! generated text.

use pagoda_sys as sys;

/// How an embedding request pools its prompt's hidden states into one vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pooling {
    /// The checkpoint's own pooling (a sentence-transformers modules.json's, or a GGUF file's
    /// `pooling_type`); `Last` for a plain decoder, which names none. One the engine does not do
    /// fails the submit with `Status::Unsupported`.
    #[default]
    Model,
    /// The last prompt token's state: with causal attention the only one that has seen the
    /// whole prompt.
    Last,
    /// The mean of every prompt token's state.
    Mean,
}

/// Whether an embedding request's vector is scaled to unit length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EmbeddingNormalize {
    /// The checkpoint's own rule: `L2` unless its sentence-transformers modules.json lists no
    /// Normalize module.
    #[default]
    Model,
    /// Divided by its L2 norm (a zero vector stays zero).
    L2,
    /// As pooled (`PAGODA_EMBEDDING_NORMALIZE_NONE`).
    Off,
}

/// What makes a request an embedding request ([`RequestOptions::embedding`](crate::RequestOptions)):
/// how its vector is pooled and scaled. `Default` is the model's rules (for a plain decoder:
/// last token, L2).
///
/// Such a request generates nothing: its one output carries [`Output::embedding`](crate::Output),
/// the model's hidden size of `f32`. The library refuses at submit, naming the field, what has
/// no meaning without generation: `n` or `best_of` above 1, beams, logprobs, stop lists, logit
/// controls and a constraint (`max_tokens` and the sampling fields are not read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Embedding {
    pub pooling: Pooling,
    pub normalize: EmbeddingNormalize,
}

impl Embedding {
    /// The `pagoda_pooling_t` and `pagoda_embedding_normalize_t` of these options.
    pub(crate) fn to_raw(self) -> (sys::pagoda_pooling_t, sys::pagoda_embedding_normalize_t) {
        let pooling = match self.pooling {
            Pooling::Model => sys::PAGODA_POOLING_MODEL,
            Pooling::Last => sys::PAGODA_POOLING_LAST,
            Pooling::Mean => sys::PAGODA_POOLING_MEAN,
        };
        let normalize = match self.normalize {
            EmbeddingNormalize::Model => sys::PAGODA_EMBEDDING_NORMALIZE_MODEL,
            EmbeddingNormalize::L2 => sys::PAGODA_EMBEDDING_NORMALIZE_L2,
            EmbeddingNormalize::Off => sys::PAGODA_EMBEDDING_NORMALIZE_NONE,
        };
        (pooling, normalize)
    }
}
