"""The paged KV cache: a pool of fixed-size blocks on the mesh's devices."""
from __future__ import annotations

import ctypes
import dataclasses
import enum
from typing import Optional

from . import _structs as S
from ._api import lib
from ._handle import Handle, using
from ._records import snapshot
from .errors import check
from .mesh import Mesh
from .model import Model
from .plan import Plan


class DType(enum.IntEnum):
    """``pagoda_dtype_t`` (dtype.h)."""
    INVALID = 0
    F32 = 1
    F16 = 2
    BF16 = 3
    I32 = 4
    I64 = 5
    I8 = 6
    U8 = 7
    # GGUF's quantized block types: weights only.
    Q8_0 = 8
    Q4_0 = 9
    Q4_K = 10
    Q5_K = 11
    Q6_K = 12


@dataclasses.dataclass(frozen=True)
class KvCacheStats:
    """``pagoda_kv_cache_stats_t``: a KV cache's state."""
    block_size: int
    blocks_total: int
    blocks_used: int
    blocks_free: int
    slots_used: int
    sequences: int
    bytes_per_block: int
    blocks_cached: int
    slots_wasted: int
    swap_blocks_total: int
    swap_blocks_used: int
    prefix_queries: int
    prefix_hits: int


class KvCache(Handle):
    """Block pools for ``model`` on ``mesh``'s devices. The engine using it keeps it alive, so
    it may be closed before the engine. ``stats()`` is safe from any thread."""

    _kind = "KV cache"

    def __init__(self, model: Model, mesh: Mesh, plan: Optional[Plan] = None, *,
                 block_size: Optional[int] = None, dtype: Optional[DType] = None,
                 num_blocks: Optional[int] = None, memory_bytes: Optional[int] = None,
                 swap_bytes: Optional[int] = None, prefix_caching: Optional[bool] = None):
        """Allocates the cache. Options left ``None`` take the library's defaults: 16 tokens per
        block, F32 on CPU (F16 on GPU), as many blocks as a quarter of free memory allows, swap
        as large as the pool, prefix caching on. ``plan`` ``None``: the whole model on a
        one-device mesh, the planner's layout on a larger one."""
        opts = S.options(S.KvCacheOptions, lib.pagoda_kv_cache_options_init,
                         block_size=block_size, dtype=dtype, num_blocks=num_blocks,
                         memory_bytes=memory_bytes, swap_bytes=swap_bytes,
                         prefix_caching=prefix_caching)
        out = ctypes.c_void_p()
        with using(model, mesh, plan) as (m, me, p):
            check(lib.pagoda_kv_cache_create(m, me, p, ctypes.byref(opts), ctypes.byref(out)))
        super().__init__(out.value, lib.pagoda_kv_cache_destroy)

    def stats(self) -> KvCacheStats:
        """The cache's statistics (safe from any thread, also while an engine steps)."""
        stats = S.new(S.KvCacheStats)
        self._call(lib.pagoda_kv_cache_get_stats, ctypes.byref(stats))
        return snapshot(KvCacheStats, stats)
