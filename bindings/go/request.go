package pagoda

/*
#include "pagoda/engine.h"
*/
import "C"

import "unsafe"

// RequestFlags are PAGODA_REQUEST_* bits.
type RequestFlags uint32

// The request flags of engine.h.
const (
	RequestIgnoreEOS         RequestFlags = C.PAGODA_REQUEST_IGNORE_EOS
	RequestKeepSpecialText   RequestFlags = C.PAGODA_REQUEST_KEEP_SPECIAL_TEXT
	RequestIncludeStopString RequestFlags = C.PAGODA_REQUEST_INCLUDE_STOP_STRING
	RequestNoSpecialTokens   RequestFlags = C.PAGODA_REQUEST_NO_SPECIAL_TOKENS
)

// RequestOptions is a pagoda_request_options_t: a request's sampling and stopping.
// Start from DefaultRequestOptions; the fields are the header's.
type RequestOptions struct {
	Flags             RequestFlags
	MaxTokens         int32
	Temperature       float32 // 0 = greedy
	TopK              int32   // 0 = all
	TopP              float32
	MinP              float32
	RepetitionPenalty float32
	PresencePenalty   float32
	FrequencyPenalty  float32
	Seed              uint64
	StopTokenIDs      []int32
	StopStrings       []string
	Logprobs          int32 // top-n log-probabilities per generated token; -1 = none
	PromptLogprobs    int32 // per prompt token; -1 = none
	N                 int32 // sequences to return
	BestOf            int32 // sequences to generate; 0 = N
	BeamWidth         int32 // > 0: beam search of this width
	LengthPenalty     float32
	EarlyStopping     bool
	Priority          int32 // lower runs first among waiting requests
}

// DefaultRequestOptions are the library's defaults (pagoda_request_options_init).
func DefaultRequestOptions() RequestOptions {
	var c C.pagoda_request_options_t
	C.pagoda_request_options_init(&c, C.sizeof_pagoda_request_options_t)
	return requestOptionsFromC(&c)
}

// requestOptionsFromC reads a C struct back (the defaults, and the layout test's round trip).
func requestOptionsFromC(c *C.pagoda_request_options_t) RequestOptions {
	o := RequestOptions{
		Flags:             RequestFlags(c.flags),
		MaxTokens:         int32(c.max_tokens),
		Temperature:       float32(c.temperature),
		TopK:              int32(c.top_k),
		TopP:              float32(c.top_p),
		MinP:              float32(c.min_p),
		RepetitionPenalty: float32(c.repetition_penalty),
		PresencePenalty:   float32(c.presence_penalty),
		FrequencyPenalty:  float32(c.frequency_penalty),
		Seed:              uint64(c.seed),
		Logprobs:          int32(c.logprobs),
		PromptLogprobs:    int32(c.prompt_logprobs),
		N:                 int32(c.n),
		BestOf:            int32(c.best_of),
		BeamWidth:         int32(c.beam_width),
		LengthPenalty:     float32(c.length_penalty),
		EarlyStopping:     c.early_stopping != 0,
		Priority:          int32(c.priority),
	}
	o.StopTokenIDs = copyInt32s(c.stop_token_ids, int(c.n_stop_token_ids))
	if c.n_stop_strings > 0 {
		for _, p := range unsafe.Slice(c.stop_strings, int(c.n_stop_strings)) {
			o.StopStrings = append(o.StopStrings, C.GoString(p))
		}
	}
	return o
}

// toC fills a C struct from o in memory from a (nil o: NULL, the defaults). The stop lists
// are copied into C memory: a struct in Go memory may not point at Go memory when it reaches C.
func (o *RequestOptions) toC(a *cAlloc) *C.pagoda_request_options_t {
	if o == nil {
		return nil
	}
	c := (*C.pagoda_request_options_t)(a.malloc(C.sizeof_pagoda_request_options_t))
	C.pagoda_request_options_init(c, C.sizeof_pagoda_request_options_t)
	c.flags = C.uint32_t(o.Flags)
	c.max_tokens = C.int32_t(o.MaxTokens)
	c.temperature = C.float(o.Temperature)
	c.top_k = C.int32_t(o.TopK)
	c.top_p = C.float(o.TopP)
	c.min_p = C.float(o.MinP)
	c.repetition_penalty = C.float(o.RepetitionPenalty)
	c.presence_penalty = C.float(o.PresencePenalty)
	c.frequency_penalty = C.float(o.FrequencyPenalty)
	c.seed = C.uint64_t(o.Seed)
	if n := len(o.StopTokenIDs); n > 0 {
		ids := unsafe.Slice((*C.int32_t)(a.malloc(C.size_t(n)*C.sizeof_int32_t)), n)
		for i, id := range o.StopTokenIDs {
			ids[i] = C.int32_t(id)
		}
		c.stop_token_ids = &ids[0]
		c.n_stop_token_ids = C.size_t(n)
	}
	if n := len(o.StopStrings); n > 0 {
		strs := unsafe.Slice((**C.char)(a.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
		for i, s := range o.StopStrings {
			strs[i] = a.cString(s)
		}
		c.stop_strings = &strs[0]
		c.n_stop_strings = C.size_t(n)
	}
	c.logprobs = C.int32_t(o.Logprobs)
	c.prompt_logprobs = C.int32_t(o.PromptLogprobs)
	c.n = C.int32_t(o.N)
	c.best_of = C.int32_t(o.BestOf)
	c.beam_width = C.int32_t(o.BeamWidth)
	c.length_penalty = C.float(o.LengthPenalty)
	c.early_stopping = C.int32_t(boolInt(o.EarlyStopping))
	c.priority = C.int32_t(o.Priority)
	return c
}
