//! Tokenizers: text to token ids and back, and chat templates.

use crate::convert::{fetch, Defaults};
use crate::cstr::{opt_ptr, opt_to_c, path_to_c, slice, take_owned, to_c};
use crate::error::{check, non_null, Result};
use crate::model::Model;
use pagoda_sys as sys;
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::{self, NonNull};

/// [`Tokenizer::encode`] flag: add the BOS/EOS or template tokens the post-processor adds.
pub const TOKENIZE_ADD_SPECIAL: u32 = sys::PAGODA_TOKENIZE_ADD_SPECIAL;
/// [`Tokenizer::encode`] flag: text spelling a special token becomes that token.
pub const TOKENIZE_PARSE_SPECIAL: u32 = sys::PAGODA_TOKENIZE_PARSE_SPECIAL;
/// [`Tokenizer::decode`] flag: leave special tokens out of the text.
pub const DETOKENIZE_SKIP_SPECIAL: u32 = sys::PAGODA_DETOKENIZE_SKIP_SPECIAL;

/// A tokenizer: a Hugging Face `tokenizer.json`, or the vocabulary a model carries.
#[derive(Debug)]
pub struct Tokenizer {
    raw: NonNull<sys::pagoda_tokenizer_t>,
}

// SAFETY: tokenizer.h: "A tokenizer is immutable once opened: every function here is safe from
// any thread"; it is not tied to the opening thread, and destroy runs from Drop (`&mut self`).
unsafe impl Send for Tokenizer {}
// SAFETY: as above; encode, decode and the others may run on the same tokenizer at once.
unsafe impl Sync for Tokenizer {}

c_struct! {
    /// What a tokenizer is. Ids are `None` where the tokenizer has no such token.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct TokenizerInfo from sys::pagoda_tokenizer_info_t {
        pub vocab_size: i32,
        pub bos_token_id: Option<i32>,
        pub eos_token_id: Option<i32>,
        pub unk_token_id: Option<i32>,
        pub pad_token_id: Option<i32>,
        /// "bpe" (byte-level) or "spm" (SentencePiece-style).
        pub model: String,
    }
}

/// How [`Tokenizer::apply_chat_template`] renders; the default is the tokenizer's own template
/// with nothing added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatTemplateOptions {
    /// End with the header of the assistant's turn.
    pub add_generation_prompt: bool,
    /// Jinja source to render instead of the tokenizer's own template.
    pub chat_template: Option<String>,
    /// Which of the tokenizer's named templates ("tool_use", "rag").
    pub template_name: Option<String>,
    /// The template's `tools`: a JSON array of tool schemas.
    pub tools_json: Option<String>,
    /// More template variables as a JSON object.
    pub context_json: Option<String>,
}

impl Tokenizer {
    /// Opens a `tokenizer.json` file, or a folder holding one (and its `tokenizer_config.json`).
    pub fn open(path: impl AsRef<Path>) -> Result<Tokenizer> {
        let path = path_to_c("path", path.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out-pointer.
        check(unsafe { sys::pagoda_tokenizer_open(path.as_ptr(), &mut out) })?;
        Tokenizer::from_out(out)
    }

    /// The tokenizer `model` carries; it stays valid after the model is dropped.
    pub fn from_model(model: &Model) -> Result<Tokenizer> {
        let mut out = ptr::null_mut();
        // SAFETY: a live model and a valid out-pointer.
        check(unsafe { sys::pagoda_tokenizer_from_model(model.as_ptr(), &mut out) })?;
        Tokenizer::from_out(out)
    }

    fn from_out(raw: *mut sys::pagoda_tokenizer_t) -> Result<Tokenizer> {
        Ok(Tokenizer { raw: non_null(raw, "tokenizer")? })
    }

    /// Describes the tokenizer.
    pub fn info(&self) -> Result<TokenizerInfo> {
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|info| unsafe { sys::pagoda_tokenizer_get_info(self.raw.as_ptr(), info) })
    }

    /// Text to token ids; `flags` holds `TOKENIZE_*` bits (unknown bits are an error).
    pub fn encode(&self, text: &str, flags: u32) -> Result<Vec<i32>> {
        let (mut ids, mut n) = (ptr::null_mut(), 0usize);
        // SAFETY: `text` is passed with its length (no NUL needed); valid out-pointers.
        check(unsafe {
            sys::pagoda_tokenizer_encode(
                self.raw.as_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                flags,
                &mut ids,
                &mut n,
            )
        })?;
        // SAFETY: `n` ids the library allocated (NULL when n is 0), copied then released.
        unsafe {
            let copy = slice(ids, n).to_vec();
            sys::pagoda_free(ids as *mut c_void);
            Ok(copy)
        }
    }

    /// Token ids to text, as Hugging Face's `decode` gives it; `flags` holds `DETOKENIZE_*` bits.
    pub fn decode(&self, ids: &[i32], flags: u32) -> Result<String> {
        let mut text = ptr::null_mut();
        // SAFETY: `ids` with its length; valid out-pointers (the length may be NULL: the
        // string is NUL-terminated and valid UTF-8).
        check(unsafe {
            sys::pagoda_tokenizer_decode(
                self.raw.as_ptr(),
                ids.as_ptr(),
                ids.len(),
                flags,
                &mut text,
                ptr::null_mut(),
            )
        })?;
        // SAFETY: a string the library handed over.
        Ok(unsafe { take_owned(text) })
    }

    /// The bytes one token stands for; a piece may be part of a UTF-8 character.
    pub fn token_to_piece(&self, id: i32) -> Result<Vec<u8>> {
        let mut buffer = vec![0u8; 64];
        loop {
            let mut length = usize::MAX;
            // SAFETY: a buffer of `buffer.len()` bytes and a valid out-pointer.
            let status = unsafe {
                sys::pagoda_tokenizer_token_to_piece(
                    self.raw.as_ptr(),
                    id,
                    buffer.as_mut_ptr() as *mut c_char,
                    buffer.len(),
                    &mut length,
                )
            };
            // Too small is INVALID_ARGUMENT with the needed length written; a bad id leaves
            // `length` alone.
            if status == sys::PAGODA_ERR_INVALID_ARGUMENT && length != usize::MAX && length > buffer.len() {
                buffer.resize(length, 0);
                continue;
            }
            check(status)?;
            buffer.truncate(length);
            return Ok(buffer);
        }
    }

    /// Renders a conversation (an OpenAI-style JSON array of messages) into prompt text with the
    /// tokenizer's chat template, as transformers' `apply_chat_template(tokenize=False)` does.
    pub fn apply_chat_template(&self, messages_json: &str, options: &ChatTemplateOptions) -> Result<String> {
        let messages = to_c("messages_json", messages_json)?;
        let chat_template = opt_to_c("chat_template", options.chat_template.as_deref())?;
        let template_name = opt_to_c("template_name", options.template_name.as_deref())?;
        let tools_json = opt_to_c("tools_json", options.tools_json.as_deref())?;
        let context_json = opt_to_c("context_json", options.context_json.as_deref())?;
        let mut raw = sys::pagoda_chat_template_options_t::defaults();
        raw.add_generation_prompt = i32::from(options.add_generation_prompt);
        raw.chat_template = opt_ptr(&chat_template);
        raw.template_name = opt_ptr(&template_name);
        raw.tools_json = opt_ptr(&tools_json);
        raw.context_json = opt_ptr(&context_json);
        let mut text = ptr::null_mut();
        // SAFETY: the C strings outlive the call; valid out-pointers.
        check(unsafe {
            sys::pagoda_tokenizer_apply_chat_template(
                self.raw.as_ptr(),
                messages.as_ptr(),
                &raw,
                &mut text,
                ptr::null_mut(),
            )
        })?;
        // SAFETY: a string the library handed over.
        Ok(unsafe { take_owned(text) })
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`).
        unsafe { sys::pagoda_tokenizer_destroy(self.raw.as_ptr()) }
    }
}
