"""The C structs of the host-facing headers, field for field (include/pagoda/*.h).

Fields holding an enum's value are ``c_int32``, as the headers declare them (``int32_t``, the
comment naming the enum). ``tests/test_layout.py`` compares every
size, alignment and field offset here with what the C compiler gives (``pagoda-abi-layout``).
Each class's ``c_name`` is its typedef name in the headers.
"""
from __future__ import annotations

import ctypes
from ctypes import (CFUNCTYPE, POINTER, c_char, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)
from typing import Callable

# int (*)(void *user, float fraction, const char *stage): model.h's pagoda_progress_fn.
ProgressFn = CFUNCTYPE(c_int, c_void_p, c_float, c_char_p)
# void (*)(void *user_data, pagoda_log_level_t level, const char *message): log.h.
LogFn = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
# pagoda_status_t (*)(void *user, void *data, size_t bytes, int32_t root): mesh.h's
# pagoda_bootstrap_broadcast_fn.
BootstrapFn = CFUNCTYPE(c_int32, c_void_p, c_void_p, c_size_t, c_int32)
# int32_t (*)(void *user, uint64_t request_id, int32_t sequence_index, const int32_t *token_ids,
# size_t n_tokens, size_t n_prompt_tokens, float *logits, size_t n_logits): request.h's
# pagoda_logits_processor_fn. The arrays come as addresses, for views made without copying.
LogitsProcessorFn = CFUNCTYPE(c_int32, c_void_p, c_uint64, c_int32, c_void_p, c_size_t,
                              c_size_t, c_void_p, c_size_t)


class _Struct(ctypes.Structure):
    c_name = ""


# ---- model.h ---------------------------------------------------------------------------------

class ModelOptions(_Struct):
    c_name = "pagoda_model_options_t"
    _fields_ = [("struct_size", c_uint32), ("progress", ProgressFn), ("progress_user", c_void_p)]


class ModelInfo(_Struct):
    c_name = "pagoda_model_info_t"
    _fields_ = [("struct_size", c_uint32), ("architecture", c_char * 32),
                ("vocab_size", c_int64), ("hidden_size", c_int64),
                ("intermediate_size", c_int64), ("n_layers", c_int64), ("n_heads", c_int64),
                ("n_kv_heads", c_int64), ("head_dim", c_int64), ("max_position", c_int64),
                ("n_parameters", c_uint64), ("bos_token_id", c_int32),
                ("eos_token_id", c_int32), ("n_experts", c_int64), ("experts_per_token", c_int64),
                ("expert_intermediate_size", c_int64), ("n_sparse_layers", c_int64)]


# ---- quantize.h ------------------------------------------------------------------------------

class QuantizeOptions(_Struct):
    c_name = "pagoda_quantize_options_t"
    _fields_ = [("struct_size", c_uint32), ("type", c_int32), ("threads", c_int32),
                ("progress", ProgressFn), ("progress_user", c_void_p)]


class QuantizedTypeStats(_Struct):
    c_name = "pagoda_quantized_type_stats_t"
    _fields_ = [("ggml_type", c_int32), ("name", c_char * 8), ("tensors", c_int64),
                ("values", c_uint64), ("rmse", c_double), ("relative_rmse", c_double)]


QUANTIZE_MAX_TYPES = 8


class QuantizeStats(_Struct):
    c_name = "pagoda_quantize_stats_t"
    _fields_ = [("struct_size", c_uint32), ("input_bytes", c_uint64), ("output_bytes", c_uint64),
                ("tensors_kept", c_int64), ("n_types", c_int32),
                ("types", QuantizedTypeStats * QUANTIZE_MAX_TYPES)]


# ---- tokenizer.h -----------------------------------------------------------------------------

class TokenizerInfo(_Struct):
    c_name = "pagoda_tokenizer_info_t"
    _fields_ = [("struct_size", c_uint32), ("vocab_size", c_int32), ("bos_token_id", c_int32),
                ("eos_token_id", c_int32), ("unk_token_id", c_int32),
                ("pad_token_id", c_int32), ("model", c_char * 16)]


class ChatTemplateOptions(_Struct):
    c_name = "pagoda_chat_template_options_t"
    _fields_ = [("struct_size", c_uint32), ("add_generation_prompt", c_int32),
                ("chat_template", c_char_p), ("template_name", c_char_p),
                ("tools_json", c_char_p), ("context_json", c_char_p)]


# ---- mesh.h ----------------------------------------------------------------------------------

class MeshOptions(_Struct):
    c_name = "pagoda_mesh_options_t"
    _fields_ = [("struct_size", c_uint32), ("devices", c_char_p), ("axes", c_char_p),
                ("rank", c_int32), ("world_size", c_int32), ("rendezvous", c_char_p),
                ("bootstrap", BootstrapFn), ("bootstrap_user", c_void_p),
                ("timeout_ms", c_int64)]


# ---- plan.h ----------------------------------------------------------------------------------

class PlanOptions(_Struct):
    c_name = "pagoda_plan_options_t"
    _fields_ = [("struct_size", c_uint32), ("objective", c_int32), ("micro_batches", c_int32),
                ("stages", c_int32), ("tensor_parallel", c_int32), ("device", c_char_p),
                ("cost_file", c_char_p), ("mesh_shape", c_char_p), ("step_tokens", c_int64),
                ("context_tokens", c_int64), ("kv_tokens", c_int64),
                ("prompt_tokens", c_int64), ("granularity", c_int64),
                ("epsilon_seconds", c_double), ("expert_parallel", c_int32)]


class PlanStage(_Struct):
    c_name = "pagoda_plan_stage_t"
    _fields_ = [("struct_size", c_uint32), ("first_layer", c_int64), ("end_layer", c_int64),
                ("nodes", c_int32), ("devices", c_int32), ("tensor_parallel", c_int32),
                ("has_embedding", c_int32), ("has_head", c_int32), ("seconds", c_double),
                ("memory_bytes", c_double), ("expert_parallel", c_int32)]


class PlanSummary(_Struct):
    c_name = "pagoda_plan_summary_t"
    _fields_ = [("struct_size", c_uint32), ("n_stages", c_size_t),
                ("latency_seconds", c_double), ("max_stage_seconds", c_double),
                ("throughput_per_second", c_double), ("objective_seconds", c_double),
                ("n_slices", c_size_t), ("sliced_prefill_seconds", c_double),
                ("uniform_prefill_seconds", c_double)]


class SimulateOptions(_Struct):
    c_name = "pagoda_simulate_options_t"
    _fields_ = [("struct_size", c_uint32), ("rate_per_model", c_double),
                ("total_rate", c_double), ("cv", c_double), ("slo_seconds", c_double),
                ("duration_seconds", c_double), ("seed", c_uint64),
                ("overhead_seconds", c_double), ("reject_late", c_int32)]


class CostProfileOptions(_Struct):
    c_name = "pagoda_cost_profile_options_t"
    _fields_ = [("struct_size", c_uint32), ("max_tokens", c_int64), ("granularity", c_int64),
                ("grid", c_int32), ("repeats", c_int32), ("beside", c_char_p)]


class LinkProfileOptions(_Struct):
    c_name = "pagoda_link_profile_options_t"
    _fields_ = [("struct_size", c_uint32), ("min_bytes", c_int64), ("max_bytes", c_int64),
                ("repeats", c_int32)]


# ---- kv_cache.h ------------------------------------------------------------------------------

class KvCacheOptions(_Struct):
    c_name = "pagoda_kv_cache_options_t"
    _fields_ = [("struct_size", c_uint32), ("block_size", c_int32), ("dtype", c_int32),
                ("num_blocks", c_int64), ("memory_bytes", c_uint64), ("swap_bytes", c_uint64),
                ("prefix_caching", c_int32)]


class KvCacheStats(_Struct):
    c_name = "pagoda_kv_cache_stats_t"
    _fields_ = [("struct_size", c_uint32), ("block_size", c_int32),
                ("blocks_total", c_int64), ("blocks_used", c_int64), ("blocks_free", c_int64),
                ("slots_used", c_int64), ("sequences", c_int64), ("bytes_per_block", c_uint64),
                ("blocks_cached", c_int64), ("slots_wasted", c_int64),
                ("swap_blocks_total", c_int64), ("swap_blocks_used", c_int64),
                ("prefix_queries", c_int64), ("prefix_hits", c_int64)]


# ---- engine.h --------------------------------------------------------------------------------

class LogitBias(_Struct):
    c_name = "pagoda_logit_bias_t"
    _fields_ = [("token_id", c_int32), ("bias", c_float)]


class RequestOptions(_Struct):
    c_name = "pagoda_request_options_t"
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("max_tokens", c_int32),
                ("temperature", c_float), ("top_k", c_int32), ("top_p", c_float),
                ("min_p", c_float), ("repetition_penalty", c_float),
                ("presence_penalty", c_float), ("frequency_penalty", c_float),
                ("seed", c_uint64), ("stop_token_ids", POINTER(c_int32)),
                ("n_stop_token_ids", c_size_t), ("stop_strings", POINTER(c_char_p)),
                ("n_stop_strings", c_size_t), ("logprobs", c_int32),
                ("prompt_logprobs", c_int32), ("n", c_int32), ("best_of", c_int32),
                ("beam_width", c_int32), ("length_penalty", c_float),
                ("early_stopping", c_int32), ("priority", c_int32),
                ("logit_bias", POINTER(LogitBias)), ("n_logit_bias", c_size_t),
                ("bad_words_token_ids", POINTER(c_int32)),
                ("bad_words_lengths", POINTER(c_size_t)), ("n_bad_words", c_size_t),
                ("allowed_token_ids", POINTER(c_int32)), ("n_allowed_token_ids", c_size_t),
                # Set at submit by the engine, which keeps the function alive (engine.py).
                ("logits_processor", LogitsProcessorFn), ("logits_processor_user", c_void_p),
                ("min_tokens", c_int32),
                ("constraint_kind", c_int32), ("constraint", c_char_p),
                ("pooling", c_int32), ("embedding_normalize", c_int32)]


class Logprob(_Struct):
    c_name = "pagoda_logprob_t"
    _fields_ = [("token_id", c_int32), ("logprob", c_float)]


class Output(_Struct):
    c_name = "pagoda_output_t"
    _fields_ = [("struct_size", c_uint32), ("request_id", c_uint64),
                ("finish_reason", c_int32), ("status", c_int32), ("error", c_char_p),
                ("token_ids", POINTER(c_int32)), ("n_tokens", c_size_t),
                # NUL-terminated as well as counted: read as c_char_p, the quickest way ctypes
                # has to copy it (output.py falls back to text_len for text holding a NUL).
                ("text", c_char_p), ("text_len", c_size_t), ("logprobs", POINTER(c_float)),
                ("top_logprobs", POINTER(Logprob)), ("n_top_logprobs", c_int32),
                ("n_prompt_tokens", c_size_t), ("n_generated", c_size_t),
                ("prompt_logprobs", POINTER(c_float)),
                ("prompt_top_logprobs", POINTER(Logprob)),
                ("n_prompt_top_logprobs", c_int32), ("sequence_index", c_int32),
                ("cumulative_logprob", c_float), ("request_finished", c_int32),
                ("embedding", POINTER(c_float)), ("n_embedding", c_size_t)]


class EngineOptions(_Struct):
    c_name = "pagoda_engine_options_t"
    # on_output stays NULL: outputs are polled (a callback per token would cost a GIL round trip).
    _fields_ = [("struct_size", c_uint32), ("max_num_seqs", c_int32),
                ("max_num_batched_tokens", c_int32), ("on_output", c_void_p),
                ("on_output_user", c_void_p), ("preemption", c_int32),
                ("kv_reservation", c_int32), ("decode_graphs", c_int32),
                ("device_sampling", c_int32), ("activation_dtype", c_int32),
                ("pipeline_micro_batches", c_int64), ("quantized_matmul", c_int32),
                ("kernel_choices_file", c_char_p), ("kernel_choice", c_int32)]


class EngineStats(_Struct):
    c_name = "pagoda_engine_stats_t"
    _fields_ = [("struct_size", c_uint32), ("requests_waiting", c_int64),
                ("requests_running", c_int64), ("requests_swapped", c_int64),
                ("requests_finished", c_int64), ("preemptions_recompute", c_int64),
                ("preemptions_swap", c_int64), ("steps", c_int64), ("prompt_tokens", c_int64),
                ("generated_tokens", c_int64), ("batched_sequences", c_int64),
                ("graph_steps", c_int64), ("device_sampled_tokens", c_int64)]


class DeviceStats(_Struct):
    c_name = "pagoda_device_stats_t"
    _fields_ = [("struct_size", c_uint32), ("device", c_char * 32), ("stage", c_int32),
                ("tp_rank", c_int32), ("tp_size", c_int32), ("first_layer", c_int64),
                ("end_layer", c_int64), ("kv_heads", c_int64), ("weight_bytes", c_uint64),
                ("kv_bytes", c_uint64), ("layer_weight_bytes", c_uint64),
                ("kvp_rank", c_int32), ("kvp_size", c_int32), ("ep_rank", c_int32),
                ("ep_size", c_int32), ("expert_weight_bytes", c_uint64)]


HISTOGRAM_MAX_BOUNDS = 32  # PAGODA_HISTOGRAM_MAX_BOUNDS


class Histogram(_Struct):
    c_name = "pagoda_histogram_t"
    _fields_ = [("n_bounds", c_uint32), ("upper_bounds", c_double * HISTOGRAM_MAX_BOUNDS),
                ("cumulative_counts", c_uint64 * HISTOGRAM_MAX_BOUNDS), ("count", c_uint64),
                ("sum", c_double)]


class EngineMetrics(_Struct):
    c_name = "pagoda_engine_metrics_t"
    _fields_ = [("struct_size", c_uint32), ("requests_running", c_int64),
                ("requests_waiting", c_int64), ("requests_swapped", c_int64),
                ("kv_blocks_used", c_int64), ("kv_blocks_total", c_int64),
                ("kv_cache_usage", c_double), ("prompt_tokens", c_int64),
                ("prompt_tokens_computed", c_int64), ("generation_tokens", c_int64),
                ("requests_finished_stop", c_int64), ("requests_finished_length", c_int64),
                ("requests_finished_aborted", c_int64), ("requests_finished_error", c_int64),
                ("preemptions_recompute", c_int64), ("preemptions_swap", c_int64),
                ("prefix_cache_queries", c_int64), ("prefix_cache_hits", c_int64),
                ("time_to_first_token", Histogram), ("inter_token_latency", Histogram),
                ("e2e_request_latency", Histogram), ("request_queue_time", Histogram)]


# ---- kernel_choice.h -------------------------------------------------------------------------

class KernelChoiceInfo(_Struct):
    c_name = "pagoda_kernel_choice_info_t"
    _fields_ = [("struct_size", c_uint32), ("w_dtype", c_int32), ("x_dtype", c_int32),
                ("y_dtype", c_int32), ("flags", c_uint32), ("n", c_int64), ("k", c_int64),
                ("m", c_int64), ("seconds", c_double), ("rules_seconds", c_double),
                ("device", c_char * 192), ("variant", c_char * 32)]


# ---- backend.h (the host-facing part: device descriptions) ------------------------------------

class DeviceInfo(_Struct):
    c_name = "pagoda_device_info_t"
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("flags", c_uint32),
                ("compute_units", c_int32), ("total_memory", c_uint64),
                ("free_memory", c_uint64), ("name", c_char * 128), ("arch", c_char * 32)]


ALL: tuple[type[_Struct], ...] = (
    ModelOptions, ModelInfo, TokenizerInfo, ChatTemplateOptions, MeshOptions, PlanOptions,
    PlanStage, PlanSummary, SimulateOptions, CostProfileOptions, LinkProfileOptions, KvCacheOptions,
    KvCacheStats,
    LogitBias, RequestOptions, Logprob, Output, EngineOptions, EngineStats, DeviceStats, Histogram,
    EngineMetrics, KernelChoiceInfo, DeviceInfo, QuantizeOptions, QuantizedTypeStats, QuantizeStats)
"""Every struct the binding declares."""


def new(cls: type[_Struct]) -> _Struct:
    """A zeroed struct whose ``struct_size`` says how big the binding knows it to be."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    return s


def options(cls: type[_Struct], init: Callable[..., None], **values: object) -> _Struct:
    """An options struct filled with the library's defaults by its ``_init`` function, then the
    fields given a value other than ``None`` set (see :func:`assign`): no default is restated
    here, so the library may change one."""
    s = cls()
    init(ctypes.byref(s), ctypes.sizeof(s))
    assign(s, **values)
    return s


def assign(struct: _Struct, **values: object) -> None:
    """Sets the fields given a value other than ``None`` (the rest keep their defaults).

    Booleans become 0/1 and strings UTF-8. An integer that does not fit its field is refused
    rather than wrapped (ctypes would silently keep the low bits).
    """
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, str):
            value = value.encode("utf-8")
        setattr(struct, name, value)
        if isinstance(value, int) and getattr(struct, name) != value:
            raise ValueError(f"{name}={value} does not fit {struct.c_name}.{name}")


def int32_array(values: "list[int] | tuple[int, ...]", what: str) -> ctypes.Array:
    """A C ``int32_t`` array of ``values`` (token ids); refuses what does not fit rather than
    letting ctypes keep the low bits."""
    arr = (c_int32 * len(values))(*values)
    if list(arr) != list(values):
        raise ValueError(f"{what}: every value must be a 32-bit signed integer")
    return arr
