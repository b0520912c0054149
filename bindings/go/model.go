package pagoda

/*
#include <stdlib.h>
#include "pagoda/model.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Model is an open model: a description plus weights, immutable once open. Its methods are safe
// from any goroutine. Engines, caches and tokenizers made from it keep what they need alive, so
// it may be closed before them.
type Model struct {
	h handle
}

// ModelInfo is a pagoda_model_info_t.
type ModelInfo struct {
	Architecture     string // "llama", "mistral" or "qwen2"
	VocabSize        int64
	HiddenSize       int64
	IntermediateSize int64
	NLayers          int64
	NHeads           int64
	NKVHeads         int64
	HeadDim          int64
	MaxPosition      int64  // the trained context length
	NParameters      uint64 // weights in all tensors (tied ones once)
	BOSTokenID       int32  // -1 when none
	EOSTokenID       int32  // -1 when none
	// A mixture of experts (all 0 for a dense model): experts per sparse layer, experts per
	// token, each expert's MLP width, and the layers whose MLP is the mixture.
	NExperts               int64
	ExpertsPerToken        int64
	ExpertIntermediateSize int64
	NSparseLayers          int64
}

// OpenModel opens a .gguf file or a Hugging Face model folder, blocking until it is ready.
// Release it with Close. (LoadModel reports progress and can be cancelled.)
func OpenModel(path string) (*Model, error) {
	var a cAlloc
	defer a.free()
	cpath := a.cString(path)
	if a.err != nil {
		return nil, a.err
	}
	var out *C.pagoda_model_t
	if err := call(func() C.pagoda_status_t { return C.pagoda_model_open(cpath, nil, &out) }); err != nil {
		return nil, err
	}
	return newModel(out), nil
}

func newModel(p *C.pagoda_model_t) *Model {
	m := &Model{h: newHandle("model", unsafe.Pointer(p))}
	// A backstop only: destroying a model is safe whenever no call on it runs, which holds
	// once it is unreachable; engines and caches made from it keep their own references.
	runtime.SetFinalizer(m, (*Model).Close)
	return m
}

// Close releases the model; calling it again does nothing.
func (m *Model) Close() {
	m.h.close(func(p unsafe.Pointer) { C.pagoda_model_destroy((*C.pagoda_model_t)(p)) })
	runtime.SetFinalizer(m, nil)
}

// Info describes the model.
func (m *Model) Info() (ModelInfo, error) {
	var ci C.pagoda_model_info_t
	ci.struct_size = C.uint32_t(unsafe.Sizeof(ci))
	if err := m.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_model_get_info((*C.pagoda_model_t)(p), &ci)
	}); err != nil {
		return ModelInfo{}, err
	}
	return ModelInfo{
		Architecture:           charArray(ci.architecture[:]),
		VocabSize:              int64(ci.vocab_size),
		HiddenSize:             int64(ci.hidden_size),
		IntermediateSize:       int64(ci.intermediate_size),
		NLayers:                int64(ci.n_layers),
		NHeads:                 int64(ci.n_heads),
		NKVHeads:               int64(ci.n_kv_heads),
		HeadDim:                int64(ci.head_dim),
		MaxPosition:            int64(ci.max_position),
		NParameters:            uint64(ci.n_parameters),
		BOSTokenID:             int32(ci.bos_token_id),
		EOSTokenID:             int32(ci.eos_token_id),
		NExperts:               int64(ci.n_experts),
		ExpertsPerToken:        int64(ci.experts_per_token),
		ExpertIntermediateSize: int64(ci.expert_intermediate_size),
		NSparseLayers:          int64(ci.n_sparse_layers),
	}, nil
}

// Path is the file or folder the model was opened from.
func (m *Model) Path() (string, error) {
	var s *C.char
	if err := m.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_model_path_v2((*C.pagoda_model_t)(p), &s)
	}); err != nil {
		return "", err
	}
	return C.GoString(s), nil
}
