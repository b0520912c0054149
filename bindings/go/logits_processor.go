package pagoda

/*
#include <stdint.h>
#include "pagoda/engine.h"

// Defined in Go (logits_processor_export.go, whose preamble may hold no C definitions).
extern int32_t pagodaGoLogitsProcessor(uintptr_t handle, uint64_t request_id,
                                       int32_t sequence_index, int32_t *token_ids,
                                       size_t n_tokens, size_t n_prompt_tokens, float *logits,
                                       size_t n_logits);

// The C processor every Go one goes through. The user pointer carries a cgo.Handle, an
// integer: no Go pointer is handed to C.
static int32_t pagoda_go_logits_processor(void *user, uint64_t request_id,
                                          int32_t sequence_index, const int32_t *token_ids,
                                          size_t n_tokens, size_t n_prompt_tokens, float *logits,
                                          size_t n_logits) {
	return pagodaGoLogitsProcessor((uintptr_t)user, request_id, sequence_index,
	                               (int32_t *)token_ids, n_tokens, n_prompt_tokens, logits,
	                               n_logits);
}

// Sets the processor in C, where an integer may become a void * without vet's complaint.
static void pagoda_go_set_logits_processor(pagoda_request_options_t *o, uintptr_t handle) {
	o->logits_processor = pagoda_go_logits_processor;
	o->logits_processor_user = (void *)handle;
}
*/
import "C"

import (
	"runtime/cgo"
	"sync"
)

// LogitsProcessor changes a request's logits in place before each token is picked
// (RequestOptions.LogitsProcessor). It is told the request's id, which of its sequences the
// row is for (0 .. BestOf-1), the sequence's tokens so far (the prompt's nPromptTokens, then
// what it generated) and the row, one float32 per vocabulary token. Both slices are C memory,
// valid during the call only: copy what must outlive it.
//
// It runs after the allowed ids, bad words, bias and MinTokens and before the penalties and
// temperature, on the goroutine that steps the engine (Step, or a Stream's Next), with the
// engine's lock held: it must not call any method of that engine or of its Streams, which
// would deadlock. It may set logits to float32(math.Inf(-1)), never to NaN or +Inf. A non-nil
// error, or a panic, ends the request with FinishError and StatusCancelled; the output's Err
// then wraps the error (errors.Is finds it) and carries its text. The engine keeps the func
// until the request's last output has been read, or until Close. Refused with
// StatusUnsupported on a mesh over processes.
type LogitsProcessor func(requestID uint64, sequenceIndex int, tokenIDs []int32,
	nPromptTokens int, logits []float32) error

// liveProcessor is one submitted request's processor, as C reaches it through handle.
type liveProcessor struct {
	fn     LogitsProcessor
	handle cgo.Handle

	mu      sync.Mutex
	failure error // why fn ended the request, for its error outputs
}

func (lp *liveProcessor) fail(err error) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.failure = err
}

func (lp *liveProcessor) failed() error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.failure
}

// setLogitsProcessor makes co call fn through a new handle, released by the router once the
// request's last output has moved to Go (by the submit itself when it fails).
func setLogitsProcessor(co *C.pagoda_request_options_t, fn LogitsProcessor) *liveProcessor {
	lp := &liveProcessor{fn: fn}
	lp.handle = cgo.NewHandle(lp)
	C.pagoda_go_set_logits_processor(co, C.uintptr_t(lp.handle))
	return lp
}

// addProcessor keeps lp for request id until its last output. The caller holds cmu since
// before the submit, so none of the request's outputs has moved yet.
func (r *router) addProcessor(id uint64, lp *liveProcessor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processors[id] = lp
}

// processorOutput sees each output on its way to a reader (the caller holds mu): an error
// output of a request whose processor failed gets the processor's error, and the request's
// last output releases the processor.
func (r *router) processorOutput(o *Output) {
	lp := r.processors[o.RequestID]
	if lp == nil {
		return
	}
	if failure := lp.failed(); failure != nil {
		if perr, ok := o.Err.(*Error); ok {
			o.Err = &Error{Status: perr.Status, Message: perr.Message + ": " + failure.Error(),
				cause: failure}
		}
	}
	if o.RequestFinished {
		delete(r.processors, o.RequestID)
		lp.handle.Delete()
	}
}

// releaseProcessors drops every processor left, once the engine that called them is gone.
func (r *router) releaseProcessors() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, lp := range r.processors {
		delete(r.processors, id)
		lp.handle.Delete()
	}
}
