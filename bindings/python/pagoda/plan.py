"""Plans: where each layer of a model runs on a mesh, and how a long prompt is sliced."""
from __future__ import annotations

import ctypes
import dataclasses
import enum
import os
from typing import Any, Optional, Union

from . import _structs as S
from ._api import lib
from ._handle import Handle, using
from ._records import snapshot
from .errors import check
from .options import resolve


class PlanObjective(enum.IntEnum):
    """``pagoda_plan_objective_t``: what the stage partition minimises."""
    LATENCY = 0     #: one batch through the pipeline: sum of stage times
    THROUGHPUT = 1  #: B micro-batches: sum + (B - 1) * max


@dataclasses.dataclass(frozen=True)
class PlanStage:
    """``pagoda_plan_stage_t``: one pipeline stage."""
    first_layer: int
    end_layer: int
    nodes: int
    devices: int
    tensor_parallel: int
    has_embedding: int
    has_head: int
    seconds: float
    memory_bytes: float
    expert_parallel: int  #: groups of its devices the stage's experts split into; 1 if dense


@dataclasses.dataclass(frozen=True)
class PlanSummary:
    """``pagoda_plan_summary_t``: a plan's predicted totals."""
    n_stages: int
    latency_seconds: float
    max_stage_seconds: float
    throughput_per_second: float
    objective_seconds: float
    n_slices: int
    sliced_prefill_seconds: float
    uniform_prefill_seconds: float


@dataclasses.dataclass
class PlanOptions:
    """The planner's options (``pagoda_plan_options_t``); ``None`` keeps the library's default:
    latency objective, the planner's choice of stages, tensor and expert parallelism, the
    ``"cpu"`` preset, analytic costs, 2048 step tokens, no slicing, granularity 8, exact search
    (plan.h says each)."""
    objective: Optional[PlanObjective] = None
    micro_batches: Optional[int] = None
    stages: Optional[int] = None
    tensor_parallel: Optional[int] = None
    device: Optional[str] = None
    cost_file: Optional[Union[str, "os.PathLike[str]"]] = None
    mesh_shape: Optional[str] = None  #: ``"NxM"``: plan for that shape rather than a mesh
    step_tokens: Optional[int] = None
    context_tokens: Optional[int] = None
    kv_tokens: Optional[int] = None
    prompt_tokens: Optional[int] = None
    granularity: Optional[int] = None
    epsilon_seconds: Optional[float] = None
    #: every stage splits a mixture of experts' experts into this many groups of its devices
    #: (the mesh's ``ep`` axis); 0 or ``None`` = the planner's choice; 0 or 1 for a dense model
    expert_parallel: Optional[int] = None

    def to_c(self) -> S.PlanOptions:
        fields = dataclasses.asdict(self)
        if self.cost_file is not None:
            fields["cost_file"] = os.fsdecode(self.cost_file)
        return S.options(S.PlanOptions, lib.pagoda_plan_options_init, **fields)


class Plan(Handle):
    """A plan: made by the planner (:meth:`create`, :meth:`from_config`) or read from JSON
    (:meth:`from_json`); inspect it with :meth:`summary`, :meth:`stages`, :meth:`to_json`.
    The planner's options are :class:`PlanOptions` fields."""

    _kind = "plan"

    def __init__(self, ptr: int):
        """Adopts a C plan; use the class methods to make one."""
        super().__init__(ptr, lib.pagoda_plan_destroy)

    @classmethod
    def create(cls, model: Handle, mesh: Optional[Handle] = None,
               options: Optional[PlanOptions] = None, **kwargs: Any) -> "Plan":
        """Plans ``model`` on ``mesh`` (or on ``mesh_shape``, ``"NxM"``, without a mesh);
        ``options`` or keyword arguments set :class:`PlanOptions` fields."""
        opts = resolve(PlanOptions, options, kwargs).to_c()
        out = ctypes.c_void_p()
        with using(model, mesh) as (m, me):
            check(lib.pagoda_plan_create(m, me, ctypes.byref(opts), ctypes.byref(out)))
        return cls(out.value)

    @classmethod
    def from_config(cls, config_path: Union[str, "os.PathLike[str]"], *, mesh_shape: str,
                    **kwargs: Any) -> "Plan":
        """Plans a model from its Hugging Face ``config.json`` alone, on ``mesh_shape``; keyword
        arguments set the other :class:`PlanOptions` fields."""
        opts = PlanOptions(mesh_shape=mesh_shape, **kwargs).to_c()
        out = ctypes.c_void_p()
        check(lib.pagoda_plan_create_from_config(os.fsencode(config_path), ctypes.byref(opts),
                                                 ctypes.byref(out)))
        return cls(out.value)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        """Reads a plan written by :meth:`to_json`."""
        out = ctypes.c_void_p()
        check(lib.pagoda_plan_from_json(text.encode("utf-8"), ctypes.byref(out)))
        return cls(out.value)

    def to_json(self) -> str:
        """The plan as JSON (plan.h documents the schema)."""
        text = ctypes.c_void_p()
        self._call(lib.pagoda_plan_to_json, ctypes.byref(text))
        try:
            return ctypes.string_at(text.value).decode("utf-8")
        finally:
            lib.pagoda_free(text)

    def summary(self) -> PlanSummary:
        """The predicted totals."""
        s = S.new(S.PlanSummary)
        self._call(lib.pagoda_plan_get_summary, ctypes.byref(s))
        return snapshot(PlanSummary, s)

    def stage(self, index: int) -> PlanStage:
        """Stage ``index`` (0 ≤ index < summary().n_stages)."""
        s = S.new(S.PlanStage)
        self._call(lib.pagoda_plan_get_stage, index, ctypes.byref(s))
        return snapshot(PlanStage, s)

    def stages(self) -> list[PlanStage]:
        """Every stage, in pipeline order."""
        return [self.stage(i) for i in range(self.summary().n_stages)]

    def slice_lengths(self) -> list[int]:
        """The prompt slices' lengths in tokens (empty when no prompt length was planned)."""
        lengths = []
        n = ctypes.c_int64()
        for i in range(self.summary().n_slices):
            self._call(lib.pagoda_plan_slice_length_v2, i, ctypes.byref(n))
            lengths.append(n.value)
        return lengths
