//! kv_cache.h: the paged KV cache.

use crate::common::{pagoda_kv_cache_t, pagoda_mesh_t, pagoda_model_t, pagoda_plan_t};
use crate::status::pagoda_status_t;

/// `pagoda_kv_cache_options_t`. Initialise with `pagoda_kv_cache_options_init`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_kv_cache_options_t {
    pub struct_size: u32,
    pub block_size: i32,
    /// A `pagoda_dtype_t`.
    pub dtype: i32,
    pub num_blocks: i64,
    pub memory_bytes: u64,
    pub swap_bytes: u64,
    pub prefix_caching: i32,
}

/// `pagoda_kv_cache_stats_t`; the caller sets `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pagoda_kv_cache_stats_t {
    pub struct_size: u32,
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

extern "C" {
    pub fn pagoda_kv_cache_options_init(options: *mut pagoda_kv_cache_options_t, size: usize);
    pub fn pagoda_kv_cache_create(
        model: *const pagoda_model_t,
        mesh: *const pagoda_mesh_t,
        plan: *const pagoda_plan_t,
        options: *const pagoda_kv_cache_options_t,
        out: *mut *mut pagoda_kv_cache_t,
    ) -> pagoda_status_t;
    pub fn pagoda_kv_cache_destroy(cache: *mut pagoda_kv_cache_t);
    pub fn pagoda_kv_cache_get_stats(
        cache: *const pagoda_kv_cache_t,
        stats: *mut pagoda_kv_cache_stats_t,
    ) -> pagoda_status_t;
}
