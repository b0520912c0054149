//! The paged KV cache: a pool of fixed-size blocks on the mesh's devices, lent to sequences.

use crate::dtype::{raw_or_zero, Dtype};
use crate::error::{check, Error, Result, Status};
use crate::mesh::Mesh;
use crate::model::Model;
use crate::plan::Plan;
use pagoda_sys as sys;
use std::ptr::{self, NonNull};

/// How to size a KV cache. `Default` gives the library's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct KvCacheOptions {
    /// Tokens per block on each device, 1–128; 0 = 16.
    pub block_size: i32,
    /// F32, F16 or BF16; `None` = F32 on a CPU, F16 on a GPU.
    pub dtype: Option<Dtype>,
    /// Blocks in the pool; 0 = as many as `memory_bytes` allows.
    pub num_blocks: i64,
    /// Budget per device when `num_blocks` is 0; 0 = a quarter of the free memory, capped.
    pub memory_bytes: u64,
    /// Host memory for swapped-out blocks; 0 = as much as the device pool, at most 4 GiB.
    pub swap_bytes: u64,
    /// Keep full blocks of finished prompts for requests that share the prefix.
    pub prefix_caching: bool,
}

impl Default for KvCacheOptions {
    fn default() -> KvCacheOptions {
        // SAFETY: all-zero is a valid options struct; init fills the defaults.
        let mut raw: sys::pagoda_kv_cache_options_t = unsafe { std::mem::zeroed() };
        unsafe { sys::pagoda_kv_cache_options_init(&mut raw, std::mem::size_of_val(&raw)) };
        KvCacheOptions {
            block_size: raw.block_size,
            dtype: Dtype::from_raw(raw.dtype),
            num_blocks: raw.num_blocks,
            memory_bytes: raw.memory_bytes,
            swap_bytes: raw.swap_bytes,
            prefix_caching: raw.prefix_caching != 0,
        }
    }
}

/// A KV cache's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvCacheStats {
    pub block_size: i32,
    pub blocks_total: i64,
    pub blocks_used: i64,
    pub blocks_free: i64,
    pub slots_used: i64,
    pub sequences: i64,
    pub bytes_per_block: u64,
    pub blocks_cached: i64,
    pub slots_wasted: i64,
    pub swap_blocks_total: i64,
    pub swap_blocks_used: i64,
    pub prefix_queries: i64,
    pub prefix_hits: i64,
}

/// A paged KV cache. An engine made with it keeps it alive, so it may be dropped before the
/// engine; its statistics can be read from any thread while the engine steps.
#[derive(Debug)]
pub struct KvCache {
    raw: NonNull<sys::pagoda_kv_cache_t>,
}

// SAFETY: kv_cache.h ties a cache to no thread; destroy ("not while another call on this handle
// runs") runs from Drop, with `&mut self`, so alone.
unsafe impl Send for KvCache {}
// SAFETY: the `&self` uses are pagoda_kv_cache_get_stats, "safe from any thread, also while an
// engine steps", and engine creation, "safe from any thread" (engine.h; a second engine on the
// same cache is refused, not raced).
unsafe impl Sync for KvCache {}

impl KvCache {
    /// Allocates a KV cache for `model` on `mesh`, laid out as `plan` says (`None`: the whole
    /// model on one device, or the planner's layout on a larger mesh).
    pub fn new(model: &Model, mesh: &Mesh, plan: Option<&Plan>, options: &KvCacheOptions) -> Result<KvCache> {
        // SAFETY: all-zero is a valid options struct; init fills the defaults.
        let mut raw: sys::pagoda_kv_cache_options_t = unsafe { std::mem::zeroed() };
        unsafe { sys::pagoda_kv_cache_options_init(&mut raw, std::mem::size_of_val(&raw)) };
        raw.block_size = options.block_size;
        raw.dtype = raw_or_zero(options.dtype);
        raw.num_blocks = options.num_blocks;
        raw.memory_bytes = options.memory_bytes;
        raw.swap_bytes = options.swap_bytes;
        raw.prefix_caching = i32::from(options.prefix_caching);
        let plan = plan.map_or(ptr::null(), Plan::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: live handles (the plan may be NULL) and a valid out-pointer.
        check(unsafe { sys::pagoda_kv_cache_create(model.as_ptr(), mesh.as_ptr(), plan, &raw, &mut out) })?;
        NonNull::new(out)
            .map(|raw| KvCache { raw })
            .ok_or_else(|| Error::new(Status::Internal, "the library returned a NULL KV cache"))
    }

    /// Reads the cache's statistics.
    pub fn stats(&self) -> Result<KvCacheStats> {
        // SAFETY: all-zero is a valid stats struct.
        let mut s: sys::pagoda_kv_cache_stats_t = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of_val(&s) as u32;
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        check(unsafe { sys::pagoda_kv_cache_get_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(KvCacheStats {
            block_size: s.block_size,
            blocks_total: s.blocks_total,
            blocks_used: s.blocks_used,
            blocks_free: s.blocks_free,
            slots_used: s.slots_used,
            sequences: s.sequences,
            bytes_per_block: s.bytes_per_block,
            blocks_cached: s.blocks_cached,
            slots_wasted: s.slots_wasted,
            swap_blocks_total: s.swap_blocks_total,
            swap_blocks_used: s.swap_blocks_used,
            prefix_queries: s.prefix_queries,
            prefix_hits: s.prefix_hits,
        })
    }

    /// The handle as pagoda_engine_create takes it: non-const, since the engine takes the cache
    /// over, which the library does under its own lock.
    pub(crate) fn as_engine_ptr(&self) -> *mut sys::pagoda_kv_cache_t {
        self.raw.as_ptr()
    }
}

impl Drop for KvCache {
    fn drop(&mut self) {
        // SAFETY: the handle is live and used by no one else (`&mut self`); an engine using the
        // cache keeps the pools alive.
        unsafe { sys::pagoda_kv_cache_destroy(self.raw.as_ptr()) }
    }
}
