package pagoda

/*
#include <stdlib.h>
#include "pagoda/model.h"
*/
import "C"

import (
	"context"
	"runtime"
	"time"
	"unsafe"
)

// ModelLoader is a model opening on a background thread (pagoda_model_load_start): poll its
// Progress, Cancel it, and collect the model with Finish. Progress and Cancel are safe from
// any goroutine.
type ModelLoader struct {
	h handle
}

// StartModelLoad starts opening path in the background and returns at once. The open's own
// errors come from Finish.
func StartModelLoad(path string) (*ModelLoader, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(path)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_model_loader_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_model_load_start(cpath, nil, &out) }); err != nil {
		return nil, err
	}
	l := &ModelLoader{h: newHandle("model loader", unsafe.Pointer(out))}
	// A backstop: an abandoned loader is cancelled and its thread joined, its model released.
	runtime.SetFinalizer(l, (*ModelLoader).Close)
	return l, nil
}

// Progress says how far the open has come (0 to 1) and whether it has ended.
func (l *ModelLoader) Progress() (fraction float32, done bool, err error) {
	var f C.float
	var d C.int
	err = l.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_model_loader_progress((*C.pagoda_model_loader_t)(p), &f, &d)
	})
	return float32(f), d != 0, err
}

// Cancel asks the open to stop; Finish then fails with StatusCancelled, unless it had ended.
func (l *ModelLoader) Cancel() {
	if p, err := l.h.acquire(); err == nil {
		C.pagoda_model_loader_cancel((*C.pagoda_model_loader_t)(p))
		l.h.release()
	}
}

// Finish waits for the open to end and returns the model. The loader is spent afterwards,
// whatever the result.
func (l *ModelLoader) Finish() (*Model, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	if l.h.ptr == nil {
		return nil, errClosed(l.h.kind)
	}
	var out *C.pagoda_model_t
	err := call(func() C.pagoda_status_t {
		return C.pagoda_model_loader_finish((*C.pagoda_model_loader_t)(l.h.ptr), &out)
	})
	l.h.ptr = nil
	runtime.SetFinalizer(l, nil)
	if err != nil {
		return nil, err
	}
	return newModel(out), nil
}

// Close cancels an unfinished open and releases what it made; it does nothing after Finish.
func (l *ModelLoader) Close() {
	l.h.close(func(p unsafe.Pointer) {
		loader := (*C.pagoda_model_loader_t)(p)
		C.pagoda_model_loader_cancel(loader)
		var out *C.pagoda_model_t
		// Its status is not wanted: the caller gave the open up.
		C.pagoda_model_loader_finish(loader, &out)
		C.pagoda_model_destroy(out)
	})
	runtime.SetFinalizer(l, nil)
}

// LoadModel opens a model in the background, calling progress (if not nil) on this goroutine
// as the fraction grows, every `every` at most (0: 50 ms). Cancelling ctx cancels the open;
// an open that had already ended still returns its model.
func LoadModel(ctx context.Context, path string, every time.Duration, progress func(fraction float32)) (*Model, error) {
	l, err := StartModelLoad(path)
	if err != nil {
		return nil, err
	}
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	last := float32(-1)
	for {
		fraction, done, err := l.Progress()
		if err != nil {
			l.Close()
			return nil, err
		}
		if progress != nil && fraction != last {
			progress(fraction)
			last = fraction
		}
		if done {
			return l.Finish()
		}
		select {
		case <-ctx.Done():
			l.Cancel()
			return l.Finish()
		case <-ticker.C:
		}
	}
}
