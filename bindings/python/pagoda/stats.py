"""The engine's counters, per-device shares and serving metrics, as plain records."""
from __future__ import annotations

import dataclasses

from . import _structs as S


@dataclasses.dataclass(frozen=True)
class EngineStats:
    """``pagoda_engine_stats_t``."""
    requests_waiting: int
    requests_running: int
    requests_swapped: int
    requests_finished: int
    preemptions_recompute: int
    preemptions_swap: int
    steps: int
    prompt_tokens: int
    generated_tokens: int
    batched_sequences: int
    graph_steps: int
    device_sampled_tokens: int


@dataclasses.dataclass(frozen=True)
class DeviceStats:
    """``pagoda_device_stats_t``: what one device of the engine's mesh holds and runs."""
    device: str
    stage: int
    tp_rank: int
    tp_size: int
    first_layer: int
    end_layer: int
    kv_heads: int
    weight_bytes: int
    kv_bytes: int
    layer_weight_bytes: int
    kvp_rank: int
    kvp_size: int
    ep_rank: int              #: its group of the stage's expert-parallel groups (0 without)
    ep_size: int              #: groups the stage's experts split into (mesh axis ``ep``; 1 without)
    expert_weight_bytes: int  #: of ``layer_weight_bytes``, those of its experts (0 if dense)


@dataclasses.dataclass(frozen=True)
class KernelChoiceInfo:
    """``pagoda_kernel_choice_info_t`` (kernel_choice.h): the kernel an engine runs for one
    product shape on one kind of device."""
    w_dtype: int          #: the weights' DType
    x_dtype: int          #: the activations' DType
    y_dtype: int          #: the outputs' DType
    flags: int            #: the products' PAGODA_MATMUL_* bits (ops.h)
    n: int                #: outputs (rows of the weights)
    k: int                #: inputs (columns of the weights)
    m: int                #: rows: the choice holds for (m/2, m] rows; a power of two
    seconds: float        #: per product of the chosen kernel as measured; 0 if unknown
    rules_seconds: float  #: the same for the backend's built-in rules
    device: str           #: the kind of device: "backend / arch / model / N units"
    variant: str          #: the kernel chosen (the backend's name), or "rules"


@dataclasses.dataclass(frozen=True)
class Histogram:
    """``pagoda_histogram_t``, Prometheus-style: ``cumulative_counts[i]`` observations were at
    most ``upper_bounds[i]`` seconds; ``count`` and ``sum`` cover all of them."""
    upper_bounds: tuple[float, ...]
    cumulative_counts: tuple[int, ...]
    count: int
    sum: float


@dataclasses.dataclass(frozen=True)
class EngineMetrics:
    """``pagoda_engine_metrics_t``: what a serving host monitors."""
    requests_running: int
    requests_waiting: int
    requests_swapped: int
    kv_blocks_used: int
    kv_blocks_total: int
    kv_cache_usage: float
    prompt_tokens: int
    prompt_tokens_computed: int
    generation_tokens: int
    requests_finished_stop: int
    requests_finished_length: int
    requests_finished_aborted: int
    requests_finished_error: int
    preemptions_recompute: int
    preemptions_swap: int
    prefix_cache_queries: int
    prefix_cache_hits: int
    time_to_first_token: Histogram
    inter_token_latency: Histogram
    e2e_request_latency: Histogram
    request_queue_time: Histogram


def _histogram(h: S.Histogram) -> Histogram:
    n = min(h.n_bounds, S.HISTOGRAM_MAX_BOUNDS)
    return Histogram(tuple(h.upper_bounds[:n]), tuple(h.cumulative_counts[:n]), h.count, h.sum)


_HISTOGRAMS = ("time_to_first_token", "inter_token_latency", "e2e_request_latency",
               "request_queue_time")


def metrics_from_c(m: S.EngineMetrics) -> EngineMetrics:
    """Copies filled metrics, histograms included."""
    scalars = {f.name: getattr(m, f.name) for f in dataclasses.fields(EngineMetrics)
               if f.name not in _HISTOGRAMS}
    return EngineMetrics(**scalars, **{h: _histogram(getattr(m, h)) for h in _HISTOGRAMS})


__all__ = ["EngineStats", "DeviceStats", "KernelChoiceInfo", "Histogram", "EngineMetrics",
           "metrics_from_c"]
