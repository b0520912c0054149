//! tokenizer.h: text to token ids and back, and chat templates.

use crate::common::{pagoda_model_t, pagoda_tokenizer_t};
use crate::status::pagoda_status_t;
use std::os::raw::c_char;

pub const PAGODA_TOKENIZE_ADD_SPECIAL: u32 = 1;
pub const PAGODA_TOKENIZE_PARSE_SPECIAL: u32 = 2;
pub const PAGODA_DETOKENIZE_SKIP_SPECIAL: u32 = 1;

/// `pagoda_tokenizer_info_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_tokenizer_info_t {
    pub struct_size: u32,
    pub vocab_size: i32,
    pub bos_token_id: i32,
    pub eos_token_id: i32,
    pub unk_token_id: i32,
    pub pad_token_id: i32,
    pub model: [c_char; 16],
}

/// `pagoda_chat_template_options_t`. Initialise with `pagoda_chat_template_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_chat_template_options_t {
    pub struct_size: u32,
    pub add_generation_prompt: i32,
    pub chat_template: *const c_char,
    pub template_name: *const c_char,
    pub tools_json: *const c_char,
    pub context_json: *const c_char,
}

extern "C" {
    pub fn pagoda_tokenizer_open(path: *const c_char, out: *mut *mut pagoda_tokenizer_t) -> pagoda_status_t;
    pub fn pagoda_tokenizer_from_model(
        model: *const pagoda_model_t,
        out: *mut *mut pagoda_tokenizer_t,
    ) -> pagoda_status_t;
    pub fn pagoda_tokenizer_destroy(tokenizer: *mut pagoda_tokenizer_t);
    pub fn pagoda_tokenizer_get_info(
        tokenizer: *const pagoda_tokenizer_t,
        info: *mut pagoda_tokenizer_info_t,
    ) -> pagoda_status_t;
    /// `*ids` is released with `pagoda_free`.
    pub fn pagoda_tokenizer_encode(
        tokenizer: *const pagoda_tokenizer_t,
        text: *const c_char,
        text_len: usize,
        flags: u32,
        ids: *mut *mut i32,
        n_ids: *mut usize,
    ) -> pagoda_status_t;
    /// `*text` is released with `pagoda_free`.
    pub fn pagoda_tokenizer_decode(
        tokenizer: *const pagoda_tokenizer_t,
        ids: *const i32,
        n_ids: usize,
        flags: u32,
        text: *mut *mut c_char,
        text_len: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_tokenizer_token_to_piece(
        tokenizer: *const pagoda_tokenizer_t,
        id: i32,
        buffer: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> pagoda_status_t;
    pub fn pagoda_chat_template_options_init(options: *mut pagoda_chat_template_options_t, size: usize);
    /// `*text` is released with `pagoda_free`.
    pub fn pagoda_tokenizer_apply_chat_template(
        tokenizer: *const pagoda_tokenizer_t,
        messages_json: *const c_char,
        options: *const pagoda_chat_template_options_t,
        text: *mut *mut c_char,
        text_len: *mut usize,
    ) -> pagoda_status_t;
}
