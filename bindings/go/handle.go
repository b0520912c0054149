package pagoda

/*
#include "pagoda/status.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// handle owns one C handle for a Go wrapper. Calls hold the read lock: every function of the
// host headers is safe from any thread except destroy (and the engine's step, which Engine
// serialises itself); Close holds the write lock. So a handle is never destroyed under a
// running call, and a closed one fails with StatusInvalidHandle instead of reaching C with a
// dangling pointer.
type handle struct {
	mu   sync.RWMutex
	ptr  unsafe.Pointer
	kind string // "model", "engine": names the handle in errors
}

func newHandle(kind string, ptr unsafe.Pointer) handle {
	return handle{ptr: ptr, kind: kind}
}

// acquire locks the handle for one call and returns its C pointer; release unlocks it.
func (h *handle) acquire() (unsafe.Pointer, error) {
	h.mu.RLock()
	if h.ptr == nil {
		h.mu.RUnlock()
		return nil, errClosed(h.kind)
	}
	return h.ptr, nil
}

func (h *handle) release() { h.mu.RUnlock() }

// call runs one fallible C call on the handle's pointer: acquire, then call (the message read
// on the failing thread), then release.
func (h *handle) call(f func(p unsafe.Pointer) C.pagoda_status_t) error {
	p, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return call(func() C.pagoda_status_t { return f(p) })
}

// close destroys the C handle the first time; later calls do nothing.
func (h *handle) close(destroy func(unsafe.Pointer)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ptr != nil {
		destroy(h.ptr)
		h.ptr = nil
	}
}

// acquireAll acquires several handles for one call that reads them all (creating a cache or an
// engine); a nil handle stands for an optional argument left out and gives a nil pointer.
// Handles are always taken in argument order, and Close takes only its own, so this cannot
// deadlock.
func acquireAll(hs ...*handle) ([]unsafe.Pointer, func(), error) {
	ptrs := make([]unsafe.Pointer, len(hs))
	held := 0
	release := func() {
		for i := 0; i < held; i++ {
			if hs[i] != nil {
				hs[i].release()
			}
		}
	}
	for i, h := range hs {
		if h != nil {
			p, err := h.acquire()
			if err != nil {
				release()
				return nil, nil, err
			}
			ptrs[i] = p
		}
		held = i + 1
	}
	return ptrs, release, nil
}

// errNil is what a constructor returns for a required handle passed as nil, as C reports a
// NULL handle.
func errNil(kind string) error {
	return &Error{Status: StatusInvalidHandle, Message: "the " + kind + " is nil"}
}
