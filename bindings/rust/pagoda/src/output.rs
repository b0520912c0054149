//! What a request produced since its previous output, copied out of the library's storage.

use crate::cstr::{self, slice};
use crate::error::{Error, Status};
use pagoda_sys as sys;

/// Why a sequence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// `max_tokens` generated, or the model's context is full.
    Length,
    /// An end-of-sequence or stop token id was generated.
    StopToken,
    /// A stop string appeared in the text.
    StopString,
    /// The request was aborted.
    Aborted,
    /// It failed; [`Output::error`] says why.
    Error,
    /// A reason this binding does not know (appended to the library later).
    Other(i32),
}

impl FinishReason {
    /// `None` for `PAGODA_FINISH_NONE`: the sequence goes on.
    pub fn from_raw(raw: sys::pagoda_finish_reason_t) -> Option<FinishReason> {
        Some(match raw {
            sys::PAGODA_FINISH_NONE => return None,
            sys::PAGODA_FINISH_LENGTH => FinishReason::Length,
            sys::PAGODA_FINISH_STOP_TOKEN => FinishReason::StopToken,
            sys::PAGODA_FINISH_STOP_STRING => FinishReason::StopString,
            sys::PAGODA_FINISH_ABORTED => FinishReason::Aborted,
            sys::PAGODA_FINISH_ERROR => FinishReason::Error,
            other => FinishReason::Other(other),
        })
    }
}

/// A token and its log-probability under the model's distribution (before sampling options).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Logprob {
    pub token_id: i32,
    pub logprob: f32,
}

/// One output of a request: new tokens and text of one of its sequences, and how it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// The id submit returned.
    pub request_id: u64,
    /// `None` while the sequence runs; set on its last output.
    pub finish_reason: Option<FinishReason>,
    /// Why the sequence failed, when `finish_reason` is `Error`.
    pub error: Option<Error>,
    /// New tokens.
    pub token_ids: Vec<i32>,
    /// New text: whole UTF-8 characters only.
    pub text: String,
    /// Per new token its log-probability, when the request asked for logprobs.
    pub logprobs: Option<Vec<f32>>,
    /// Per new token the top log-probabilities, most likely first, when asked for (n > 0).
    pub top_logprobs: Option<Vec<Vec<Logprob>>>,
    /// Tokens in the prompt.
    pub n_prompt_tokens: usize,
    /// Tokens generated so far in this sequence, these included.
    pub n_generated: usize,
    /// Per prompt position its token's log-probability (NaN for position 0); in the first
    /// output only, when asked for.
    pub prompt_logprobs: Option<Vec<f32>>,
    /// Per prompt position the top log-probabilities (position 0: ids -1), when asked for.
    pub prompt_top_logprobs: Option<Vec<Vec<Logprob>>>,
    /// Which of the request's sequences (0 when n = 1; a beam's rank in beam search).
    pub sequence_index: i32,
    /// Sum of the sequence's token log-probabilities so far.
    pub cumulative_logprob: f32,
    /// True on the request's very last output (all its sequences done).
    pub request_finished: bool,
    /// An embedding request's pooled vector (the model's hidden size), on its one output when
    /// it finished normally.
    pub embedding: Option<Vec<f32>>,
}

/// Rows of `per_row` entries, or `None` when the library gave none.
///
/// # Safety
/// `p` is NULL or points to `rows · per_row` entries.
unsafe fn table(p: *const sys::pagoda_logprob_t, rows: usize, per_row: i32) -> Option<Vec<Vec<Logprob>>> {
    if p.is_null() {
        return None;
    }
    let per_row = usize::try_from(per_row).unwrap_or(0);
    let all = slice(p, rows * per_row);
    let to_logprob = |l: &sys::pagoda_logprob_t| Logprob { token_id: l.token_id, logprob: l.logprob };
    Some((0..rows).map(|r| all[r * per_row..(r + 1) * per_row].iter().map(to_logprob).collect()).collect())
}

impl Output {
    /// Copies what `raw` points to.
    ///
    /// # Safety
    /// `raw` was just filled by pagoda_engine_poll on this thread, so its pointers are valid.
    pub(crate) unsafe fn copy_from(raw: &sys::pagoda_output_t) -> Output {
        let text = slice(raw.text as *const u8, raw.text_len);
        let finish_reason = FinishReason::from_raw(raw.finish_reason);
        let error = if finish_reason == Some(FinishReason::Error) || raw.status != sys::PAGODA_OK {
            Some(Error::new(Status::from_raw(raw.status), cstr::text(raw.error)))
        } else {
            None
        };
        let logprobs = (!raw.logprobs.is_null()).then(|| slice(raw.logprobs, raw.n_tokens).to_vec());
        let prompt_logprobs = (!raw.prompt_logprobs.is_null())
            .then(|| slice(raw.prompt_logprobs, raw.n_prompt_tokens).to_vec());
        // Valid until the next poll only, as everything here: copied now.
        let embedding = (!raw.embedding.is_null()).then(|| slice(raw.embedding, raw.n_embedding).to_vec());
        Output {
            request_id: raw.request_id,
            finish_reason,
            error,
            token_ids: slice(raw.token_ids, raw.n_tokens).to_vec(),
            // The library sends whole characters; a broken one would become U+FFFD, not UB.
            text: String::from_utf8_lossy(text).into_owned(),
            logprobs,
            top_logprobs: table(raw.top_logprobs, raw.n_tokens, raw.n_top_logprobs),
            n_prompt_tokens: raw.n_prompt_tokens,
            n_generated: raw.n_generated,
            prompt_logprobs,
            prompt_top_logprobs: table(
                raw.prompt_top_logprobs,
                raw.n_prompt_tokens,
                raw.n_prompt_top_logprobs,
            ),
            sequence_index: raw.sequence_index,
            cumulative_logprob: raw.cumulative_logprob,
            request_finished: raw.request_finished != 0,
            embedding,
        }
    }
}
