package pagoda

/*
#include "pagoda/kv_cache.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// KVCache is a paged KV block pool on a mesh's devices. Stats is safe from any goroutine, also
// while an engine steps. An engine using the cache keeps it alive: it may be closed first.
type KVCache struct {
	h handle
}

// KVCacheOptions is a pagoda_kv_cache_options_t. Start from DefaultKVCacheOptions.
type KVCacheOptions struct {
	BlockSize     int32  // tokens per block, 1-128; 0 = 16
	DType         DType  // F32, F16 or BF16; DTypeInvalid = the device's default
	NumBlocks     int64  // blocks in the pool; 0 = as many as MemoryBytes allows
	MemoryBytes   uint64 // budget per device when NumBlocks is 0; 0 = from free memory
	SwapBytes     uint64 // host memory for swapped-out blocks; 0 = the default
	PrefixCaching bool   // reuse full blocks of finished prompts
}

// DefaultKVCacheOptions are the library's defaults (pagoda_kv_cache_options_init).
func DefaultKVCacheOptions() KVCacheOptions {
	var c C.pagoda_kv_cache_options_t
	C.pagoda_kv_cache_options_init(&c, C.sizeof_pagoda_kv_cache_options_t)
	return kvCacheOptionsFromC(&c)
}

// kvCacheOptionsFromC reads a C struct back (the defaults, and the layout test's round trip).
func kvCacheOptionsFromC(c *C.pagoda_kv_cache_options_t) KVCacheOptions {
	return KVCacheOptions{
		BlockSize:     int32(c.block_size),
		DType:         DType(c.dtype),
		NumBlocks:     int64(c.num_blocks),
		MemoryBytes:   uint64(c.memory_bytes),
		SwapBytes:     uint64(c.swap_bytes),
		PrefixCaching: c.prefix_caching != 0,
	}
}

// KVCacheStats is a pagoda_kv_cache_stats_t.
type KVCacheStats struct {
	BlockSize       int32
	BlocksTotal     int64
	BlocksUsed      int64
	BlocksFree      int64
	SlotsUsed       int64
	Sequences       int64
	BytesPerBlock   uint64
	BlocksCached    int64
	SlotsWasted     int64
	SwapBlocksTotal int64
	SwapBlocksUsed  int64
	PrefixQueries   int64
	PrefixHits      int64
}

// toC fills c from o and returns it (nil o: NULL, the defaults).
func (o *KVCacheOptions) toC(c *C.pagoda_kv_cache_options_t) *C.pagoda_kv_cache_options_t {
	if o == nil {
		return nil
	}
	C.pagoda_kv_cache_options_init(c, C.sizeof_pagoda_kv_cache_options_t)
	c.block_size = C.int32_t(o.BlockSize)
	c.dtype = C.int32_t(o.DType)
	c.num_blocks = C.int64_t(o.NumBlocks)
	c.memory_bytes = C.uint64_t(o.MemoryBytes)
	c.swap_bytes = C.uint64_t(o.SwapBytes)
	c.prefix_caching = C.int32_t(boolInt(o.PrefixCaching))
	return c
}

// NewKVCache allocates a KV cache for model on mesh, laid out as plan says (plan may be nil:
// the whole model on a one-device mesh, the planner's layout on a larger one); opts may be nil
// for the defaults.
func NewKVCache(model *Model, mesh *Mesh, plan *Plan, opts *KVCacheOptions) (*KVCache, error) {
	if model == nil {
		return nil, errNil("model")
	}
	if mesh == nil {
		return nil, errNil("mesh")
	}
	var planHandle *handle
	if plan != nil {
		planHandle = &plan.h
	}
	ptrs, release, err := acquireAll(&model.h, &mesh.h, planHandle)
	if err != nil {
		return nil, err
	}
	defer release()
	var c C.pagoda_kv_cache_options_t // no pointers: Go memory may reach C
	co := opts.toC(&c)
	var out *C.pagoda_kv_cache_t
	if err := call(func() C.pagoda_status_t {
		return C.pagoda_kv_cache_create((*C.pagoda_model_t)(ptrs[0]), (*C.pagoda_mesh_t)(ptrs[1]),
			(*C.pagoda_plan_t)(ptrs[2]), co, &out)
	}); err != nil {
		return nil, err
	}
	kv := &KVCache{h: newHandle("KV cache", unsafe.Pointer(out))}
	// A backstop: an engine using the cache keeps it alive past its handle.
	runtime.SetFinalizer(kv, (*KVCache).Close)
	return kv, nil
}

// Close releases the cache's handle; an engine using it keeps the blocks until it is closed.
// Calling it again does nothing.
func (kv *KVCache) Close() {
	kv.h.close(func(p unsafe.Pointer) { C.pagoda_kv_cache_destroy((*C.pagoda_kv_cache_t)(p)) })
	runtime.SetFinalizer(kv, nil)
}

// Stats reads the cache's statistics.
func (kv *KVCache) Stats() (KVCacheStats, error) {
	var c C.pagoda_kv_cache_stats_t
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := kv.h.call(func(p unsafe.Pointer) C.pagoda_status_t {
		return C.pagoda_kv_cache_get_stats((*C.pagoda_kv_cache_t)(p), &c)
	}); err != nil {
		return KVCacheStats{}, err
	}
	return KVCacheStats{
		BlockSize:       int32(c.block_size),
		BlocksTotal:     int64(c.blocks_total),
		BlocksUsed:      int64(c.blocks_used),
		BlocksFree:      int64(c.blocks_free),
		SlotsUsed:       int64(c.slots_used),
		Sequences:       int64(c.sequences),
		BytesPerBlock:   uint64(c.bytes_per_block),
		BlocksCached:    int64(c.blocks_cached),
		SlotsWasted:     int64(c.slots_wasted),
		SwapBlocksTotal: int64(c.swap_blocks_total),
		SwapBlocksUsed:  int64(c.swap_blocks_used),
		PrefixQueries:   int64(c.prefix_queries),
		PrefixHits:      int64(c.prefix_hits),
	}, nil
}
