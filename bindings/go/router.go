package pagoda

import "sync"

// router hands each polled output to its reader. pagoda_engine_poll returns the oldest output
// of any request, so a Stream that polls may take another request's output: it is kept for
// that request's Stream, or for Engine.Poll when no Stream reads the request. Polls and routing
// hold mu, so an output is never in flight between the C queue and the Go queues while
// another reader looks.
type router struct {
	mu        sync.Mutex
	streams   map[uint64]*[]Output // queued outputs of requests read through a Stream
	discarded map[uint64]bool      // requests whose Stream was closed early: outputs dropped
	unclaimed []Output             // outputs a Stream polled for requests read with Poll
}

func (r *router) init() {
	r.streams = make(map[uint64]*[]Output)
	r.discarded = make(map[uint64]bool)
}

// route keeps o for its Stream or drops it for a closed one; false leaves it to the caller.
// The caller holds mu.
func (r *router) route(o Output) bool {
	if q := r.streams[o.RequestID]; q != nil {
		*q = append(*q, o)
		return true
	}
	if r.discarded[o.RequestID] {
		if o.RequestFinished {
			delete(r.discarded, o.RequestID)
		}
		return true
	}
	return false
}

// poll is Engine.Poll: kept outputs first, then the C queue, passing on what Streams read.
func (r *router) poll(e *Engine) (Output, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unclaimed) > 0 {
		o := r.unclaimed[0]
		r.unclaimed = r.unclaimed[1:]
		return o, true, nil
	}
	for {
		o, ok, err := e.pollC()
		if err != nil || !ok {
			return Output{}, false, err
		}
		if !r.route(o) {
			return o, true, nil
		}
	}
}

// next is the oldest output of request id, from its queue or from C, keeping the others'
// outputs for their readers; ok is false when none is queued yet.
func (r *router) next(e *Engine, id uint64) (Output, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.streams[id]
	if len(*q) > 0 {
		o := (*q)[0]
		*q = (*q)[1:]
		return o, true, nil
	}
	for {
		o, ok, err := e.pollC()
		if err != nil || !ok {
			return Output{}, false, err
		}
		if o.RequestID == id {
			return o, true, nil
		}
		if !r.route(o) {
			r.unclaimed = append(r.unclaimed, o)
		}
	}
}

// claim makes the outputs of id go to its Stream; the caller holds mu.
func (r *router) claim(id uint64) {
	q := make([]Output, 0, 4)
	r.streams[id] = &q
}

// release ends id's Stream; with dropRest, its outputs still to come are dropped.
func (r *router) release(id uint64, dropRest bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dropRest && !finishedIn(*r.streams[id]) {
		r.discarded[id] = true
	}
	delete(r.streams, id)
}

// finishedIn says whether the request's last output is among q.
func finishedIn(q []Output) bool {
	for _, o := range q {
		if o.RequestFinished {
			return true
		}
	}
	return false
}
