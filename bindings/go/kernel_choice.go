package pagoda

/*
#include "pagoda/kernel_choice.h"
*/
import "C"

import "unsafe"

// KernelChoiceInfo is a pagoda_kernel_choice_info_t: the kernel an engine runs for one product
// shape on one kind of device (kernel_choice.h).
type KernelChoiceInfo struct {
	WDType       DType   // the weights' type
	XDType       DType   // the activations' type
	YDType       DType   // the outputs' type
	Flags        uint32  // the products' PAGODA_MATMUL_* bits (ops.h)
	N            int64   // outputs (rows of the weights)
	K            int64   // inputs (columns of the weights)
	M            int64   // rows: the choice holds for products of (M/2, M] rows; a power of two
	Seconds      float64 // time per product of the chosen kernel as measured; 0 if unknown
	RulesSeconds float64 // the same for the backend's built-in rules
	Device       string  // the kind of device: "backend / arch / model / N units"
	Variant      string  // the kernel chosen (a backend's name), or "rules" for its built-in rules
}

// KernelChoices reads the engine's kernel choice table: the choices file's entries and what
// the engine measured, in an order fixed for the engine's life. It is empty under
// KernelChoiceRules.
func (e *Engine) KernelChoices() ([]KernelChoiceInfo, error) {
	p, err := e.h.acquire()
	if err != nil {
		return nil, err
	}
	defer e.h.release()
	var n C.size_t
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_engine_kernel_choice_count(e.ptr(p), &n)
	}); err != nil {
		return nil, err
	}
	list := make([]KernelChoiceInfo, 0, int(n))
	for i := 0; i < int(n); i++ {
		var c C.pagoda_kernel_choice_info_t
		c.struct_size = C.uint32_t(unsafe.Sizeof(c))
		if err := call(func() C.pagoda_status_t {
			return C.pagoda_engine_kernel_choice(e.ptr(p), C.size_t(i), &c)
		}); err != nil {
			return nil, err
		}
		list = append(list, KernelChoiceInfo{
			WDType:       DType(c.w_dtype),
			XDType:       DType(c.x_dtype),
			YDType:       DType(c.y_dtype),
			Flags:        uint32(c.flags),
			N:            int64(c.n),
			K:            int64(c.k),
			M:            int64(c.m),
			Seconds:      float64(c.seconds),
			RulesSeconds: float64(c.rules_seconds),
			Device:       charArray(c.device[:]),
			Variant:      charArray(c.variant[:]),
		})
	}
	return list, nil
}
