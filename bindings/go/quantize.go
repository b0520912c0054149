package pagoda

/*
#include "pagoda/quantize.h"
*/
import "C"

import "unsafe"

// QuantType is a pagoda_quant_type_t: a GGUF quantization, by llama.cpp's names for the same
// mixes.
type QuantType int32

// The quantizations of quantize.h.
const (
	QuantQ8_0 QuantType = C.PAGODA_QUANT_Q8_0
	QuantQ4_0 QuantType = C.PAGODA_QUANT_Q4_0
	QuantQ4KM QuantType = C.PAGODA_QUANT_Q4_K_M
	QuantQ5KM QuantType = C.PAGODA_QUANT_Q5_K_M
	QuantQ6K  QuantType = C.PAGODA_QUANT_Q6_K
)

// QuantizeOptions is a pagoda_quantize_options_t without its progress callback (which would
// call Go from C). Start from DefaultQuantizeOptions.
type QuantizeOptions struct {
	Type    QuantType
	Threads int32 // 0: one per core
}

// DefaultQuantizeOptions are the library's defaults (pagoda_quantize_options_init).
func DefaultQuantizeOptions() QuantizeOptions {
	var c C.pagoda_quantize_options_t
	C.pagoda_quantize_options_init(&c, C.sizeof_pagoda_quantize_options_t)
	return QuantizeOptions{Type: QuantType(c._type), Threads: int32(c.threads)}
}

// QuantizedType is a pagoda_quantized_type_stats_t: what one tensor type received.
type QuantizedType struct {
	GGMLType     int32 // ggml's type id
	Name         string
	Tensors      int64
	Values       uint64
	RMSE         float64 // of the values as written
	RelativeRMSE float64 // RMSE over the source values' root mean square
}

// QuantizeStats is a pagoda_quantize_stats_t.
type QuantizeStats struct {
	InputBytes  uint64
	OutputBytes uint64
	TensorsKept int64
	Types       []QuantizedType
}

// Quantize writes output, the GGUF model at input (F32, F16 or BF16 weights) with its weight
// matrices quantized as opts says (nil: the defaults). The file appears whole or not at all.
func Quantize(input, output string, opts *QuantizeOptions) (QuantizeStats, error) {
	var a cAlloc
	defer a.free()
	cin, cout := a.cString(input), a.cString(output)
	if a.err != nil {
		return QuantizeStats{}, a.err
	}
	var co C.pagoda_quantize_options_t
	C.pagoda_quantize_options_init(&co, C.sizeof_pagoda_quantize_options_t)
	if opts != nil {
		co._type = C.int32_t(opts.Type)
		co.threads = C.int32_t(opts.Threads)
	}
	var st C.pagoda_quantize_stats_t
	st.struct_size = C.uint32_t(C.sizeof_pagoda_quantize_stats_t)
	if err := call(func() C.pagoda_status_t { return C.pagoda_model_quantize(cin, cout, &co, &st) }); err != nil {
		return QuantizeStats{}, err
	}
	out := QuantizeStats{InputBytes: uint64(st.input_bytes), OutputBytes: uint64(st.output_bytes),
		TensorsKept: int64(st.tensors_kept)}
	for _, t := range st.types[:st.n_types] {
		out.Types = append(out.Types, QuantizedType{
			GGMLType: int32(t.ggml_type), Name: C.GoString((*C.char)(unsafe.Pointer(&t.name[0]))),
			Tensors: int64(t.tensors), Values: uint64(t.values), RMSE: float64(t.rmse),
			RelativeRMSE: float64(t.relative_rmse)})
	}
	return out, nil
}
