package pagoda

import (
	"errors"
	"fmt"
	"runtime"
)

// Stream reads one request's outputs as they come, driving the engine itself: Next polls and,
// when nothing of its request is queued, steps the engine (which advances every request).
// Several goroutines may each read their own Stream of one engine at once. Use it as
//
//	for s.Next() { piece := s.Output().Text }
//	if err := s.Err(); err != nil { ... }
//
// A Stream's methods are for one goroutine at a time.
type Stream struct {
	e        *Engine
	id       uint64
	q        *queue // the request's outputs, moved there from C by the router
	cur      Output
	err      error
	finished bool // the request's last output was read
}

// StreamText submits a text prompt and returns a Stream of its outputs.
func (e *Engine) StreamText(text string, opts *RequestOptions) (*Stream, error) {
	return e.stream(func() (uint64, error) { return e.submitText(text, opts, true) })
}

// StreamTokens submits a prompt of token ids and returns a Stream of its outputs.
func (e *Engine) StreamTokens(ids []int32, opts *RequestOptions) (*Stream, error) {
	return e.stream(func() (uint64, error) { return e.submitTokens(ids, opts, true) })
}

func (e *Engine) stream(submit func() (uint64, error)) (*Stream, error) {
	// Submitting while outputs cannot move from C: none of the request's can reach another
	// reader before it is claimed.
	e.r.cmu.Lock()
	defer e.r.cmu.Unlock()
	id, err := submit()
	if err != nil {
		return nil, err
	}
	s := &Stream{e: e, id: id, q: e.r.claim(id)}
	// A backstop for a stream dropped unread: its request is aborted and its outputs no
	// longer kept (nobody is left to hear about a failure).
	runtime.SetFinalizer(s, func(s *Stream) { _ = s.Close() })
	return s, nil
}

// ID is the request's id.
func (s *Stream) ID() uint64 { return s.id }

// Next advances to the request's next output; false when the request has ended (after its
// last output) or the engine failed (see Err).
func (s *Stream) Next() bool {
	if s.finished || s.err != nil {
		return false
	}
	for stepped := false; ; stepped = true {
		o, ok, err := s.e.r.take(s.e, s.q, false)
		if err != nil {
			return s.fail(err)
		}
		if ok {
			s.deliver(o)
			return true
		}
		if stepped {
			// A step gave the request nothing (it waits its turn, or its prompt is being read
			// in chunks), unless it has ended unseen: check that something still runs.
			work, err := s.e.hasWorkSettled()
			if err != nil {
				return s.fail(err)
			}
			if !work {
				// Every output is queued by now: read once more.
				if o, ok, err = s.e.r.take(s.e, s.q, true); err != nil {
					return s.fail(err)
				}
				if ok {
					s.deliver(o)
					return true
				}
				return s.fail(&Error{Status: StatusInternal, Message: fmt.Sprintf(
					"request %d is not running and its last output never came", s.id)})
			}
		}
		if err := s.e.Step(); err != nil {
			return s.fail(err)
		}
	}
}

func (s *Stream) deliver(o Output) {
	s.cur = o
	if o.Err != nil && s.err == nil {
		// The output is still read; the stream ends after it with this error.
		s.err = o.Err
	}
	if o.RequestFinished {
		s.finished = true
		s.e.r.release(s.id, false)
		runtime.SetFinalizer(s, nil)
	}
}

func (s *Stream) fail(err error) bool {
	s.err = err
	return false
}

// Output is the output Next advanced to.
func (s *Stream) Output() Output { return s.cur }

// Err is what ended the stream early: a failed call, or an output that finished with
// FinishError. It is nil for a request that ran to its end, aborted ones included.
func (s *Stream) Err() error { return s.err }

// Finished says whether the request's last output has been read.
func (s *Stream) Finished() bool { return s.finished }

// Abort ends the request now; Next then reads its remaining outputs, the last one
// FinishAborted. Aborting a request that has already finished does nothing.
func (s *Stream) Abort() error {
	if s.finished {
		return nil
	}
	err := s.e.Abort(s.id)
	if errors.Is(err, StatusNotFound) {
		// It finished in the meantime: its last output is queued for Next.
		return nil
	}
	return err
}

// Close aborts the request if it has not finished and drops its outputs still to come.
// Calling it again does nothing.
func (s *Stream) Close() error {
	if s.finished {
		return nil
	}
	err := s.Abort()
	s.finished = true
	s.e.r.release(s.id, true)
	runtime.SetFinalizer(s, nil)
	return err
}
