//! The paged KV cache: a pool of fixed-size blocks on the mesh's devices, lent to sequences.

use crate::convert::fetch;
use crate::dtype::Dtype;
use crate::error::{check, non_null, Result};
use crate::mesh::Mesh;
use crate::model::Model;
use crate::plan::Plan;
use pagoda_sys as sys;
use std::ptr::{self, NonNull};

c_struct! {
    /// How to size a KV cache. `Default` gives the library's defaults.
    #[derive(Clone, Debug, PartialEq)]
    pub struct KvCacheOptions options sys::pagoda_kv_cache_options_t {
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
}

c_struct! {
    /// A KV cache's state.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct KvCacheStats from sys::pagoda_kv_cache_stats_t {
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
        let raw = options.to_raw();
        let plan = plan.map_or(ptr::null(), Plan::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: live handles (the plan may be NULL) and a valid out-pointer.
        check(unsafe { sys::pagoda_kv_cache_create(model.as_ptr(), mesh.as_ptr(), plan, &raw, &mut out) })?;
        Ok(KvCache { raw: non_null(out, "KV cache")? })
    }

    /// Reads the cache's statistics.
    pub fn stats(&self) -> Result<KvCacheStats> {
        // SAFETY: a live handle and a struct whose struct_size says how much to fill.
        fetch(|s| unsafe { sys::pagoda_kv_cache_get_stats(self.raw.as_ptr(), s) })
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
