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
type Mesh struct {
	h handle
}

// MeshOptions is a pagoda_mesh_options_t; "" leaves a field at its default.
type MeshOptions struct {
	Devices string // device list such as "cpu:0-1"; "" = "cpu:0"
	Axes    string // axis sizes such as "pp=2,tp=2"; "" = none (the plan decides)
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
