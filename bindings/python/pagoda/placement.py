"""Multi-model placement (AlpaServe): simulate serving on a placement, or search for one."""
from __future__ import annotations

import ctypes
import json
from typing import Any, Optional, Union

from . import _structs as S
from ._api import lib
from .errors import check


def _options(rate_per_model: Optional[float], total_rate: Optional[float],
             cv: Optional[float], slo_seconds: Optional[float],
             duration_seconds: Optional[float], seed: Optional[int],
             overhead_seconds: Optional[float], reject_late: Optional[bool]) -> S.SimulateOptions:
    opts = S.SimulateOptions()
    lib.pagoda_simulate_options_init(ctypes.byref(opts), ctypes.sizeof(opts))
    S.assign(opts, rate_per_model=rate_per_model, total_rate=total_rate, cv=cv,
             slo_seconds=slo_seconds, duration_seconds=duration_seconds, seed=seed,
             overhead_seconds=overhead_seconds, reject_late=reject_late)
    return opts


def _call_json(fn: Any, spec: Union[str, dict], opts: S.SimulateOptions) -> dict:
    text = spec if isinstance(spec, str) else json.dumps(spec)
    out = ctypes.c_void_p()
    check(fn(text.encode("utf-8"), ctypes.byref(opts), ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.pagoda_free(out)


def simulate_placement(placement: Union[str, dict], *, rate_per_model: Optional[float] = None,
                       total_rate: Optional[float] = None, cv: Optional[float] = None,
                       slo_seconds: Optional[float] = None,
                       duration_seconds: Optional[float] = None, seed: Optional[int] = None,
                       overhead_seconds: Optional[float] = None,
                       reject_late: Optional[bool] = None) -> dict:
    """Simulates Gamma-distributed requests on ``placement`` (a dict or its JSON, schema in
    plan.h) and returns the result object (``slo_attainment``, ``latency``, ...). Options left
    ``None`` take the library's defaults (1 request/s per model, CV 1, an hour, seed 1)."""
    return _call_json(lib.pagoda_placement_simulate, placement,
                      _options(rate_per_model, total_rate, cv, slo_seconds, duration_seconds,
                               seed, overhead_seconds, reject_late))


def search_placement(spec: Union[str, dict], *, rate_per_model: Optional[float] = None,
                     total_rate: Optional[float] = None, cv: Optional[float] = None,
                     slo_seconds: Optional[float] = None,
                     duration_seconds: Optional[float] = None, seed: Optional[int] = None,
                     overhead_seconds: Optional[float] = None,
                     reject_late: Optional[bool] = None) -> dict:
    """Searches for a placement of several models on a cluster (``spec`` as plan.h describes);
    the options describe the workload it is scored on. Returns the placement object."""
    return _call_json(lib.pagoda_placement_search, spec,
                      _options(rate_per_model, total_rate, cv, slo_seconds, duration_seconds,
                               seed, overhead_seconds, reject_late))
