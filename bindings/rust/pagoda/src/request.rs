//! A request's sampling and stopping options, and their C form for one submit.

use crate::constraint::Constraint;
use crate::convert::{Defaults, FromC, ToC};
use crate::cstr::to_c;
use crate::embedding::Embedding;
use crate::error::Result;
use crate::logits_processor::LogitsProcessor;
use pagoda_sys as sys;
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::c_char;

/// How a request samples and when it stops. `Default` gives the library's defaults
/// (temperature 1, 256 tokens, n = 1, no penalties, seed `Some(0)`, no logit controls, no
/// constraint, not an embedding request).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestOptions {
    /// Tokens to generate at most.
    pub max_tokens: i32,
    /// 0 = greedy.
    pub temperature: f32,
    /// Keep the k most likely; 0 = all.
    pub top_k: i32,
    /// Nucleus mass; 1 = all.
    pub top_p: f32,
    /// Drop tokens below min_p × the top probability; 0 = off.
    pub min_p: f32,
    /// Divides positive logits of seen tokens (multiplies negative ones); 1 = off.
    pub repetition_penalty: f32,
    /// Subtracted once from generated tokens' logits; 0 = off.
    pub presence_penalty: f32,
    /// Subtracted per occurrence of generated tokens; 0 = off.
    pub frequency_penalty: f32,
    /// With the same seed a request draws the same tokens; `None` draws a fresh seed from the
    /// operating system per request (`PAGODA_REQUEST_FRESH_SEED`).
    pub seed: Option<u64>,
    /// Extra ids that end the request.
    pub stop_token_ids: Vec<i32>,
    /// Strings that end the request.
    pub stop_strings: Vec<String>,
    /// Per generated token, the top-n log-probabilities (`Some(0)`: the chosen token's only).
    pub logprobs: Option<i32>,
    /// Per prompt token, its log-probability and the top-n.
    pub prompt_logprobs: Option<i32>,
    /// Sequences to return; they share the prompt's KV blocks.
    pub n: i32,
    /// Sequences to generate, the `n` with the highest cumulative log-probability returned;
    /// 0 = `n`.
    pub best_of: i32,
    /// > 0: beam search of this width instead of sampling, returning the `n` best beams.
    pub beam_width: i32,
    /// Beam scores are cumulative logprob / length^this.
    pub length_penalty: f32,
    /// Beam search ends when `beam_width` hypotheses are done (true), or when no running beam
    /// can beat them (false).
    pub early_stopping: bool,
    /// Lower runs first among waiting requests; ties first come, first served.
    pub priority: i32,
    /// Generate past end-of-sequence tokens.
    pub ignore_eos: bool,
    /// Keep special tokens in the output text.
    pub keep_special_text: bool,
    /// End the text with the stop string that matched.
    pub include_stop_string: bool,
    /// Do not add BOS (or the template's tokens) to a text prompt.
    pub no_special_tokens: bool,
    /// (token id, bias in [-100, 100]) added to the logits before the penalties.
    pub logit_bias: Vec<(i32, f32)>,
    /// Token-id sequences the sequence may not complete (vLLM's `bad_words`, as ids).
    pub bad_words: Vec<Vec<i32>>,
    /// Only these ids may be sampled; empty = all.
    pub allowed_token_ids: Vec<i32>,
    /// A closure that changes the logits in place before each token is picked (see
    /// [`LogitsProcessor`] for its thread and lifetime rules); `None` = none.
    pub logits_processor: Option<LogitsProcessor>,
    /// End-of-sequence and stop ids are masked until this many tokens are generated.
    pub min_tokens: i32,
    /// What the output must match (a grammar, a regex, a JSON Schema, any JSON object); `None`
    /// = unconstrained. Refused with beam search.
    pub constraint: Option<Constraint>,
    /// `Some`: an embedding request (`PAGODA_REQUEST_EMBED`) pooled and scaled as it says; its
    /// one output carries [`Output::embedding`](crate::Output) and no text.
    /// [`Engine::embed_text`](crate::Engine::embed_text) is the short way.
    pub embedding: Option<Embedding>,
}

fn flag(flags: u32, bit: u32) -> bool {
    flags & bit != 0
}

fn bit(on: bool, bit: u32) -> u32 {
    if on {
        bit
    } else {
        0
    }
}

impl Default for RequestOptions {
    fn default() -> RequestOptions {
        let raw = sys::pagoda_request_options_t::defaults();
        // The library's defaults have no stop ids or strings (NULL, 0), as the empty Vecs say.
        RequestOptions {
            max_tokens: raw.max_tokens,
            temperature: raw.temperature,
            top_k: raw.top_k,
            top_p: raw.top_p,
            min_p: raw.min_p,
            repetition_penalty: raw.repetition_penalty,
            presence_penalty: raw.presence_penalty,
            frequency_penalty: raw.frequency_penalty,
            seed: Some(raw.seed),
            stop_token_ids: Vec::new(),
            stop_strings: Vec::new(),
            logprobs: FromC::from_c(&raw.logprobs),
            prompt_logprobs: FromC::from_c(&raw.prompt_logprobs),
            n: raw.n,
            best_of: raw.best_of,
            beam_width: raw.beam_width,
            length_penalty: raw.length_penalty,
            early_stopping: raw.early_stopping != 0,
            priority: raw.priority,
            ignore_eos: flag(raw.flags, sys::PAGODA_REQUEST_IGNORE_EOS),
            keep_special_text: flag(raw.flags, sys::PAGODA_REQUEST_KEEP_SPECIAL_TEXT),
            include_stop_string: flag(raw.flags, sys::PAGODA_REQUEST_INCLUDE_STOP_STRING),
            no_special_tokens: flag(raw.flags, sys::PAGODA_REQUEST_NO_SPECIAL_TOKENS),
            // The library's defaults have no controls (NULL, 0).
            logit_bias: Vec::new(),
            bad_words: Vec::new(),
            allowed_token_ids: Vec::new(),
            // The library's default is no processor (NULL).
            logits_processor: None,
            min_tokens: raw.min_tokens,
            // The library's default is PAGODA_CONSTRAINT_NONE with no text.
            constraint: None,
            // Without PAGODA_REQUEST_EMBED in the default flags, pooling and normalize are 0.
            embedding: None,
        }
    }
}

impl RequestOptions {
    /// Greedy decoding: temperature 0, everything else as the defaults.
    pub fn greedy() -> RequestOptions {
        RequestOptions { temperature: 0.0, ..RequestOptions::default() }
    }
}

/// RequestOptions as C reads it, with the memory its pointers point into (the stop strings
/// here, the stop ids in the borrowed options). The library copies everything at submit, so
/// this lives for one call.
pub(crate) struct RawRequest<'a> {
    pub(crate) raw: sys::pagoda_request_options_t,
    _strings: Vec<CString>,
    _pointers: Vec<*const c_char>,
    _bias: Vec<sys::pagoda_logit_bias_t>,
    _bad_ids: Vec<i32>,
    _bad_lengths: Vec<usize>,
    _constraint: Option<CString>,
    _options: PhantomData<&'a RequestOptions>,
}

impl<'a> RawRequest<'a> {
    pub(crate) fn new(o: &'a RequestOptions) -> Result<RawRequest<'a>> {
        let strings =
            o.stop_strings.iter().map(|s| to_c("a stop string", s)).collect::<Result<Vec<CString>>>()?;
        let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        let mut raw = sys::pagoda_request_options_t::defaults();
        raw.flags = bit(o.ignore_eos, sys::PAGODA_REQUEST_IGNORE_EOS)
            | bit(o.keep_special_text, sys::PAGODA_REQUEST_KEEP_SPECIAL_TEXT)
            | bit(o.include_stop_string, sys::PAGODA_REQUEST_INCLUDE_STOP_STRING)
            | bit(o.no_special_tokens, sys::PAGODA_REQUEST_NO_SPECIAL_TOKENS)
            | bit(o.seed.is_none(), sys::PAGODA_REQUEST_FRESH_SEED)
            | bit(o.embedding.is_some(), sys::PAGODA_REQUEST_EMBED);
        raw.max_tokens = o.max_tokens;
        raw.temperature = o.temperature;
        raw.top_k = o.top_k;
        raw.top_p = o.top_p;
        raw.min_p = o.min_p;
        raw.repetition_penalty = o.repetition_penalty;
        raw.presence_penalty = o.presence_penalty;
        raw.frequency_penalty = o.frequency_penalty;
        raw.seed = o.seed.unwrap_or(0);
        // Pointers into the Vecs' heap buffers, which stay put when the Vecs move into Self.
        raw.stop_token_ids =
            if o.stop_token_ids.is_empty() { std::ptr::null() } else { o.stop_token_ids.as_ptr() };
        raw.n_stop_token_ids = o.stop_token_ids.len();
        raw.stop_strings = if pointers.is_empty() { std::ptr::null() } else { pointers.as_ptr() };
        raw.n_stop_strings = pointers.len();
        raw.logprobs = o.logprobs.to_c();
        raw.prompt_logprobs = o.prompt_logprobs.to_c();
        raw.n = o.n;
        raw.best_of = o.best_of;
        raw.beam_width = o.beam_width;
        raw.length_penalty = o.length_penalty;
        raw.early_stopping = i32::from(o.early_stopping);
        raw.priority = o.priority;
        let bias: Vec<sys::pagoda_logit_bias_t> = o
            .logit_bias
            .iter()
            .map(|&(token_id, bias)| sys::pagoda_logit_bias_t { token_id, bias })
            .collect();
        let bad_ids: Vec<i32> = o.bad_words.iter().flatten().copied().collect();
        let bad_lengths: Vec<usize> = o.bad_words.iter().map(Vec::len).collect();
        // As the stop lists: heap buffers that stay put when the Vecs move into Self.
        raw.logit_bias = if bias.is_empty() { std::ptr::null() } else { bias.as_ptr() };
        raw.n_logit_bias = bias.len();
        raw.bad_words_token_ids = if bad_ids.is_empty() { std::ptr::null() } else { bad_ids.as_ptr() };
        raw.bad_words_lengths = if bad_lengths.is_empty() { std::ptr::null() } else { bad_lengths.as_ptr() };
        raw.n_bad_words = bad_lengths.len();
        raw.allowed_token_ids =
            if o.allowed_token_ids.is_empty() { std::ptr::null() } else { o.allowed_token_ids.as_ptr() };
        raw.n_allowed_token_ids = o.allowed_token_ids.len();
        raw.min_tokens = o.min_tokens;
        let constraint = match &o.constraint {
            Some(c) => c.text_to_c()?,
            None => None,
        };
        raw.constraint_kind = o.constraint.as_ref().map_or(sys::PAGODA_CONSTRAINT_NONE, Constraint::kind);
        // The CString's heap buffer stays put when it moves into Self.
        raw.constraint = constraint.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        if let Some(embedding) = o.embedding {
            (raw.pooling, raw.embedding_normalize) = embedding.to_raw();
        }
        Ok(RawRequest {
            raw,
            _strings: strings,
            _pointers: pointers,
            _bias: bias,
            _bad_ids: bad_ids,
            _bad_lengths: bad_lengths,
            _constraint: constraint,
            _options: PhantomData,
        })
    }
}
