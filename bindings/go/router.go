package pagoda

import "sync"

// router hands each output to its reader. C queues the outputs of every request in one queue;
// the router moves them a batch at a time (one C call for a whole step's outputs:
// pagoda_engine_step_poll after a step, pagoda_engine_poll_batch otherwise) into Go queues: one
// per request read through a Stream, and the unclaimed ones for Engine.Poll.
//
// Two locks: cmu is held while outputs move from C to the Go queues (and by a step, which
// moves its own outputs), so they reach the Go queues in C's order; mu guards the Go queues,
// so a reader whose queue holds outputs takes them without waiting for a running step. Lock
// order: Engine.stepMu, then cmu, then mu.
type router struct {
	cmu   sync.Mutex
	batch []Output // the batch in transit (under cmu)
	// The engine's produced count when the C queue was last found empty (under cmu): while it
	// has not moved, no step or abort has queued anything since, and a reader need not ask C
	// (a streaming reader would otherwise cross into C once more per token to find it empty).
	drainedAt uint64

	mu        sync.Mutex
	streams   map[uint64]*queue // queued outputs of requests read through a Stream
	discarded map[uint64]bool   // requests whose Stream was closed early: outputs dropped
	unclaimed queue             // outputs of requests read with Poll
	// The LogitsProcessors of live requests, kept until their last output moves to Go.
	processors map[uint64]*liveProcessor
}

func (r *router) init() {
	r.streams = make(map[uint64]*queue)
	r.discarded = make(map[uint64]bool)
	r.processors = make(map[uint64]*liveProcessor)
}

// deliverBatch queues the batch in transit for its readers: each output to its Stream, to
// nobody (a closed Stream's), or to Poll. The caller holds cmu.
func (r *router) deliverBatch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, o := range r.batch {
		if len(r.processors) > 0 {
			r.processorOutput(&o)
		}
		if q := r.streams[o.RequestID]; q != nil {
			q.push(o)
		} else if r.discarded[o.RequestID] {
			if o.RequestFinished {
				delete(r.discarded, o.RequestID)
			}
		} else {
			r.unclaimed.push(o)
		}
		r.batch[i] = Output{} // the reader owns it now: keep no reference to it
	}
	r.batch = r.batch[:0]
}

// pollRest moves what C has queued to the Go queues, a batch at a time, until C is empty.
// The caller holds cmu.
func (r *router) pollRest(e *Engine) error {
	for {
		var err error
		if r.batch, err = e.pollBatch(r.batch); err != nil {
			return err
		}
		full := len(r.batch) == outputBatch
		r.deliverBatch()
		if !full {
			return nil // C ran out: it was empty when this batch was taken
		}
	}
}

// drain is pollRest, unless (without force) nothing can have been queued in C since it was
// last found empty. The caller holds cmu.
func (r *router) drain(e *Engine, force bool) error {
	produced := e.produced.Load()
	if !force && produced == r.drainedAt {
		return nil
	}
	if err := r.pollRest(e); err != nil {
		return err
	}
	r.drainedAt = produced
	return nil
}

// step is Engine.Step's body: one step and its outputs in one C call, delivered. The caller
// holds Engine.stepMu.
func (r *router) step(e *Engine) error {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	// Counted before the step: an abort that ends while this step's outputs are being moved
	// counts again, and so is seen by the next reader.
	before := e.produced.Add(1)
	var err error
	if r.batch, err = e.stepPoll(r.batch); err != nil {
		return err // a failed step leaves its ERROR outputs queued in C, for the next drain
	}
	full := len(r.batch) == outputBatch
	r.deliverBatch()
	if full {
		if err := r.pollRest(e); err != nil {
			return err
		}
	}
	r.drainedAt = before
	return nil
}

// take is the oldest output of q, from q or, when q is empty, after a drain of C (forced:
// asking C even when nothing seems new); ok is false when none is queued.
func (r *router) take(e *Engine, q *queue, force bool) (Output, bool, error) {
	r.mu.Lock()
	o, ok := q.pop()
	r.mu.Unlock()
	if ok {
		return o, true, nil
	}
	r.cmu.Lock()
	err := r.drain(e, force)
	r.cmu.Unlock()
	if err != nil {
		return Output{}, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok = q.pop()
	return o, ok, nil
}

// poll is Engine.Poll: the oldest output of a request no Stream reads.
func (r *router) poll(e *Engine) (Output, bool, error) {
	return r.take(e, &r.unclaimed, false)
}

// claim makes the outputs of id go to a new queue, which it returns. The caller holds cmu
// from before the request was submitted, so none of its outputs has moved yet.
func (r *router) claim(id uint64) *queue {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := &queue{}
	r.streams[id] = q
	return q
}

// release ends id's Stream; with dropRest, its outputs still to come are dropped.
func (r *router) release(id uint64, dropRest bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dropRest && !r.streams[id].finished() {
		r.discarded[id] = true
	}
	delete(r.streams, id)
}

// queue is a FIFO of outputs that reuses its array once emptied (a reader that keeps up pushes
// and pops one output a step, which a re-sliced slice would reallocate for every few).
type queue struct {
	items []Output
	head  int // items[head:] are queued
}

func (q *queue) push(o Output) { q.items = append(q.items, o) }

// pop takes the oldest output, if any.
func (q *queue) pop() (Output, bool) {
	if q.head == len(q.items) {
		return Output{}, false
	}
	o := q.items[q.head]
	q.items[q.head] = Output{} // the reader owns it now
	if q.head++; q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return o, true
}

// finished says whether the request's last output is queued.
func (q *queue) finished() bool {
	for _, o := range q.items[q.head:] {
		if o.RequestFinished {
			return true
		}
	}
	return false
}
