package pagoda

/*
#include <stdlib.h>
#include "pagoda/tokenizer.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Tokenizer turns text into token ids and back. It is immutable: its methods are safe from any
// goroutine.
type Tokenizer struct {
	h handle
}

// Flags of Tokenizer.Encode and Tokenizer.Decode.
const (
	// TokenizeAddSpecial adds the BOS/EOS or template tokens the post-processor adds.
	TokenizeAddSpecial uint32 = C.PAGODA_TOKENIZE_ADD_SPECIAL
	// TokenizeParseSpecial reads text that spells a special token as that token.
	TokenizeParseSpecial uint32 = C.PAGODA_TOKENIZE_PARSE_SPECIAL
	// DetokenizeSkipSpecial leaves special tokens out of decoded text.
	DetokenizeSkipSpecial uint32 = C.PAGODA_DETOKENIZE_SKIP_SPECIAL
)

// TokenizerInfo is a pagoda_tokenizer_info_t.
type TokenizerInfo struct {
	VocabSize  int32
	BOSTokenID int32  // -1 when none
	EOSTokenID int32  // -1 when none
	UnkTokenID int32  // -1 when none
	PadTokenID int32  // -1 when none
	Model      string // "bpe" or "spm"
}

// OpenTokenizer opens a Hugging Face tokenizer.json, or a folder holding one.
func OpenTokenizer(path string) (*Tokenizer, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(path)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_tokenizer_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_tokenizer_open(cpath, &out) }); err != nil {
		return nil, err
	}
	return newTokenizer(out), nil
}

// Tokenizer is the tokenizer the model carries; it stays valid after the model is closed.
func (m *Model) Tokenizer() (*Tokenizer, error) {
	var out *C.pagoda_tokenizer_t
	if err := m.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_tokenizer_from_model((*C.pagoda_model_t)(p), &out)
	}); err != nil {
		return nil, err
	}
	return newTokenizer(out), nil
}

func newTokenizer(p *C.pagoda_tokenizer_t) *Tokenizer {
	t := &Tokenizer{h: newHandle("tokenizer", unsafe.Pointer(p))}
	// A backstop: a tokenizer depends on no other handle, so it may go whenever unreachable.
	runtime.SetFinalizer(t, (*Tokenizer).Close)
	return t
}

// Close releases the tokenizer; calling it again does nothing.
func (t *Tokenizer) Close() {
	t.h.close(func(p unsafe.Pointer) { C.pagoda_tokenizer_destroy((*C.pagoda_tokenizer_t)(p)) })
	runtime.SetFinalizer(t, nil)
}

// Info describes the tokenizer.
func (t *Tokenizer) Info() (TokenizerInfo, error) {
	var ci C.pagoda_tokenizer_info_t
	ci.struct_size = C.uint32_t(unsafe.Sizeof(ci))
	if err := t.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_tokenizer_get_info((*C.pagoda_tokenizer_t)(p), &ci)
	}); err != nil {
		return TokenizerInfo{}, err
	}
	return TokenizerInfo{
		VocabSize:  int32(ci.vocab_size),
		BOSTokenID: int32(ci.bos_token_id),
		EOSTokenID: int32(ci.eos_token_id),
		UnkTokenID: int32(ci.unk_token_id),
		PadTokenID: int32(ci.pad_token_id),
		Model:      charArray(ci.model[:]),
	}, nil
}

// Encode turns text into token ids; flags are Tokenize* bits.
func (t *Tokenizer) Encode(text string, flags uint32) ([]int32, error) {
	var a cAlloc
	defer a.free()
	ctext := a.textBytes(text)
	var ids *C.int32_t
	var n C.size_t
	if err := t.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_tokenizer_encode((*C.pagoda_tokenizer_t)(p), ctext, C.size_t(len(text)),
			C.uint32_t(flags), &ids, &n)
	}); err != nil {
		return nil, err
	}
	defer C.pagoda_free(unsafe.Pointer(ids))
	return copyInt32s(ids, int(n)), nil
}

// Decode turns token ids into text, as Hugging Face's decode does; flags are Detokenize* bits.
func (t *Tokenizer) Decode(ids []int32, flags uint32) (string, error) {
	// Go memory holding no Go pointers may be passed to C for the length of a call.
	var cids *C.int32_t
	if len(ids) > 0 {
		cids = (*C.int32_t)(unsafe.Pointer(&ids[0]))
	}
	var text *C.char
	var n C.size_t
	if err := t.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_tokenizer_decode((*C.pagoda_tokenizer_t)(p), cids, C.size_t(len(ids)),
			C.uint32_t(flags), &text, &n)
	}); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(text))
	return C.GoStringN(text, C.int(n)), nil
}

// TokenPiece is the bytes one token stands for (not always whole UTF-8 characters).
func (t *Tokenizer) TokenPiece(id int32) ([]byte, error) {
	p, err := t.h.acquire()
	if err != nil {
		return nil, err
	}
	defer t.h.release()
	var n C.size_t
	// First ask for the length (a zero capacity fails with the length needed), then fetch.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := C.pagoda_tokenizer_token_to_piece((*C.pagoda_tokenizer_t)(p), C.int32_t(id), nil, 0, &n)
	if s == C.PAGODA_OK {
		return []byte{}, nil
	}
	if s != C.PAGODA_ERR_INVALID_ARGUMENT || n == 0 {
		return nil, lastError(s)
	}
	var a cAlloc
	defer a.free()
	buf := a.malloc(n)
	if s := C.pagoda_tokenizer_token_to_piece((*C.pagoda_tokenizer_t)(p), C.int32_t(id), (*C.char)(buf), n, &n); s != C.PAGODA_OK {
		return nil, lastError(s)
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// ChatTemplateOptions is a pagoda_chat_template_options_t; "" leaves a string option unset.
type ChatTemplateOptions struct {
	AddGenerationPrompt bool   // end with the header of the assistant's turn
	ChatTemplate        string // Jinja source to render instead of the tokenizer's own
	TemplateName        string // which of the tokenizer's named templates ("tool_use")
	ToolsJSON           string // the template's tools: a JSON array of tool schemas
	ContextJSON         string // more template variables, a JSON object
}

// ApplyChatTemplate renders an OpenAI-style JSON array of messages into prompt text with the
// tokenizer's chat template; opts may be nil for the defaults.
func (t *Tokenizer) ApplyChatTemplate(messagesJSON string, opts *ChatTemplateOptions) (string, error) {
	p, err := t.h.acquire()
	if err != nil {
		return "", err
	}
	defer t.h.release()
	var a cAlloc
	defer a.free()
	var co *C.pagoda_chat_template_options_t
	if opts != nil {
		co = (*C.pagoda_chat_template_options_t)(a.malloc(C.sizeof_pagoda_chat_template_options_t))
		C.pagoda_chat_template_options_init(co, C.sizeof_pagoda_chat_template_options_t)
		co.add_generation_prompt = C.int32_t(boolInt(opts.AddGenerationPrompt))
		co.chat_template = a.optString(opts.ChatTemplate)
		co.template_name = a.optString(opts.TemplateName)
		co.tools_json = a.optString(opts.ToolsJSON)
		co.context_json = a.optString(opts.ContextJSON)
	}
	cmsgs := a.cString(messagesJSON)
	if a.err != nil {
		return "", a.err
	}
	var text *C.char
	var n C.size_t
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_tokenizer_apply_chat_template((*C.pagoda_tokenizer_t)(p), cmsgs, co, &text, &n)
	}); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(text))
	return C.GoStringN(text, C.int(n)), nil
}
