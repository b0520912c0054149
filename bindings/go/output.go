package pagoda

/*
#include "pagoda/engine.h"
*/
import "C"

import "unsafe"

// FinishReason is a pagoda_finish_reason_t: why a sequence ended.
type FinishReason int32

// The finish reasons of engine.h.
const (
	FinishNone       FinishReason = C.PAGODA_FINISH_NONE // still running
	FinishLength     FinishReason = C.PAGODA_FINISH_LENGTH
	FinishStopToken  FinishReason = C.PAGODA_FINISH_STOP_TOKEN
	FinishStopString FinishReason = C.PAGODA_FINISH_STOP_STRING
	FinishAborted    FinishReason = C.PAGODA_FINISH_ABORTED
	FinishError      FinishReason = C.PAGODA_FINISH_ERROR
)

func (r FinishReason) String() string {
	switch r {
	case FinishNone:
		return "none"
	case FinishLength:
		return "length"
	case FinishStopToken:
		return "stop_token"
	case FinishStopString:
		return "stop_string"
	case FinishAborted:
		return "aborted"
	case FinishError:
		return "error"
	}
	return "unknown"
}

// Logprob is a pagoda_logprob_t: a token and its log-probability.
type Logprob struct {
	TokenID int32
	Logprob float32
}

// Output is a pagoda_output_t, copied into Go memory: what one sequence of a request produced
// since its previous output.
type Output struct {
	RequestID    uint64
	FinishReason FinishReason // FinishNone while the sequence runs
	// Err is set when FinishReason is FinishError: an *Error with the output's status and message.
	Err               error
	TokenIDs          []int32
	Text              string      // new text, whole UTF-8 characters
	Logprobs          []float32   // per new token, when asked
	TopLogprobs       [][]Logprob // per new token its top-n, most likely first, when asked
	NPromptTokens     int
	NGenerated        int       // tokens generated so far, these included
	PromptLogprobs    []float32 // per prompt position (NaN for 0), first output only, when asked
	PromptTopLogprobs [][]Logprob
	SequenceIndex     int32 // which of the request's sequences (beam rank under beam search)
	CumulativeLogprob float32
	RequestFinished   bool // the request's very last output
	// Embedding is an embedding request's (RequestEmbed) pooled vector, the model's hidden
	// size of float32, on its one output when it finished normally; nil otherwise.
	Embedding []float32
}

// copyOutput copies what c points at; it runs before the thread polls the engine again, which
// would reuse that storage.
func copyOutput(c *C.pagoda_output_t) Output {
	o := Output{
		RequestID:         uint64(c.request_id),
		FinishReason:      FinishReason(c.finish_reason),
		TokenIDs:          copyInt32s(c.token_ids, int(c.n_tokens)),
		Text:              C.GoStringN(c.text, C.int(c.text_len)),
		NPromptTokens:     int(c.n_prompt_tokens),
		NGenerated:        int(c.n_generated),
		SequenceIndex:     int32(c.sequence_index),
		CumulativeLogprob: float32(c.cumulative_logprob),
		RequestFinished:   c.request_finished != 0,
	}
	if o.FinishReason == FinishError {
		o.Err = &Error{Status: Status(c.status), Message: C.GoString(c.error)}
	}
	o.Logprobs = copyFloats(c.logprobs, int(c.n_tokens))
	o.TopLogprobs = copyLogprobRows(c.top_logprobs, int(c.n_tokens), int(c.n_top_logprobs))
	o.PromptLogprobs = copyFloats(c.prompt_logprobs, int(c.n_prompt_tokens))
	o.PromptTopLogprobs = copyLogprobRows(c.prompt_top_logprobs, int(c.n_prompt_tokens),
		int(c.n_prompt_top_logprobs))
	// Valid until the next poll only, like the rest: copied now.
	o.Embedding = copyFloats(c.embedding, int(c.n_embedding))
	return o
}

// copyLogprobRows copies a C array [rows][cols] of pagoda_logprob_t (nil when p is NULL). The
// rows share one backing array (two allocations, not one per row: prompt rows are many);
// each row's capacity ends at its length, so appending to one never writes into the next.
func copyLogprobRows(p *C.pagoda_logprob_t, rows, cols int) [][]Logprob {
	if p == nil || rows == 0 {
		return nil
	}
	flat := make([]Logprob, rows*cols)
	for i, e := range unsafe.Slice(p, rows*cols) {
		flat[i] = Logprob{TokenID: int32(e.token_id), Logprob: float32(e.logprob)}
	}
	out := make([][]Logprob, rows)
	for r := range out {
		out[r] = flat[r*cols : (r+1)*cols : (r+1)*cols]
	}
	return out
}
