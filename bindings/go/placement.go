package pagoda

/*
#include <stdlib.h>
#include "pagoda/plan.h"
*/
import "C"

import "unsafe"

// SimulateOptions is a pagoda_simulate_options_t: the traffic a placement is served.
// Start from DefaultSimulateOptions.
type SimulateOptions struct {
	RatePerModel    float64 // requests per second for every model
	TotalRate       float64 // > 0: requests per second over all models, split evenly
	CV              float64 // coefficient of variation of inter-arrival times; 1 = Poisson
	SLOSeconds      float64 // SLO of models whose placement gives none; 0 = none
	DurationSeconds float64 // simulated time
	Seed            uint64
	OverheadSeconds float64 // added to every request's latency
	RejectLate      bool    // reject at arrival what would miss its SLO
}

// DefaultSimulateOptions are the library's defaults (pagoda_simulate_options_init).
func DefaultSimulateOptions() SimulateOptions {
	var c C.pagoda_simulate_options_t
	C.pagoda_simulate_options_init(&c, C.sizeof_pagoda_simulate_options_t)
	return simulateOptionsFromC(&c)
}

// simulateOptionsFromC reads a C struct back (the defaults, and the layout test's round trip).
func simulateOptionsFromC(c *C.pagoda_simulate_options_t) SimulateOptions {
	return SimulateOptions{
		RatePerModel:    float64(c.rate_per_model),
		TotalRate:       float64(c.total_rate),
		CV:              float64(c.cv),
		SLOSeconds:      float64(c.slo_seconds),
		DurationSeconds: float64(c.duration_seconds),
		Seed:            uint64(c.seed),
		OverheadSeconds: float64(c.overhead_seconds),
		RejectLate:      c.reject_late != 0,
	}
}

func (o *SimulateOptions) toC(c *C.pagoda_simulate_options_t) *C.pagoda_simulate_options_t {
	if o == nil {
		return nil
	}
	C.pagoda_simulate_options_init(c, C.sizeof_pagoda_simulate_options_t)
	c.rate_per_model = C.double(o.RatePerModel)
	c.total_rate = C.double(o.TotalRate)
	c.cv = C.double(o.CV)
	c.slo_seconds = C.double(o.SLOSeconds)
	c.duration_seconds = C.double(o.DurationSeconds)
	c.seed = C.uint64_t(o.Seed)
	c.overhead_seconds = C.double(o.OverheadSeconds)
	c.reject_late = C.int32_t(boolInt(o.RejectLate))
	return c
}

// PlacementSimulate serves simulated requests on a placement (JSON, schema in plan.h) and
// returns the result as JSON; opts may be nil for the defaults.
func PlacementSimulate(placementJSON string, opts *SimulateOptions) (string, error) {
	var a cAlloc
	defer a.free()
	cjson := a.cString(placementJSON)
	if a.err != nil {
		return "", a.err
	}
	var c C.pagoda_simulate_options_t // no pointers: Go memory may reach C
	co := opts.toC(&c)
	var out *C.char
	if err := call(func() C.pagoda_status_t { return C.pagoda_placement_simulate(cjson, co, &out) }); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// PlacementSearch searches for a placement of several models on a cluster (spec: JSON, schema
// in plan.h) and returns it as JSON; workload may be nil for the defaults.
func PlacementSearch(specJSON string, workload *SimulateOptions) (string, error) {
	var a cAlloc
	defer a.free()
	cspec := a.cString(specJSON)
	if a.err != nil {
		return "", a.err
	}
	var c C.pagoda_simulate_options_t
	co := workload.toC(&c)
	var out *C.char
	if err := call(func() C.pagoda_status_t { return C.pagoda_placement_search(cspec, co, &out) }); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// CostProfileOptions is a pagoda_cost_profile_options_t: how ProfileCosts times a model.
// Start from DefaultCostProfileOptions.
type CostProfileOptions struct {
	MaxTokens   int64  // L: the longest step and the longest context timed
	Granularity int64  // t(l, 0) is timed for l = g, 2g, ..., L
	Grid        int32  // the context term is fitted on Grid x Grid points
	Repeats     int32  // timed runs per point, the fastest kept
	Beside      string // devices kept busy with the same work while timing; "" = none
}

// DefaultCostProfileOptions are the library's defaults (pagoda_cost_profile_options_init).
func DefaultCostProfileOptions() CostProfileOptions {
	var c C.pagoda_cost_profile_options_t
	C.pagoda_cost_profile_options_init(&c, C.sizeof_pagoda_cost_profile_options_t)
	return costProfileOptionsFromC(&c)
}

func costProfileOptionsFromC(c *C.pagoda_cost_profile_options_t) CostProfileOptions {
	return CostProfileOptions{
		MaxTokens:   int64(c.max_tokens),
		Granularity: int64(c.granularity),
		Grid:        int32(c.grid),
		Repeats:     int32(c.repeats),
		Beside:      goStringOrEmpty(c.beside),
	}
}

// toC fills c, with its string in C memory a owns; nil options give nil (the defaults).
func (o *CostProfileOptions) toC(c *C.pagoda_cost_profile_options_t, a *cAlloc) *C.pagoda_cost_profile_options_t {
	if o == nil {
		return nil
	}
	C.pagoda_cost_profile_options_init(c, C.sizeof_pagoda_cost_profile_options_t)
	c.max_tokens = C.int64_t(o.MaxTokens)
	c.granularity = C.int64_t(o.Granularity)
	c.grid = C.int32_t(o.Grid)
	c.repeats = C.int32_t(o.Repeats)
	c.beside = a.optString(o.Beside)
	return c
}

// ProfileCosts times a model's decoder layers on device (such as "cpu:0", or a group such as
// "cpu:0-1" timed as one tensor-parallel stage) and adds the entry to costFile, which a
// placement spec's "costs" and PlanOptions.CostFile read; it returns the entry as JSON. opts may be nil for the defaults.
func ProfileCosts(modelPath, device string, opts *CostProfileOptions, costFile string) (string, error) {
	var a cAlloc
	defer a.free()
	cmodel, cdevice, cfile := a.cString(modelPath), a.cString(device), a.cString(costFile)
	// The struct lives in C memory: it points at a C string.
	c := (*C.pagoda_cost_profile_options_t)(a.malloc(C.sizeof_pagoda_cost_profile_options_t))
	co := opts.toC(c, &a)
	if a.err != nil {
		return "", a.err
	}
	var out *C.char
	if err := call(func() C.pagoda_status_t { return C.pagoda_cost_profile(cmodel, cdevice, co, cfile, &out) }); err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// LinkProfileOptions is a pagoda_link_profile_options_t: how ProfileLinks times the links.
// Start from DefaultLinkProfileOptions.
type LinkProfileOptions struct {
	MinBytes int64 // the smallest buffer timed, a multiple of 4
	MaxBytes int64 // the largest: sizes double from MinBytes up to it
	Repeats  int32 // timed rounds over every size; each size's median kept
}

// DefaultLinkProfileOptions are the library's defaults (pagoda_link_profile_options_init).
func DefaultLinkProfileOptions() LinkProfileOptions {
	var c C.pagoda_link_profile_options_t
	C.pagoda_link_profile_options_init(&c, C.sizeof_pagoda_link_profile_options_t)
	return LinkProfileOptions{MinBytes: int64(c.min_bytes), MaxBytes: int64(c.max_bytes), Repeats: int32(c.repeats)}
}

// ProfileLinks times the links between the mesh's devices (a two-device all-reduce and a
// ping-pong per path: within a process, within a machine, across machines) and, on rank 0,
// adds them to costFile unless it is ""; it returns the links as a JSON array. Over several
// processes every rank calls it at the same point. opts may be nil for the defaults.
func ProfileLinks(mesh *Mesh, opts *LinkProfileOptions, costFile string) (string, error) {
	var a cAlloc
	defer a.free()
	var co *C.pagoda_link_profile_options_t
	if opts != nil {
		co = (*C.pagoda_link_profile_options_t)(a.malloc(C.sizeof_pagoda_link_profile_options_t))
		C.pagoda_link_profile_options_init(co, C.sizeof_pagoda_link_profile_options_t)
		co.min_bytes = C.int64_t(opts.MinBytes)
		co.max_bytes = C.int64_t(opts.MaxBytes)
		co.repeats = C.int32_t(opts.Repeats)
	}
	cfile := a.optString(costFile)
	if a.err != nil {
		return "", a.err
	}
	var out *C.char
	err := mesh.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_link_profile((*C.pagoda_mesh_t)(p), co, cfile, &out)
	})
	if err != nil {
		return "", err
	}
	defer C.pagoda_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}
