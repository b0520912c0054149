package pagoda

/*
#include <stdlib.h>
#include "pagoda/plan.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Plan says where each layer of a model runs on a mesh and how a long prompt is sliced. It never
// changes after creation: its methods are safe from any goroutine.
type Plan struct {
	h handle
}

// PlanObjective is a pagoda_plan_objective_t.
type PlanObjective int32

// The objectives of plan.h.
const (
	PlanLatency    PlanObjective = C.PAGODA_PLAN_LATENCY
	PlanThroughput PlanObjective = C.PAGODA_PLAN_THROUGHPUT
)

// PlanOptions is a pagoda_plan_options_t. Start from DefaultPlanOptions; "" leaves a string
// option unset (NULL).
type PlanOptions struct {
	Objective      PlanObjective
	MicroBatches   int32   // B for PlanThroughput
	Stages         int32   // exactly this many stages; 0 = the planner's choice
	TensorParallel int32   // every stage on this many devices; 0 = the planner's choice
	Device         string  // device preset: "h100" or "cpu"; "" = "cpu"
	CostFile       string  // measured layer costs; "" = analytic
	MeshShape      string  // "NxM"; "" = one node of the mesh's devices
	StepTokens     int64   // new tokens per pipeline step
	ContextTokens  int64   // cached tokens before them
	KVTokens       int64   // KV-cache tokens every layer reserves
	PromptTokens   int64   // > 0: also slice a prompt this long
	Granularity    int64   // slices are multiples of this many tokens
	EpsilonSeconds float64 // skip bottleneck candidates closer than this
	ExpertParallel int32   // split each stage's experts into this many groups (the mesh's ep); 0 = the planner's choice
}

// DefaultPlanOptions are the library's defaults (pagoda_plan_options_init).
func DefaultPlanOptions() PlanOptions {
	var c C.pagoda_plan_options_t
	C.pagoda_plan_options_init(&c, C.sizeof_pagoda_plan_options_t)
	return planOptionsFromC(&c)
}

// planOptionsFromC reads a C struct back (the defaults, and the layout test's round trip).
func planOptionsFromC(c *C.pagoda_plan_options_t) PlanOptions {
	return PlanOptions{
		Objective:      PlanObjective(c.objective),
		MicroBatches:   int32(c.micro_batches),
		Stages:         int32(c.stages),
		TensorParallel: int32(c.tensor_parallel),
		Device:         goStringOrEmpty(c.device),
		CostFile:       goStringOrEmpty(c.cost_file),
		MeshShape:      goStringOrEmpty(c.mesh_shape),
		StepTokens:     int64(c.step_tokens),
		ContextTokens:  int64(c.context_tokens),
		KVTokens:       int64(c.kv_tokens),
		PromptTokens:   int64(c.prompt_tokens),
		Granularity:    int64(c.granularity),
		EpsilonSeconds: float64(c.epsilon_seconds),
		ExpertParallel: int32(c.expert_parallel),
	}
}

// toC fills a C struct from o in memory from a (nil o: NULL, the defaults).
func (o *PlanOptions) toC(a *cAlloc) *C.pagoda_plan_options_t {
	if o == nil {
		return nil
	}
	c := (*C.pagoda_plan_options_t)(a.malloc(C.sizeof_pagoda_plan_options_t))
	C.pagoda_plan_options_init(c, C.sizeof_pagoda_plan_options_t)
	c.objective = C.int32_t(o.Objective)
	c.micro_batches = C.int32_t(o.MicroBatches)
	c.stages = C.int32_t(o.Stages)
	c.tensor_parallel = C.int32_t(o.TensorParallel)
	c.device = a.optString(o.Device)
	c.cost_file = a.optString(o.CostFile)
	c.mesh_shape = a.optString(o.MeshShape)
	c.step_tokens = C.int64_t(o.StepTokens)
	c.context_tokens = C.int64_t(o.ContextTokens)
	c.kv_tokens = C.int64_t(o.KVTokens)
	c.prompt_tokens = C.int64_t(o.PromptTokens)
	c.granularity = C.int64_t(o.Granularity)
	c.epsilon_seconds = C.double(o.EpsilonSeconds)
	c.expert_parallel = C.int32_t(o.ExpertParallel)
	return c
}

// NewPlan plans model on mesh. mesh may be nil when opts.MeshShape gives the shape; opts may
// be nil for the defaults.
func NewPlan(model *Model, mesh *Mesh, opts *PlanOptions) (*Plan, error) {
	if model == nil {
		return nil, errNil("model")
	}
	var meshHandle *handle
	if mesh != nil {
		meshHandle = &mesh.h
	}
	ptrs, release, err := acquireAll(&model.h, meshHandle)
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
	var out *C.pagoda_plan_t
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_plan_create((*C.pagoda_model_t)(ptrs[0]), (*C.pagoda_mesh_t)(ptrs[1]), co, &out)
	}); err != nil {
		return nil, err
	}
	return newPlan(out), nil
}

// PlanFromConfig plans a model described by a Hugging Face config.json, without its weights;
// opts.MeshShape is required.
func PlanFromConfig(configPath string, opts *PlanOptions) (*Plan, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(configPath)
	co := opts.toC(&a)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_plan_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_plan_create_from_config(cpath, co, &out) }); err != nil {
		return nil, err
	}
	return newPlan(out), nil
}

// PlanFromJSON reads a plan written by Plan.JSON.
func PlanFromJSON(json string) (*Plan, error) {
	var a cAlloc
	defer a.free()
	cjson := a.cString(json)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_plan_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_plan_from_json(cjson, &out) }); err != nil {
		return nil, err
	}
	return newPlan(out), nil
}

func newPlan(p *C.pagoda_plan_t) *Plan {
	pl := &Plan{h: newHandle("plan", unsafe.Pointer(p))}
	// A backstop: caches and engines copy what they need of a plan.
	runtime.SetFinalizer(pl, (*Plan).Close)
	return pl
}

// Close releases the plan; calling it again does nothing.
func (pl *Plan) Close() {
	pl.h.close(func(p unsafe.Pointer) { C.pagoda_plan_destroy((*C.pagoda_plan_t)(p)) })
	runtime.SetFinalizer(pl, nil)
}

// JSON writes the plan as JSON (the schema of plan.h).
func (pl *Plan) JSON() (string, error) {
	var json *C.char
	if err := pl.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_plan_to_json((*C.pagoda_plan_t)(p), &json)
	}); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(json))
	return C.GoString(json), nil
}

// PlanSummary is a pagoda_plan_summary_t: a plan's predicted totals.
type PlanSummary struct {
	NStages               int
	LatencySeconds        float64
	MaxStageSeconds       float64
	ThroughputPerSecond   float64
	ObjectiveSeconds      float64
	NSlices               int
	SlicedPrefillSeconds  float64
	UniformPrefillSeconds float64
}

// Summary is the plan's predicted totals.
func (pl *Plan) Summary() (PlanSummary, error) {
	var c C.pagoda_plan_summary_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := pl.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_plan_get_summary((*C.pagoda_plan_t)(p), &c)
	}); err != nil {
		return PlanSummary{}, err
	}
	return PlanSummary{
		NStages:               int(c.n_stages),
		LatencySeconds:        float64(c.latency_seconds),
		MaxStageSeconds:       float64(c.max_stage_seconds),
		ThroughputPerSecond:   float64(c.throughput_per_second),
		ObjectiveSeconds:      float64(c.objective_seconds),
		NSlices:               int(c.n_slices),
		SlicedPrefillSeconds:  float64(c.sliced_prefill_seconds),
		UniformPrefillSeconds: float64(c.uniform_prefill_seconds),
	}, nil
}

// PlanStage is a pagoda_plan_stage_t: one pipeline stage.
type PlanStage struct {
	FirstLayer     int64
	EndLayer       int64 // one past the last layer
	Nodes          int32
	Devices        int32 // per node
	TensorParallel int32
	HasEmbedding   bool
	HasHead        bool
	Seconds        float64
	MemoryBytes    float64 // per device
	ExpertParallel int32   // groups of its devices the stage's experts split into; 1 for a dense model
}

// Stage is the plan's index-th stage.
func (pl *Plan) Stage(index int) (PlanStage, error) {
	p, err := pl.h.acquire()
	if err != nil {
		return PlanStage{}, err
	}
	defer pl.h.release()
	if index < 0 {
		return PlanStage{}, errArgument("stage index is negative")
	}
	var c C.pagoda_plan_stage_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_plan_get_stage((*C.pagoda_plan_t)(p), C.size_t(index), &c)
	}); err != nil {
		return PlanStage{}, err
	}
	return PlanStage{
		FirstLayer:     int64(c.first_layer),
		EndLayer:       int64(c.end_layer),
		Nodes:          int32(c.nodes),
		Devices:        int32(c.devices),
		TensorParallel: int32(c.tensor_parallel),
		HasEmbedding:   c.has_embedding != 0,
		HasHead:        c.has_head != 0,
		Seconds:        float64(c.seconds),
		MemoryBytes:    float64(c.memory_bytes),
		ExpertParallel: int32(c.expert_parallel),
	}, nil
}

// SliceLength is the length in tokens of the plan's index-th prompt slice.
func (pl *Plan) SliceLength(index int) (int64, error) {
	p, err := pl.h.acquire()
	if err != nil {
		return 0, err
	}
	defer pl.h.release()
	if index < 0 {
		return 0, errArgument("slice index is negative")
	}
	var n C.int64_t
	err = call(func() C.pagoda_status_t {
		return C.pagoda_plan_slice_length_v2((*C.pagoda_plan_t)(p), C.size_t(index), &n)
	})
	return int64(n), err
}

func goStringOrEmpty(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}
