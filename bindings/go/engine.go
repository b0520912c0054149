package pagoda

/*
#include <stdlib.h>
#include "pagoda/engine.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// outputBatch is how many outputs one pagoda_engine_poll_batch call takes at most.
const outputBatch = 32

// Engine serves requests over a model, a mesh and a KV cache with continuous batching. As
// engine.h allows, Submit*, Abort, Poll, Stats, Metrics and the Stream methods are safe from any
// goroutine; Step runs one at a time (the binding serialises it), and Close waits for running
// calls. Outputs are read by polling (Poll, or a Stream per request): the C output callback is
// not offered, as it would call Go from C.
type Engine struct {
	h      handle
	stepMu sync.Mutex // pagoda_engine_step runs on one thread at a time
	r      router
	outs   *C.pagoda_output_t // outputBatch entries in C memory, reused by every poll (under r.cmu)
	nOuts  *C.size_t          // how many a poll filled, in C memory too (a Go variable passed to C is heap-allocated per call)
	// Steps begun and aborts ended: each may queue outputs (see router.drainedAt).
	produced atomic.Uint64
}

// Preemption is a pagoda_preemption_t.
type Preemption int32

// The preemption modes of engine.h.
const (
	PreemptAuto      Preemption = C.PAGODA_PREEMPT_AUTO
	PreemptRecompute Preemption = C.PAGODA_PREEMPT_RECOMPUTE
	PreemptSwap      Preemption = C.PAGODA_PREEMPT_SWAP
)

// KVReservation is a pagoda_kv_reservation_t.
type KVReservation int32

// The reservation modes of engine.h.
const (
	KVPaged      KVReservation = C.PAGODA_KV_PAGED
	KVContiguous KVReservation = C.PAGODA_KV_CONTIGUOUS
)

// DecodeGraphs is a pagoda_decode_graphs_t.
type DecodeGraphs int32

// The decode graph modes of engine.h.
const (
	DecodeGraphsAuto DecodeGraphs = C.PAGODA_DECODE_GRAPHS_AUTO
	DecodeGraphsOn   DecodeGraphs = C.PAGODA_DECODE_GRAPHS_ON
	DecodeGraphsOff  DecodeGraphs = C.PAGODA_DECODE_GRAPHS_OFF
)

// DeviceSampling is a pagoda_device_sampling_t.
type DeviceSampling int32

// The device sampling modes of engine.h.
const (
	DeviceSamplingAuto DeviceSampling = C.PAGODA_DEVICE_SAMPLING_AUTO
	DeviceSamplingOn   DeviceSampling = C.PAGODA_DEVICE_SAMPLING_ON
	DeviceSamplingOff  DeviceSampling = C.PAGODA_DEVICE_SAMPLING_OFF
)

// QuantizedMatmul is a pagoda_quantized_matmul_t: whether products on block-quantized weights
// may round their operands (8-bit activations; on a GPU, f16 activations and weights).
type QuantizedMatmul int32

// The QuantizedMatmul values.
const (
	QuantizedMatmulAuto  QuantizedMatmul = C.PAGODA_QUANTIZED_MATMUL_AUTO
	QuantizedMatmulExact QuantizedMatmul = C.PAGODA_QUANTIZED_MATMUL_EXACT
)

// KernelChoice is a pagoda_kernel_choice_t: how the engine picks among a backend's kernels for
// each matrix product (kernel_choice.h).
type KernelChoice int32

// The KernelChoice values.
const (
	// KernelChoiceFile: the choices of EngineOptions.KernelChoicesFile where it has them, the
	// backend's built-in rules elsewhere; nothing is measured.
	KernelChoiceFile KernelChoice = C.PAGODA_KERNEL_CHOICE_FILE
	// KernelChoiceMeasure: as KernelChoiceFile, and the shapes the file lacks are measured when
	// the engine is created (then written to the file, when one is named).
	KernelChoiceMeasure KernelChoice = C.PAGODA_KERNEL_CHOICE_MEASURE
	// KernelChoiceRules: the backend's built-in rules everywhere; no file is read.
	KernelChoiceRules KernelChoice = C.PAGODA_KERNEL_CHOICE_RULES
)

// EngineOptions is a pagoda_engine_options_t without its output callback. Start from
// DefaultEngineOptions.
type EngineOptions struct {
	MaxNumSeqs           int32 // sequences in one step at most
	MaxNumBatchedTokens  int32 // tokens in one step at most
	Preemption           Preemption
	KVReservation        KVReservation
	DecodeGraphs         DecodeGraphs
	DeviceSampling       DeviceSampling
	ActivationDType      DType // 0 = the library's choice
	PipelineMicroBatches int64 // 0 = the library's choice, 1 = none
	QuantizedMatmul      QuantizedMatmul
	KernelChoicesFile    string // a kernel choice file (`pagoda tune` writes one); "" = none
	KernelChoice         KernelChoice
}

// DefaultEngineOptions are the library's defaults (pagoda_engine_options_init).
func DefaultEngineOptions() EngineOptions {
	var c C.pagoda_engine_options_t
	C.pagoda_engine_options_init(&c, C.sizeof_pagoda_engine_options_t)
	return engineOptionsFromC(&c)
}

// engineOptionsFromC reads a C struct back (the defaults, and the layout test's round trip).
func engineOptionsFromC(c *C.pagoda_engine_options_t) EngineOptions {
	return EngineOptions{
		MaxNumSeqs:           int32(c.max_num_seqs),
		MaxNumBatchedTokens:  int32(c.max_num_batched_tokens),
		Preemption:           Preemption(c.preemption),
		KVReservation:        KVReservation(c.kv_reservation),
		DecodeGraphs:         DecodeGraphs(c.decode_graphs),
		DeviceSampling:       DeviceSampling(c.device_sampling),
		ActivationDType:      DType(c.activation_dtype),
		PipelineMicroBatches: int64(c.pipeline_micro_batches),
		QuantizedMatmul:      QuantizedMatmul(c.quantized_matmul),
		KernelChoicesFile:    goStringOrEmpty(c.kernel_choices_file),
		KernelChoice:         KernelChoice(c.kernel_choice),
	}
}

// toC fills a C struct from o in memory from a (nil o: NULL, the defaults). The output
// callback stays NULL; the kernel choice file's path is copied into C memory.
func (o *EngineOptions) toC(a *cAlloc) *C.pagoda_engine_options_t {
	if o == nil {
		return nil
	}
	c := (*C.pagoda_engine_options_t)(a.malloc(C.sizeof_pagoda_engine_options_t))
	C.pagoda_engine_options_init(c, C.sizeof_pagoda_engine_options_t)
	c.max_num_seqs = C.int32_t(o.MaxNumSeqs)
	c.max_num_batched_tokens = C.int32_t(o.MaxNumBatchedTokens)
	c.preemption = C.int32_t(o.Preemption)
	c.kv_reservation = C.int32_t(o.KVReservation)
	c.decode_graphs = C.int32_t(o.DecodeGraphs)
	c.device_sampling = C.int32_t(o.DeviceSampling)
	c.activation_dtype = C.int32_t(o.ActivationDType)
	c.pipeline_micro_batches = C.int64_t(o.PipelineMicroBatches)
	c.quantized_matmul = C.int32_t(o.QuantizedMatmul)
	c.kernel_choices_file = a.optString(o.KernelChoicesFile)
	c.kernel_choice = C.int32_t(o.KernelChoice)
	return c
}

// NewEngine makes an engine serving model on mesh with cache. plan may be nil (the layout the
// cache was made with); opts may be nil for the defaults. The engine keeps the model, the mesh
// and the cache alive: their handles may be closed before it, in any order.
func NewEngine(model *Model, mesh *Mesh, plan *Plan, cache *KVCache, opts *EngineOptions) (*Engine, error) {
	switch {
	case model == nil:
		return nil, errNil("model")
	case mesh == nil:
		return nil, errNil("mesh")
	case cache == nil:
		return nil, errNil("KV cache")
	}
	var planHandle *handle
	if plan != nil {
		planHandle = &plan.h
	}
	ptrs, release, err := acquireAll(&model.h, &mesh.h, planHandle, &cache.h)
	if err != nil {
		return nil, err
	}
	defer release()
	var a cAlloc
	defer a.free()
	co := opts.toC(&a)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_engine_t
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_engine_create((*C.pagoda_model_t)(ptrs[0]), (*C.pagoda_mesh_t)(ptrs[1]),
			(*C.pagoda_plan_t)(ptrs[2]), (*C.pagoda_kv_cache_t)(ptrs[3]), co, &out)
	}); err != nil {
		return nil, err
	}
	e := &Engine{h: newHandle("engine", unsafe.Pointer(out))}
	e.r.init()
	e.outs = (*C.pagoda_output_t)(C.calloc(outputBatch, C.sizeof_pagoda_output_t))
	e.nOuts = (*C.size_t)(C.calloc(1, C.sizeof_size_t))
	if e.outs == nil || e.nOuts == nil {
		C.free(unsafe.Pointer(e.outs))
		C.free(unsafe.Pointer(e.nOuts))
		C.pagoda_engine_destroy(out)
		return nil, &Error{Status: StatusOutOfMemory, Message: "no memory for the engine's outputs"}
	}
	e.outs.struct_size = C.uint32_t(C.sizeof_pagoda_output_t) // the entries' stride
	// A backstop: once the engine is unreachable no call on it runs, and the handles it uses
	// are kept alive by the library, whatever order the collector finalises them in.
	runtime.SetFinalizer(e, (*Engine).Close)
	return e, nil
}

// Close aborts every request and releases the engine (and with it the cache's blocks, when
// the cache's handle is closed too). It waits for running calls; calling it again does nothing.
func (e *Engine) Close() {
	e.h.close(func(p unsafe.Pointer) {
		C.pagoda_engine_destroy((*C.pagoda_engine_t)(p))
		C.free(unsafe.Pointer(e.outs))
		C.free(unsafe.Pointer(e.nOuts))
	})
	// The engine is gone, so C calls no processor any more.
	e.r.releaseProcessors()
	runtime.SetFinalizer(e, nil)
}

func (e *Engine) ptr(p unsafe.Pointer) *C.pagoda_engine_t { return (*C.pagoda_engine_t)(p) }

// SubmitText submits a text prompt (BOS or the template's tokens added unless
// RequestNoSpecialTokens) and returns the request's id; opts may be nil for the defaults. Read
// its outputs with Poll, or use StreamText.
func (e *Engine) SubmitText(text string, opts *RequestOptions) (uint64, error) {
	return e.submitText(text, opts, false)
}

// SubmitTokens submits a prompt of token ids and returns the request's id.
func (e *Engine) SubmitTokens(ids []int32, opts *RequestOptions) (uint64, error) {
	return e.submitTokens(ids, opts, false)
}

// cSubmit is one of the C submits, given the engine, memory for its arguments, the options
// in C and where the id goes.
type cSubmit func(p unsafe.Pointer, a *cAlloc, co *C.pagoda_request_options_t,
	id *C.uint64_t) C.pagoda_status_t

func (e *Engine) submitText(text string, opts *RequestOptions, routerLocked bool) (uint64, error) {
	var submit cSubmit = func(p unsafe.Pointer, a *cAlloc, co *C.pagoda_request_options_t,
		id *C.uint64_t) C.pagoda_status_t {
		return C.pagoda_engine_submit_text(e.ptr(p), a.textBytes(text), C.size_t(len(text)), co, id)
	}
	return e.submit(opts, routerLocked, submit)
}

func (e *Engine) submitTokens(ids []int32, opts *RequestOptions, routerLocked bool) (uint64, error) {
	var submit cSubmit = func(p unsafe.Pointer, _ *cAlloc, co *C.pagoda_request_options_t,
		id *C.uint64_t) C.pagoda_status_t {
		// Go memory holding no Go pointers may be passed to C for the length of a call.
		var cids *C.int32_t
		if len(ids) > 0 {
			cids = (*C.int32_t)(unsafe.Pointer(&ids[0]))
		}
		return C.pagoda_engine_submit_tokens(e.ptr(p), cids, C.size_t(len(ids)), co, id)
	}
	return e.submit(opts, routerLocked, submit)
}

// submit runs a C submit with opts in C memory, and keeps the request's LogitsProcessor (if
// any) until its last output. routerLocked says the caller (making a Stream) holds e.r.cmu.
func (e *Engine) submit(opts *RequestOptions, routerLocked bool, submit cSubmit) (uint64, error) {
	withProcessor := opts != nil && opts.LogitsProcessor != nil
	if withProcessor && !routerLocked {
		// No output of the request may move to Go before its processor is registered, or the
		// processor would never be released. Taken before the handle, in a step's lock order.
		e.r.cmu.Lock()
		defer e.r.cmu.Unlock()
	}
	p, err := e.h.acquire()
	if err != nil {
		return 0, err
	}
	defer e.h.release()
	var a cAlloc
	defer a.free()
	co := opts.toC(&a)
	if a.err != nil {
		return 0, a.err
	}
	var lp *liveProcessor
	if withProcessor {
		lp = setLogitsProcessor(co, opts.LogitsProcessor)
	}
	var id C.uint64_t
	err = call(func() C.pagoda_status_t { return submit(p, &a, co, &id) })
	switch {
	case lp == nil:
	case err != nil:
		lp.handle.Delete() // refused: C never calls it
	default:
		e.r.addProcessor(uint64(id), lp)
	}
	return uint64(id), err
}

// Abort ends a live request now; its last output (FinishAborted) is queued. It fails with
// StatusNotFound for a request that is not live (finished ones are not).
func (e *Engine) Abort(requestID uint64) error {
	defer e.produced.Add(1)
	return e.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_engine_abort(e.ptr(p), C.uint64_t(requestID))
	})
}

// Step runs one iteration: schedule, run the model over the batch, sample, queue outputs.
// Concurrent calls run one after the other.
func (e *Engine) Step() error {
	// A goroutine that only steps and polls never passes through the Go scheduler: after 10 ms
	// sysmon counts it as running too long and, from then on, retakes its P during every C
	// call, waking every 20 us and waking idle threads, on the cores the step computes on.
	// One yield per step resets that count (measured over 5120 streamed tokens: sysmon's
	// sleeps ~800 -> ~110, context switches in the Go runtime ~2200 -> 109; the tokens/s
	// change was within the noise of the 2-core machine it was measured on).
	runtime.Gosched()
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	return e.r.step(e)
}

// Follow is for an engine on a rank other than 0 of a mesh over several processes
// (MeshOptions.Rank, WorldSize): it takes part in rank 0's steps until rank 0's engine is
// closed, then returns nil. Every rank makes the same engine; rank 0 alone takes submissions
// and aborts, and its outputs are the request's (a follower's are dropped; its submits and
// aborts fail with StatusUnsupported). Rank 0's Close waits for each follower to hear that it
// stops, or to be gone: every follower's host calls Follow.
//
// It fails with StatusInvalidArgument on rank 0 or on a mesh in one process, and with
// StatusBackend when a step failed or another rank died (then within the mesh's TimeoutMs).
// It holds the engine meanwhile: Step waits for it, and so does Close.
func (e *Engine) Follow() error {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	return e.h.call(func(p unsafe.Pointer) C.pagoda_status_t { return C.pagoda_engine_follow(e.ptr(p)) })
}

// HasWork says whether any request is waiting or running.
func (e *Engine) HasWork() (bool, error) {
	var work C.int32_t
	err := e.h.call(func(p unsafe.Pointer) C.pagoda_status_t { return C.pagoda_engine_has_work_v2(e.ptr(p), &work) })
	return work != 0, err
}

// hasWorkSettled is HasWork with no step half done (it holds the step lock): when it says no,
// every output the engine will ever give is queued.
func (e *Engine) hasWorkSettled() (bool, error) {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	return e.HasWork()
}

// pollBatch appends to dst the oldest outputs queued in C, up to outputBatch, copied.
func (e *Engine) pollBatch(dst []Output) ([]Output, error) {
	return e.takeOutputs(dst, func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_engine_poll_batch(e.ptr(p), e.outs, outputBatch, e.nOuts)
	})
}

// stepPoll runs one step and appends to dst the oldest outputs then queued, up to outputBatch.
func (e *Engine) stepPoll(dst []Output) ([]Output, error) {
	return e.takeOutputs(dst, func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_engine_step_poll(e.ptr(p), e.outs, outputBatch, e.nOuts)
	})
}

// takeOutputs makes a call that fills e.outs and appends copies of what it filled to dst. The
// caller holds e.r.cmu, which guards e.outs. The copies run on the calling thread before it
// can poll again: the outputs' arrays live in that thread's storage.
func (e *Engine) takeOutputs(dst []Output, fill func(p unsafe.Pointer) C.pagoda_status_t) ([]Output, error) {
	p, err := e.h.acquire()
	if err != nil {
		return dst, err
	}
	defer e.h.release()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := fill(p); s != C.PAGODA_OK {
		return dst, lastError(s)
	}
	entries := unsafe.Slice(e.outs, int(*e.nOuts))
	for i := range entries {
		dst = append(dst, copyOutput(&entries[i]))
	}
	return dst, nil
}

// Poll takes the oldest output of a request that no Stream reads; ok is false when none is
// queued. Outputs of requests read through a Stream go to that stream.
func (e *Engine) Poll() (out Output, ok bool, err error) {
	return e.r.poll(e)
}
