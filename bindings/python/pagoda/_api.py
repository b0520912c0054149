"""The C functions' prototypes, set once at import so no call looks them up or guesses types.

Where a query has a ``_v2`` that reports failures (``has_work``, device counts and names, slice
lengths, the model's path), only the ``_v2`` is declared: the old one cannot say what went wrong.

Handles are ``c_void_p`` (opaque to the binding); out-parameters are pointers. Functions that
return memory for the caller to own are read and then released with ``pagoda_free``.
"""
from __future__ import annotations

from ctypes import (POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32,
                    c_uint64, c_void_p)

from . import _structs as S
from ._library import lib

_STATUS = c_int32  # pagoda_status_t
_H = c_void_p      # any opaque handle
_OUT = POINTER(c_void_p)


def _p(cls):
    return POINTER(cls)


_PROTOTYPES = {
    # status.h, version.h, common.h, dtype.h, log.h
    "pagoda_status_string": (c_char_p, [_STATUS]),
    "pagoda_last_error_message": (c_char_p, []),
    "pagoda_clear_error": (None, []),
    "pagoda_version": (c_char_p, []),
    "pagoda_free": (None, [c_void_p]),
    "pagoda_dtype_size": (c_size_t, [c_int32]),
    "pagoda_dtype_name": (c_char_p, [c_int32]),
    "pagoda_log_set_callback": (None, [S.LogFn, c_void_p]),
    "pagoda_log_set_level": (_STATUS, [c_int32]),
    "pagoda_log_get_level": (c_int32, []),
    # backend.h (the host-facing registry)
    "pagoda_backend_load": (_STATUS, [c_char_p, c_char_p, _OUT]),
    "pagoda_backends_discover": (_STATUS, [c_char_p, POINTER(c_size_t)]),
    "pagoda_backend_count": (c_size_t, []),
    "pagoda_backend_get": (_STATUS, [c_size_t, _OUT]),
    "pagoda_backend_find": (_STATUS, [c_char_p, _OUT]),
    "pagoda_backend_name": (c_char_p, [_H]),
    "pagoda_backend_description": (c_char_p, [_H]),
    "pagoda_backend_path": (c_char_p, [_H]),
    "pagoda_backend_device_count": (_STATUS, [_H, POINTER(c_int32)]),
    "pagoda_backend_device_info": (_STATUS, [_H, c_int32, _p(S.DeviceInfo)]),
    "pagoda_backend_skipped_count": (c_size_t, []),
    "pagoda_backend_skipped": (_STATUS, [c_size_t, POINTER(c_char_p), POINTER(_STATUS),
                                         POINTER(c_char_p)]),
    # model.h
    "pagoda_model_options_init": (None, [_p(S.ModelOptions), c_size_t]),
    "pagoda_model_open": (_STATUS, [c_char_p, _p(S.ModelOptions), _OUT]),
    "pagoda_quantize_options_init": (None, [_p(S.QuantizeOptions), c_size_t]),
    "pagoda_model_quantize": (_STATUS, [c_char_p, c_char_p, _p(S.QuantizeOptions),
                                        _p(S.QuantizeStats)]),
    "pagoda_model_load_start": (_STATUS, [c_char_p, _p(S.ModelOptions), _OUT]),
    "pagoda_model_loader_progress": (_STATUS, [_H, POINTER(c_float), POINTER(c_int)]),
    "pagoda_model_loader_cancel": (None, [_H]),
    "pagoda_model_loader_finish": (_STATUS, [_H, _OUT]),
    "pagoda_model_destroy": (None, [_H]),
    "pagoda_model_get_info": (_STATUS, [_H, _p(S.ModelInfo)]),
    "pagoda_model_path_v2": (_STATUS, [_H, POINTER(c_char_p)]),
    # tokenizer.h
    "pagoda_tokenizer_open": (_STATUS, [c_char_p, _OUT]),
    "pagoda_tokenizer_from_model": (_STATUS, [_H, _OUT]),
    "pagoda_tokenizer_destroy": (None, [_H]),
    "pagoda_tokenizer_get_info": (_STATUS, [_H, _p(S.TokenizerInfo)]),
    "pagoda_tokenizer_encode": (_STATUS, [_H, c_char_p, c_size_t, c_uint32,
                                          POINTER(POINTER(c_int32)), POINTER(c_size_t)]),
    "pagoda_tokenizer_decode": (_STATUS, [_H, POINTER(c_int32), c_size_t, c_uint32, _OUT,
                                          POINTER(c_size_t)]),
    "pagoda_tokenizer_token_to_piece": (_STATUS, [_H, c_int32, c_void_p, c_size_t,
                                                  POINTER(c_size_t)]),
    "pagoda_chat_template_options_init": (None, [_p(S.ChatTemplateOptions), c_size_t]),
    "pagoda_tokenizer_apply_chat_template": (_STATUS, [_H, c_char_p,
                                                       _p(S.ChatTemplateOptions), _OUT,
                                                       POINTER(c_size_t)]),
    # mesh.h
    "pagoda_mesh_options_init": (None, [_p(S.MeshOptions), c_size_t]),
    "pagoda_mesh_create": (_STATUS, [_p(S.MeshOptions), _OUT]),
    "pagoda_mesh_destroy": (None, [_H]),
    "pagoda_mesh_device_count_v2": (_STATUS, [_H, POINTER(c_size_t)]),
    "pagoda_mesh_device_name_v2": (_STATUS, [_H, c_size_t, POINTER(c_char_p)]),
    "pagoda_mesh_world": (_STATUS, [_H, POINTER(c_int32), POINTER(c_int32)]),
    # plan.h
    "pagoda_plan_options_init": (None, [_p(S.PlanOptions), c_size_t]),
    "pagoda_plan_create": (_STATUS, [_H, _H, _p(S.PlanOptions), _OUT]),
    "pagoda_plan_create_from_config": (_STATUS, [c_char_p, _p(S.PlanOptions), _OUT]),
    "pagoda_plan_destroy": (None, [_H]),
    "pagoda_plan_to_json": (_STATUS, [_H, _OUT]),
    "pagoda_plan_from_json": (_STATUS, [c_char_p, _OUT]),
    "pagoda_plan_get_summary": (_STATUS, [_H, _p(S.PlanSummary)]),
    "pagoda_plan_get_stage": (_STATUS, [_H, c_size_t, _p(S.PlanStage)]),
    "pagoda_plan_slice_length_v2": (_STATUS, [_H, c_size_t, POINTER(c_int64)]),
    "pagoda_simulate_options_init": (None, [_p(S.SimulateOptions), c_size_t]),
    "pagoda_placement_simulate": (_STATUS, [c_char_p, _p(S.SimulateOptions), _OUT]),
    "pagoda_placement_search": (_STATUS, [c_char_p, _p(S.SimulateOptions), _OUT]),
    "pagoda_cost_profile_options_init": (None, [_p(S.CostProfileOptions), c_size_t]),
    "pagoda_cost_profile": (_STATUS, [c_char_p, c_char_p, _p(S.CostProfileOptions), c_char_p, _OUT]),
    "pagoda_link_profile_options_init": (None, [_p(S.LinkProfileOptions), c_size_t]),
    "pagoda_link_profile": (_STATUS, [c_void_p, _p(S.LinkProfileOptions), c_char_p, _OUT]),
    # kv_cache.h
    "pagoda_kv_cache_options_init": (None, [_p(S.KvCacheOptions), c_size_t]),
    "pagoda_kv_cache_create": (_STATUS, [_H, _H, _H, _p(S.KvCacheOptions), _OUT]),
    "pagoda_kv_cache_destroy": (None, [_H]),
    "pagoda_kv_cache_get_stats": (_STATUS, [_H, _p(S.KvCacheStats)]),
    # engine.h
    "pagoda_engine_options_init": (None, [_p(S.EngineOptions), c_size_t]),
    "pagoda_request_options_init": (None, [_p(S.RequestOptions), c_size_t]),
    "pagoda_engine_create": (_STATUS, [_H, _H, _H, _H, _p(S.EngineOptions), _OUT]),
    "pagoda_engine_destroy": (None, [_H]),
    "pagoda_engine_submit_text": (_STATUS, [_H, c_char_p, c_size_t, _p(S.RequestOptions),
                                            POINTER(c_uint64)]),
    "pagoda_engine_submit_tokens": (_STATUS, [_H, POINTER(c_int32), c_size_t,
                                              _p(S.RequestOptions), POINTER(c_uint64)]),
    "pagoda_engine_abort": (_STATUS, [_H, c_uint64]),
    "pagoda_engine_step": (_STATUS, [_H]),
    "pagoda_engine_follow": (_STATUS, [_H]),
    "pagoda_engine_has_work_v2": (_STATUS, [_H, POINTER(c_int32)]),
    "pagoda_engine_poll": (_STATUS, [_H, _p(S.Output)]),
    "pagoda_engine_poll_batch": (_STATUS, [_H, _p(S.Output), c_size_t, POINTER(c_size_t)]),
    "pagoda_engine_step_poll": (_STATUS, [_H, _p(S.Output), c_size_t, POINTER(c_size_t)]),
    "pagoda_engine_get_stats": (_STATUS, [_H, _p(S.EngineStats)]),
    "pagoda_engine_get_metrics": (_STATUS, [_H, _p(S.EngineMetrics)]),
    "pagoda_engine_device_count_v2": (_STATUS, [_H, POINTER(c_size_t)]),
    "pagoda_engine_get_device_stats": (_STATUS, [_H, c_size_t, _p(S.DeviceStats)]),
    # kernel_choice.h
    "pagoda_engine_kernel_choice_count": (_STATUS, [_H, POINTER(c_size_t)]),
    "pagoda_engine_kernel_choice": (_STATUS, [_H, c_size_t, _p(S.KernelChoiceInfo)]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes

__all__ = ["lib"]
