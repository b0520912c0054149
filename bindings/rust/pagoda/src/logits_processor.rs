//! A request's logits processor: a Rust closure the engine calls on every row the request
//! samples, through a trampoline that keeps panics out of C, kept alive by the engine until the
//! request's last output.

use crate::cstr::slice;
use crate::error::Result;
use crate::output::Output;
use pagoda_sys as sys;
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Why a logits processor ended its request; its text reaches the request's [`Output::error`].
pub type ProcessorError = Box<dyn std::error::Error + Send + Sync>;

/// What a logits processor is told about the row it is given (`pagoda_logits_processor_fn`).
#[derive(Clone, Copy, Debug)]
pub struct LogitsContext<'a> {
    /// The id submit returned.
    pub request_id: u64,
    /// Which of the request's sequences (0 .. `best_of` - 1).
    pub sequence_index: i32,
    /// The sequence's tokens so far: the prompt, then what it generated.
    pub token_ids: &'a [i32],
    /// How many of `token_ids` are the prompt.
    pub n_prompt_tokens: usize,
}

impl<'a> LogitsContext<'a> {
    /// The prompt's tokens.
    pub fn prompt(&self) -> &'a [i32] {
        &self.token_ids[..self.n_prompt_tokens.min(self.token_ids.len())]
    }

    /// The tokens the sequence generated so far.
    pub fn generated(&self) -> &'a [i32] {
        &self.token_ids[self.n_prompt_tokens.min(self.token_ids.len())..]
    }
}

type Callback = dyn FnMut(&LogitsContext<'_>, &mut [f32]) -> std::result::Result<(), ProcessorError> + Send;

/// A closure that changes a request's logits in place before each token is picked
/// ([`RequestOptions::logits_processor`](crate::RequestOptions::logits_processor)).
///
/// It runs after the allowed ids, bad words, bias and `min_tokens`, and before the penalties
/// and temperature, on the thread that steps the engine, with the engine's lock held: it must
/// not call that engine (it would deadlock). It may set logits to `f32::NEG_INFINITY`, never
/// to NaN or +inf. Returning `Err`, or panicking, ends the request with
/// [`FinishReason::Error`](crate::FinishReason) and [`Status::Cancelled`](crate::Status),
/// the reason in the message. Refused with `Status::Unsupported` on a mesh over processes.
///
/// Clones share one closure: options cloned or submitted again call the same one (never two
/// calls at once).
#[derive(Clone)]
pub struct LogitsProcessor {
    // A Mutex makes an FnMut callable through a shared handle, from whichever thread steps.
    f: Arc<Mutex<Box<Callback>>>,
}

impl LogitsProcessor {
    /// Wraps `f(context, logits)`; `logits` is the row, one entry per vocabulary token.
    pub fn new<F>(f: F) -> LogitsProcessor
    where
        F: FnMut(&LogitsContext<'_>, &mut [f32]) -> std::result::Result<(), ProcessorError> + Send + 'static,
    {
        LogitsProcessor { f: Arc::new(Mutex::new(Box::new(f))) }
    }
}

impl fmt::Debug for LogitsProcessor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogitsProcessor({:p})", Arc::as_ptr(&self.f))
    }
}

/// Equal when they share one closure (clones of one another).
impl PartialEq for LogitsProcessor {
    fn eq(&self, other: &LogitsProcessor) -> bool {
        Arc::ptr_eq(&self.f, &other.f)
    }
}

/// One submitted request's processor: what C's user pointer points to.
struct Live {
    processor: LogitsProcessor,
    /// Why the processor ended the request, for its error outputs.
    failure: Mutex<Option<String>>,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means the host's closure panicked once; that was reported already.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    match payload.downcast_ref::<&str>() {
        Some(s) => s,
        None => payload.downcast_ref::<String>().map_or("(not a string)", String::as_str),
    }
}

unsafe extern "C" fn trampoline(
    user: *mut c_void,
    request_id: u64,
    sequence_index: i32,
    token_ids: *const i32,
    n_tokens: usize,
    n_prompt_tokens: usize,
    logits: *mut f32,
    n_logits: usize,
) -> i32 {
    // SAFETY: `user` is the Box<Live> the engine's Processors holds until the request's last
    // output has been polled, after which C calls no more.
    let live = &*(user as *const Live);
    // A panic must not unwind into C (undefined behaviour): it is caught and ends the request.
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let context = LogitsContext {
            request_id,
            sequence_index,
            // SAFETY: request.h: both arrays are valid during the call, the row writable.
            token_ids: slice(token_ids, n_tokens),
            n_prompt_tokens,
        };
        let row: &mut [f32] = if logits.is_null() || n_logits == 0 {
            &mut []
        } else {
            std::slice::from_raw_parts_mut(logits, n_logits)
        };
        (*lock(&live.processor.f))(&context, row)
    }));
    let failure = match outcome {
        Ok(Ok(())) => return 0,
        // After the library's "request N: the logits processor returned 1: ".
        Ok(Err(e)) => e.to_string(),
        Err(payload) => format!("panicked: {}", panic_text(&*payload)),
    };
    *lock(&live.failure) = Some(failure);
    1
}

/// The processors of an engine's live requests, by request id: request.h wants the user
/// pointer valid until the request's last output, so each is dropped once that output is
/// polled, or with the engine.
#[derive(Default)]
pub(crate) struct Processors {
    live: Mutex<HashMap<u64, Box<Live>>>,
}

impl fmt::Debug for Processors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Processors({} live)", lock(&self.live).len())
    }
}

impl Processors {
    /// Runs `submit` with `raw` calling `processor` (when there is one) and keeps the processor
    /// for the request it made.
    pub(crate) fn submit(
        &self,
        processor: Option<&LogitsProcessor>,
        raw: &mut sys::pagoda_request_options_t,
        submit: impl FnOnce(&sys::pagoda_request_options_t) -> Result<u64>,
    ) -> Result<u64> {
        let processor = match processor {
            Some(p) => p,
            None => return submit(raw),
        };
        let live = Box::new(Live { processor: processor.clone(), failure: Mutex::new(None) });
        raw.logits_processor = Some(trampoline);
        // The Box's heap address stays put when the Box moves into the map.
        raw.logits_processor_user = &*live as *const Live as *mut c_void;
        // Held across the submit: a poll on another thread could otherwise take the request's
        // last output before it is registered, and the processor would never be dropped. The
        // trampoline never takes it, so a step running meanwhile cannot deadlock on it.
        let mut map = lock(&self.live);
        let id = submit(raw)?;
        map.insert(id, live);
        Ok(id)
    }

    /// Sees every polled output: puts the processor's reason into its request's error, and
    /// drops the processor with the request's last output.
    pub(crate) fn polled(&self, output: &mut Output) {
        if output.error.is_none() && !output.request_finished {
            return; // the common case: nothing to do, no lock taken
        }
        let mut map = lock(&self.live);
        let failure = match map.get(&output.request_id) {
            Some(live) => lock(&live.failure).clone(),
            None => return,
        };
        if let (Some(error), Some(failure)) = (output.error.as_mut(), failure) {
            *error = crate::Error::new(error.status(), format!("{}: {}", error.message(), failure));
        }
        if output.request_finished {
            map.remove(&output.request_id);
        }
    }
}
