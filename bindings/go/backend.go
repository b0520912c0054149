package pagoda

/*
#include <stdlib.h>
#include "pagoda/backend.h"
*/
import "C"

import (
	"bytes"
	"unsafe"
)

// Backend is a loaded backend plugin. The process-wide registry owns it: it stays valid for the
// life of the process (this package does not offer pagoda_backends_unload_all, which would
// leave every Backend, mesh and engine dangling), so a Backend needs no Close.
type Backend struct {
	ptr *C.pagoda_backend_t
}

// DiscoverBackends loads every libpagoda-backend-<name>.so on PAGODA_BACKEND_PATH, then in
// libpagoda's own folder; it returns how many were newly loaded. Plugins that fail to load are
// skipped (see SkippedBackends). Meshes discover on first use, so calling this is optional.
func DiscoverBackends() (int, error) {
	var n C.size_t
	err := call(func() C.pagoda_status_t { return C.pagoda_backends_discover(nil, &n) })
	return int(n), err
}

// DiscoverBackendsIn is DiscoverBackends over the given colon-separated folders only.
func DiscoverBackendsIn(searchPath string) (int, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(searchPath)
	if a.err != nil {
		return 0, a.err
	}
	var n C.size_t
	err := call(func() C.pagoda_status_t { return C.pagoda_backends_discover(cpath, &n) })
	return int(n), err
}

// LoadBackend loads the plugin at path. config is the plugin's configuration ("devices=2");
// "" passes none, and the plugin then reads PAGODA_BACKEND_<NAME>_CONFIG.
func LoadBackend(path, config string) (*Backend, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(path)
	cconfig := a.optString(config)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_backend_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_backend_load(cpath, cconfig, &out) }); err != nil {
		return nil, err
	}
	return &Backend{ptr: out}, nil
}

// Backends lists the loaded backends in load order.
func Backends() ([]*Backend, error) {
	n := int(C.pagoda_backend_count())
	list := make([]*Backend, 0, n)
	for i := 0; i < n; i++ {
		var out *C.pagoda_backend_t
		if err := call(func() C.pagoda_status_t { return C.pagoda_backend_get(C.size_t(i), &out) }); err != nil {
			return nil, err
		}
		list = append(list, &Backend{ptr: out})
	}
	return list, nil
}

// FindBackend is the backend registered under name, such as "cpu".
func FindBackend(name string) (*Backend, error) {
	var a cAlloc
	defer a.free()
	cname := a.cString(name)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_backend_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_backend_find(cname, &out) }); err != nil {
		return nil, err
	}
	return &Backend{ptr: out}, nil
}

// Name is the backend's short name, such as "cpu".
func (b *Backend) Name() string { return C.GoString(C.pagoda_backend_name(b.ptr)) }

// Description is the backend's one-line description.
func (b *Backend) Description() string { return C.GoString(C.pagoda_backend_description(b.ptr)) }

// Path is the file the backend was loaded from.
func (b *Backend) Path() string { return C.GoString(C.pagoda_backend_path(b.ptr)) }

// DeviceCount is the number of devices the backend drives.
func (b *Backend) DeviceCount() (int, error) {
	var n C.int32_t
	err := call(func() C.pagoda_status_t { return C.pagoda_backend_device_count(b.ptr, &n) })
	return int(n), err
}

// DeviceKind is a pagoda_device_kind_t.
type DeviceKind int32

// The device kinds of backend.h.
const (
	DeviceCPU DeviceKind = C.PAGODA_DEVICE_CPU
	DeviceGPU DeviceKind = C.PAGODA_DEVICE_GPU
)

// Flags of DeviceInfo.Flags.
const (
	DeviceHostAccessible  uint32 = C.PAGODA_DEVICE_HOST_ACCESSIBLE
	DeviceUsesHostWeights uint32 = C.PAGODA_DEVICE_USES_HOST_WEIGHTS
)

// DeviceInfo is a pagoda_device_info_t: one device of a backend.
type DeviceInfo struct {
	Kind         DeviceKind
	Flags        uint32 // DeviceHostAccessible, DeviceUsesHostWeights
	ComputeUnits int32  // threads (CPU) or multiprocessors (GPU)
	TotalMemory  uint64 // bytes
	FreeMemory   uint64 // bytes free now, as far as the backend can tell
	Name         string // model name, such as "NVIDIA H100"
	Arch         string // architecture tag, such as "x86_64-avx2"
}

// DeviceInfo describes the backend's device-th device.
func (b *Backend) DeviceInfo(device int) (DeviceInfo, error) {
	var ci C.pagoda_device_info_t
	ci.struct_size = C.uint32_t(unsafe.Sizeof(ci))
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_backend_device_info(b.ptr, C.int32_t(device), &ci)
	}); err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{
		Kind:         DeviceKind(ci.kind),
		Flags:        uint32(ci.flags),
		ComputeUnits: int32(ci.compute_units),
		TotalMemory:  uint64(ci.total_memory),
		FreeMemory:   uint64(ci.free_memory),
		Name:         charArray(ci.name[:]),
		Arch:         charArray(ci.arch[:]),
	}, nil
}

// SkippedBackend is a plugin that a load or a discovery skipped, and why.
type SkippedBackend struct {
	Path    string
	Status  Status
	Message string
}

// SkippedBackends lists the plugins skipped so far.
func SkippedBackends() ([]SkippedBackend, error) {
	n := int(C.pagoda_backend_skipped_count())
	list := make([]SkippedBackend, 0, n)
	for i := 0; i < n; i++ {
		var path, msg *C.char
		var status C.pagoda_status_t
		if err := call(func() C.pagoda_status_t {
			return C.pagoda_backend_skipped(C.size_t(i), &path, &status, &msg)
		}); err != nil {
			return nil, err
		}
		list = append(list, SkippedBackend{C.GoString(path), Status(status), C.GoString(msg)})
	}
	return list, nil
}

// charArray reads a NUL-terminated string from a fixed-size C array, never past its end.
func charArray(a []C.char) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
