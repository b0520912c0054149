package pagoda

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"strconv"
	"strings"
	"unsafe"
)

// cAlloc collects the C memory one call's arguments need (strings and arrays an options
// struct points at: cgo forbids Go memory holding pointers from reaching C) and frees it all.
// A string with a NUL byte cannot become a C string whole: cString records an error, which
// the caller returns before calling C, rather than pass C a cut string.
type cAlloc struct {
	ptrs []unsafe.Pointer
	err  error
}

func (a *cAlloc) malloc(n C.size_t) unsafe.Pointer {
	p := C.malloc(n)
	if p == nil {
		panic("pagoda: C.malloc failed")
	}
	C.memset(p, 0, n)
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *cAlloc) cString(s string) *C.char {
	if a.err == nil && strings.IndexByte(s, 0) >= 0 {
		a.err = errArgument("a string argument holds a NUL byte: " + quoteShort(s))
	}
	return a.textBytes(s)
}

// textBytes copies s to C for a call that also takes its length: NUL bytes are then data.
func (a *cAlloc) textBytes(s string) *C.char {
	p := C.CString(s)
	a.ptrs = append(a.ptrs, unsafe.Pointer(p))
	return p
}

// optString is NULL for "" (the option left unset), else a C copy of s.
func (a *cAlloc) optString(s string) *C.char {
	if s == "" {
		return nil
	}
	return a.cString(s)
}

func (a *cAlloc) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}

// copyInt32s copies n int32_t from C memory into a new Go slice (nil for none).
func copyInt32s(p *C.int32_t, n int) []int32 {
	if n == 0 || p == nil {
		return nil
	}
	out := make([]int32, n)
	copy(out, unsafe.Slice((*int32)(unsafe.Pointer(p)), n))
	return out
}

// copyFloats copies n floats from C memory into a new Go slice (nil for none).
func copyFloats(p *C.float, n int) []float32 {
	if n == 0 || p == nil {
		return nil
	}
	out := make([]float32, n)
	copy(out, unsafe.Slice((*float32)(unsafe.Pointer(p)), n))
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quoteShort quotes s for a message, cut to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}
