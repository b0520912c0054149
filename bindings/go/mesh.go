package pagoda

/*
#include <stdlib.h>
#include "pagoda/mesh.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Mesh is devices arranged on named axes. It never changes after creation: its methods are safe
// from any goroutine. Engines and caches made on it keep it alive: it may be closed before them.
//
// A mesh may span the processes of one launch (ranks started by mpirun, or by the host): each
// process names its own devices, every process as many, and the mesh is their lists rank after
// rank, named like "cpu:0@rank1". NewMesh then blocks until every rank has called it. Caches and
// engines on such a mesh are refused (StatusUnsupported) for now.
type Mesh struct {
	h handle
}

// MeshOptions is a pagoda_mesh_options_t; "" or 0 leaves a field at its default.
//
// Rank and WorldSize both 0 (the zero value) take both from the environment: PAGODA_RANK and
// PAGODA_WORLD_SIZE, else OpenMPI's, else one process. Otherwise they are passed as given
// (WorldSize 0 = from the environment, Rank -1 = from the environment). The ranks meet on the
// TCP address Rendezvous; the C bootstrap callback (the host's broadcast, such as MPI_Bcast) is
// not offered, as no Go function is called from C.
type MeshOptions struct {
	Devices    string // this process's device list such as "cpu:0-1"; "" = "cpu:0"
	Axes       string // axis sizes such as "pp=2,tp=2" over the whole mesh; "" = none (the plan decides)
	Rank       int32  // this process's rank in its launch (see above)
	WorldSize  int32  // processes in the launch; 0 = from the environment
	Rendezvous string // "host:port" where rank 0 listens; "" = PAGODA_RENDEZVOUS, or found under a one-machine mpirun
	TimeoutMs  int64  // how long a rank waits for the others, in milliseconds; 0 = 30 s
}

// NewMesh builds a mesh; opts may be nil for the defaults (cpu:0).
func NewMesh(opts *MeshOptions) (*Mesh, error) {
	var a cAlloc
	defer a.free()
	var co *C.pagoda_mesh_options_t
	if opts != nil {
		co = (*C.pagoda_mesh_options_t)(a.malloc(C.sizeof_pagoda_mesh_options_t))
		C.pagoda_mesh_options_init(co, C.sizeof_pagoda_mesh_options_t)
		co.devices = a.optString(opts.Devices)
		co.axes = a.optString(opts.Axes)
		if opts.Rank != 0 || opts.WorldSize != 0 { // both 0: the library's defaults (the environment)
			co.rank = C.int32_t(opts.Rank)
			co.world_size = C.int32_t(opts.WorldSize)
		}
		co.rendezvous = a.optString(opts.Rendezvous)
		co.timeout_ms = C.int64_t(opts.TimeoutMs)
	}
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_mesh_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_mesh_create(co, &out) }); err != nil {
		return nil, err
	}
	m := &Mesh{h: newHandle("mesh", unsafe.Pointer(out))}
	// A backstop: engines and caches keep their own reference to the mesh.
	runtime.SetFinalizer(m, (*Mesh).Close)
	return m, nil
}

// Close releases the mesh; calling it again does nothing.
func (m *Mesh) Close() {
	m.h.close(func(p unsafe.Pointer) { C.pagoda_mesh_destroy((*C.pagoda_mesh_t)(p)) })
	runtime.SetFinalizer(m, nil)
}

// DeviceCount is the number of devices in the mesh.
func (m *Mesh) DeviceCount() (int, error) {
	var n C.size_t
	err := m.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_mesh_device_count_v2((*C.pagoda_mesh_t)(p), &n)
	})
	return int(n), err
}

// DeviceName is the name of the mesh's index-th device, such as "cpu:0".
func (m *Mesh) DeviceName(index int) (string, error) {
	p, err := m.h.acquire()
	if err != nil {
		return "", err
	}
	defer m.h.release()
	if index < 0 {
		return "", errArgument("device index is negative")
	}
	var s *C.char
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_mesh_device_name_v2((*C.pagoda_mesh_t)(p), C.size_t(index), &s)
	}); err != nil {
		return "", err
	}
	return C.GoString(s), nil
}

// World is this process's rank and the number of processes the mesh spans (0 and 1 for a mesh
// in one process).
func (m *Mesh) World() (rank, worldSize int, err error) {
	var r, n C.int32_t
	err = m.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_mesh_world((*C.pagoda_mesh_t)(p), &r, &n)
	})
	return int(r), int(n), err
}
