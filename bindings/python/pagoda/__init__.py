"""Python binding of libpagoda, the embeddable LLM serving library (ctypes, standard library
only, no build step).

Locating the library: the ``PAGODA_LIBRARY`` environment variable (a path), else
``ctypes.util.find_library("pagoda")``.

The GIL: libpagoda is loaded with ``ctypes.CDLL``, which releases the GIL for the duration of
every call into the library, so model opening, planning and engine steps never stop other
Python threads (``PyDLL`` is used nowhere). Log and progress callbacks, and a request's
logits processor, take the GIL back while they run.

Every object that owns a C handle (``Model``, ``Tokenizer``, ``Mesh``, ``Plan``, ``KvCache``,
``Engine``, ``ModelLoader``) is a context manager and has an idempotent ``close()``; a failing
call raises a :class:`PagodaError` subclass carrying the status and the library's message.

A story in a few lines::

    import pagoda
    with pagoda.Model("stories260K.gguf") as model, pagoda.Mesh() as mesh, \\
            pagoda.KvCache(model, mesh) as cache, pagoda.Engine(model, mesh, cache) as engine:
        for piece in engine.stream("Once upon a time", max_tokens=64, temperature=0):
            print(piece, end="", flush=True)
"""
from __future__ import annotations

from ._api import lib as _lib
from .backend import (DEVICE_HOST_ACCESSIBLE, DEVICE_USES_HOST_WEIGHTS, Backend, DeviceInfo,
                       DeviceKind, SkippedPlugin, backends, discover, find, load, skipped)
from .engine import Engine, Prompt
from .errors import (AbiMismatchError, AlreadyExistsError, BackendError, CancelledError,
                     ClosedError, EmptyError, FormatError, InternalError, InvalidArgumentError,
                     InvalidHandleError, NotAPluginError, NotFoundError, OutOfMemoryError,
                     PagodaError, PagodaIOError, Status, UnsupportedError, last_error_message)
from .kv_cache import DType, KvCache, KvCacheStats
from .log import LogLevel, get_log_level, set_log_callback, set_log_level
from .logits_processor import LogitsProcessor
from .mesh import Mesh
from .model import Model, ModelInfo, ModelLoader
from .options import (DecodeGraphs, DeviceSampling, EmbeddingNormalize, EngineOptions,
                      KernelChoice, KvReservation, Pooling, Preemption, QuantizedMatmul,
                      RequestOptions)
from .output import FinishReason, Output, TokenLogprob
from .placement import (CostProfileOptions, LinkProfileOptions, SimulateOptions, profile_costs,
                        profile_links, search_placement, simulate_placement)
from .plan import Plan, PlanObjective, PlanOptions, PlanStage, PlanSummary
from .quantize import QuantizedType, QuantizeStats, QuantType, quantize
from .stats import DeviceStats, EngineMetrics, EngineStats, Histogram, KernelChoiceInfo
from .stream import Completion, Stream
from .tokenizer import Tokenizer, TokenizerInfo


def version() -> str:
    """The library's version, such as ``"0.1.0"``."""
    return _lib.pagoda_version().decode()


def version_number() -> int:
    """The library's version as major * 10000 + minor * 100 + patch."""
    return _lib.pagoda_version_number()


def dtype_size(dtype: DType) -> int:
    """Bytes per element of ``dtype`` (0 for INVALID)."""
    return _lib.pagoda_dtype_size(int(dtype))


def dtype_name(dtype: DType) -> str:
    """The lower-case name of ``dtype``, such as ``"bf16"``."""
    return _lib.pagoda_dtype_name(int(dtype)).decode()


__all__ = [
    "AbiMismatchError", "AlreadyExistsError", "Backend", "BackendError", "CancelledError",
    "ClosedError", "Completion", "CostProfileOptions", "DEVICE_HOST_ACCESSIBLE", "DEVICE_USES_HOST_WEIGHTS", "DType",
    "DecodeGraphs", "DeviceInfo", "DeviceKind", "DeviceSampling", "DeviceStats",
    "EmbeddingNormalize", "EmptyError", "Engine", "EngineMetrics", "EngineOptions", "EngineStats", "FinishReason", "FormatError",
    "Histogram", "InternalError", "InvalidArgumentError", "InvalidHandleError", "KernelChoice",
    "KernelChoiceInfo", "KvCache", "KvCacheStats", "KvReservation", "LinkProfileOptions", "LogLevel",
    "LogitsProcessor",
    "Mesh", "Model",
    "ModelInfo", "ModelLoader", "NotAPluginError", "NotFoundError", "OutOfMemoryError", "Output",
    "PagodaError",
    "PagodaIOError", "Plan", "PlanObjective", "PlanOptions", "PlanStage", "PlanSummary",
    "Pooling", "Preemption", "Prompt", "QuantizedMatmul", "RequestOptions", "SimulateOptions", "SkippedPlugin", "Status",
    "Stream", "TokenLogprob", "Tokenizer", "TokenizerInfo", "UnsupportedError", "backends",
    "discover", "dtype_name", "dtype_size", "find", "get_log_level", "last_error_message", "load",
    "profile_costs", "profile_links",
    "search_placement", "set_log_callback", "set_log_level", "simulate_placement", "skipped",
    "version", "version_number",
]
