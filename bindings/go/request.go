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
	// RequestFreshSeed ignores Seed and draws one from the operating system per request.
	RequestFreshSeed RequestFlags = C.PAGODA_REQUEST_FRESH_SEED
	// RequestEmbed makes an embedding request: nothing is generated, and its one output
	// carries the prompt's pooled hidden state as Output.Embedding (Engine.EmbedText is the
	// short way). It refuses, naming the field, what has no meaning without generation: N or
	// BestOf above 1, BeamWidth, Logprobs or PromptLogprobs other than -1, stop lists, logit
	// controls and a Constraint.
	RequestEmbed RequestFlags = C.PAGODA_REQUEST_EMBED
)

// Pooling is a pagoda_pooling_t: how an embedding request pools its prompt's hidden states.
type Pooling int32

// The poolings of request.h.
const (
	PoolingModel Pooling = C.PAGODA_POOLING_MODEL // the checkpoint's own; last for a plain decoder
	PoolingLast  Pooling = C.PAGODA_POOLING_LAST  // the last prompt token's state
	PoolingMean  Pooling = C.PAGODA_POOLING_MEAN  // the mean of every prompt token's state
)

// EmbeddingNormalize is a pagoda_embedding_normalize_t: whether an embedding request's vector
// is scaled to unit length.
type EmbeddingNormalize int32

// The normalizations of request.h.
const (
	// The checkpoint's own rule: L2 unless its sentence-transformers modules.json lists no
	// Normalize module.
	EmbeddingNormalizeModel EmbeddingNormalize = C.PAGODA_EMBEDDING_NORMALIZE_MODEL
	EmbeddingNormalizeL2    EmbeddingNormalize = C.PAGODA_EMBEDDING_NORMALIZE_L2   // unit L2 norm
	EmbeddingNormalizeNone  EmbeddingNormalize = C.PAGODA_EMBEDDING_NORMALIZE_NONE // as pooled
)

// ConstraintKind is a pagoda_constraint_kind_t (constraint.h): what a Constraint's text is.
type ConstraintKind int32

// The constraint kinds of constraint.h.
const (
	ConstraintNone       ConstraintKind = C.PAGODA_CONSTRAINT_NONE
	ConstraintGrammar    ConstraintKind = C.PAGODA_CONSTRAINT_GRAMMAR     // GBNF text
	ConstraintRegex      ConstraintKind = C.PAGODA_CONSTRAINT_REGEX       // the whole output matches
	ConstraintJSONSchema ConstraintKind = C.PAGODA_CONSTRAINT_JSON_SCHEMA // a JSON Schema's JSON text
	ConstraintJSONObject ConstraintKind = C.PAGODA_CONSTRAINT_JSON_OBJECT // any JSON object; no text
)

// Constraint is what a request's output must match (constraint_kind and constraint): the
// library compiles Text at submit and masks every step's logits with it, ending the sequence
// with FinishStopToken when nothing more may follow. A text that does not compile fails the
// submit with StatusInvalidArgument and a message naming the construct and where it is. The
// zero value is no constraint. Refused with beam search.
type Constraint struct {
	Kind ConstraintKind
	Text string // unread for ConstraintJSONObject
}

// GrammarConstraint holds the output to a grammar in GBNF (llama.cpp's format; root starts).
func GrammarConstraint(gbnf string) Constraint { return Constraint{ConstraintGrammar, gbnf} }

// RegexConstraint holds the whole output to a regular expression.
func RegexConstraint(pattern string) Constraint { return Constraint{ConstraintRegex, pattern} }

// JSONSchemaConstraint holds the output to a JSON Schema, given as its JSON text; properties
// are written in the text's order (a Go map marshalled by encoding/json would sort them).
func JSONSchemaConstraint(schema string) Constraint {
	return Constraint{ConstraintJSONSchema, schema}
}

// JSONObjectConstraint makes the output any JSON object.
func JSONObjectConstraint() Constraint { return Constraint{Kind: ConstraintJSONObject} }

// LogitBias is a pagoda_logit_bias_t: a bias in [-100, 100] added to one token's logit.
type LogitBias struct {
	TokenID int32
	Bias    float32
}

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
	LogitBias         []LogitBias
	BadWords          [][]int32  // token-id sequences that may not be completed
	AllowedTokenIDs   []int32    // only these may be sampled; empty = all
	MinTokens         int32      // end-of-sequence and stop ids masked until this many tokens
	Constraint        Constraint // what the output must match; the zero value: nothing
	// With RequestEmbed: how the vector is pooled and scaled (the zero values: the model's
	// rules, last token and L2). Both must be zero without the flag.
	Pooling            Pooling
	EmbeddingNormalize EmbeddingNormalize
	// LogitsProcessor, when not nil, changes the logits in place before each token is picked;
	// see LogitsProcessor for its goroutine and lifetime rules. Set in C at submit (toC leaves
	// it NULL), where its handle is made.
	LogitsProcessor LogitsProcessor
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
		Flags:              RequestFlags(c.flags),
		MaxTokens:          int32(c.max_tokens),
		Temperature:        float32(c.temperature),
		TopK:               int32(c.top_k),
		TopP:               float32(c.top_p),
		MinP:               float32(c.min_p),
		RepetitionPenalty:  float32(c.repetition_penalty),
		PresencePenalty:    float32(c.presence_penalty),
		FrequencyPenalty:   float32(c.frequency_penalty),
		Seed:               uint64(c.seed),
		Logprobs:           int32(c.logprobs),
		PromptLogprobs:     int32(c.prompt_logprobs),
		N:                  int32(c.n),
		BestOf:             int32(c.best_of),
		BeamWidth:          int32(c.beam_width),
		LengthPenalty:      float32(c.length_penalty),
		EarlyStopping:      c.early_stopping != 0,
		Priority:           int32(c.priority),
		MinTokens:          int32(c.min_tokens),
		Constraint:         Constraint{Kind: ConstraintKind(c.constraint_kind)},
		Pooling:            Pooling(c.pooling),
		EmbeddingNormalize: EmbeddingNormalize(c.embedding_normalize),
	}
	if c.constraint != nil {
		o.Constraint.Text = C.GoString(c.constraint)
	}
	if c.n_logit_bias > 0 {
		for _, b := range unsafe.Slice(c.logit_bias, int(c.n_logit_bias)) {
			o.LogitBias = append(o.LogitBias, LogitBias{int32(b.token_id), float32(b.bias)})
		}
	}
	if c.n_bad_words > 0 {
		lengths := unsafe.Slice(c.bad_words_lengths, int(c.n_bad_words))
		total := 0
		for _, n := range lengths {
			total += int(n)
		}
		ids := copyInt32s(c.bad_words_token_ids, total)
		for _, n := range lengths {
			o.BadWords = append(o.BadWords, ids[:int(n):int(n)])
			ids = ids[int(n):]
		}
	}
	o.AllowedTokenIDs = copyInt32s(c.allowed_token_ids, int(c.n_allowed_token_ids))
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
	c.min_tokens = C.int32_t(o.MinTokens)
	o.controlsToC(c, a)
	c.constraint_kind = C.int32_t(o.Constraint.Kind)
	// A C copy, freed once the call returns: the library copies the text at submit. No
	// constraint leaves the header's NULL.
	if o.Constraint != (Constraint{}) {
		c.constraint = a.cString(o.Constraint.Text)
	}
	c.pooling = C.int32_t(o.Pooling)
	c.embedding_normalize = C.int32_t(o.EmbeddingNormalize)
	return c
}

// controlsToC copies LogitBias, BadWords and AllowedTokenIDs into C memory from a.
func (o *RequestOptions) controlsToC(c *C.pagoda_request_options_t, a *cAlloc) {
	if n := len(o.LogitBias); n > 0 {
		size := C.size_t(n) * C.sizeof_pagoda_logit_bias_t
		bias := unsafe.Slice((*C.pagoda_logit_bias_t)(a.malloc(size)), n)
		for i, b := range o.LogitBias {
			bias[i].token_id = C.int32_t(b.TokenID)
			bias[i].bias = C.float(b.Bias)
		}
		c.logit_bias = &bias[0]
		c.n_logit_bias = C.size_t(n)
	}
	if n := len(o.BadWords); n > 0 {
		total := 0
		for _, w := range o.BadWords {
			total += len(w)
		}
		lengthBytes := C.size_t(n) * C.size_t(unsafe.Sizeof(C.size_t(0)))
		lengths := unsafe.Slice((*C.size_t)(a.malloc(lengthBytes)), n)
		ids := unsafe.Slice((*C.int32_t)(a.malloc(C.size_t(total+1)*C.sizeof_int32_t)), total+1)
		at := 0
		for i, w := range o.BadWords {
			lengths[i] = C.size_t(len(w))
			for _, id := range w {
				ids[at] = C.int32_t(id)
				at++
			}
		}
		c.bad_words_token_ids = &ids[0]
		c.bad_words_lengths = &lengths[0]
		c.n_bad_words = C.size_t(n)
	}
	if n := len(o.AllowedTokenIDs); n > 0 {
		ids := unsafe.Slice((*C.int32_t)(a.malloc(C.size_t(n)*C.sizeof_int32_t)), n)
		for i, id := range o.AllowedTokenIDs {
			ids[i] = C.int32_t(id)
		}
		c.allowed_token_ids = &ids[0]
		c.n_allowed_token_ids = C.size_t(n)
	}
}
