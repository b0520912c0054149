"""Multi-model placement (AlpaServe): simulate serving on a placement, search for one, and
measure the layer costs and the links between devices that a search and a plan price with."""
from __future__ import annotations

import ctypes
import dataclasses
import json
from typing import Any, Optional, Union

from . import _structs as S
from ._api import lib
from ._handle import Handle
from .errors import check
from .options import resolve


@dataclasses.dataclass
class SimulateOptions:
    """The simulated workload (``pagoda_simulate_options_t``); ``None`` keeps the library's
    default: 1 request/s per model, CV 1, an hour, seed 1 (plan.h says each)."""
    rate_per_model: Optional[float] = None
    total_rate: Optional[float] = None
    cv: Optional[float] = None
    slo_seconds: Optional[float] = None
    duration_seconds: Optional[float] = None
    seed: Optional[int] = None
    overhead_seconds: Optional[float] = None
    reject_late: Optional[bool] = None

    def to_c(self) -> S.SimulateOptions:
        return S.options(S.SimulateOptions, lib.pagoda_simulate_options_init,
                         **dataclasses.asdict(self))


def _call_json(fn: Any, spec: Union[str, dict], options: Optional[SimulateOptions],
               kwargs: dict) -> dict:
    opts = resolve(SimulateOptions, options, kwargs).to_c()
    text = spec if isinstance(spec, str) else json.dumps(spec)
    out = ctypes.c_void_p()
    check(fn(text.encode("utf-8"), ctypes.byref(opts), ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.pagoda_free(out)


def simulate_placement(placement: Union[str, dict], options: Optional[SimulateOptions] = None,
                       **kwargs: Any) -> dict:
    """Simulates Gamma-distributed requests on ``placement`` (a dict or its JSON, schema in
    plan.h) and returns the result object (``slo_attainment``, ``latency``, ...). ``options``
    or keyword arguments set :class:`SimulateOptions` fields."""
    return _call_json(lib.pagoda_placement_simulate, placement, options, kwargs)


def search_placement(spec: Union[str, dict], options: Optional[SimulateOptions] = None,
                     **kwargs: Any) -> dict:
    """Searches for a placement of several models on a cluster (``spec`` as plan.h describes);
    ``options`` or keyword arguments (:class:`SimulateOptions` fields) describe the workload it
    is scored on. Returns the placement object."""
    return _call_json(lib.pagoda_placement_search, spec, options, kwargs)


@dataclasses.dataclass
class CostProfileOptions:
    """How :func:`profile_costs` times (``pagoda_cost_profile_options_t``); ``None`` keeps the
    library's default (plan.h says each)."""
    max_tokens: Optional[int] = None
    granularity: Optional[int] = None
    grid: Optional[int] = None
    repeats: Optional[int] = None
    beside: Optional[str] = None

    def to_c(self) -> S.CostProfileOptions:
        return S.options(S.CostProfileOptions, lib.pagoda_cost_profile_options_init,
                         **dataclasses.asdict(self))


def profile_costs(model_path: str, cost_file: str, device: str = "cpu:0",
                  options: Optional[CostProfileOptions] = None, **kwargs: Any) -> dict:
    """Times the model's decoder layers on ``device`` (``"cpu:0"``, or a group such as
    ``"cpu:0-1"`` timed as one tensor-parallel stage) and adds the entry to ``cost_file`` (which
    ``search_placement``'s ``"costs"`` and plan options read); returns the entry.
    ``options`` or keyword arguments set :class:`CostProfileOptions` fields."""
    opts = resolve(CostProfileOptions, options, kwargs)
    raw = opts.to_c()  # holds the encoded `beside` while the call runs
    out = ctypes.c_void_p()
    check(lib.pagoda_cost_profile(model_path.encode("utf-8"), device.encode("utf-8"),
                                  ctypes.byref(raw), cost_file.encode("utf-8"), ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.pagoda_free(out)


@dataclasses.dataclass
class LinkProfileOptions:
    """How :func:`profile_links` times (``pagoda_link_profile_options_t``); ``None`` keeps the
    library's default: 4 KiB to 8 MiB, 10 rounds over the sizes (plan.h says each)."""
    min_bytes: Optional[int] = None
    max_bytes: Optional[int] = None
    repeats: Optional[int] = None

    def to_c(self) -> S.LinkProfileOptions:
        return S.options(S.LinkProfileOptions, lib.pagoda_link_profile_options_init,
                         **dataclasses.asdict(self))


def profile_links(mesh: Handle, cost_file: Optional[str] = None,
                  options: Optional[LinkProfileOptions] = None, **kwargs: Any) -> list:
    """Times the links between ``mesh``'s devices (a two-device all-reduce and a ping-pong per
    path: within a process, within a machine, across machines) and, on rank 0, adds them to
    ``cost_file`` when given; returns the links. Over several processes every rank calls it
    at the same point. ``options`` or keyword arguments set :class:`LinkProfileOptions`
    fields."""
    raw = resolve(LinkProfileOptions, options, kwargs).to_c()
    out = ctypes.c_void_p()
    mesh._call(lib.pagoda_link_profile, ctypes.byref(raw),
               cost_file.encode("utf-8") if cost_file is not None else None, ctypes.byref(out))
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.pagoda_free(out)
