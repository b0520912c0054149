"""Quantizing a GGUF model (``pagoda quantize``): its weight matrices rewritten in one of
GGUF's quantized block types, with llama.cpp's recipes of the same names."""
from __future__ import annotations

import dataclasses
import enum
import os
from typing import Optional

from . import _structs as S
from ._api import lib
from .errors import check
from .model import PathLike, ProgressCallback, _Progress


class QuantType(enum.IntEnum):
    """``pagoda_quant_type_t``."""
    Q8_0 = 0
    Q4_0 = 1
    Q4_K_M = 2
    Q5_K_M = 3
    Q6_K = 4


@dataclasses.dataclass(frozen=True)
class QuantizedType:
    """``pagoda_quantized_type_stats_t``: what one tensor type received."""
    name: str            #: "Q4_K"
    ggml_type: int       #: ggml's type id
    tensors: int
    values: int
    rmse: float          #: root mean squared error of the values as written
    relative_rmse: float  #: rmse over the source values' root mean square


@dataclasses.dataclass(frozen=True)
class QuantizeStats:
    """``pagoda_quantize_stats_t``."""
    input_bytes: int
    output_bytes: int
    tensors_kept: int
    types: list[QuantizedType]


def quantize(input_path: PathLike, output_path: PathLike, type: QuantType = QuantType.Q4_K_M,
             threads: int = 0, progress: Optional[ProgressCallback] = None) -> QuantizeStats:
    """Writes ``output_path``, the GGUF model at ``input_path`` (F32, F16 or BF16 weights) with
    its weight matrices quantized as ``type`` says; ``threads`` 0 uses one per core.
    ``progress(fraction, tensor_name)`` returning ``False`` cancels (CancelledError). The GIL is
    released while it runs."""
    prog = _Progress(progress) if progress is not None else None
    opts = S.options(S.QuantizeOptions, lib.pagoda_quantize_options_init, type=int(type),
                     threads=threads, progress=prog.fn if prog is not None else None)
    stats = S.new(S.QuantizeStats)
    status = lib.pagoda_model_quantize(os.fsencode(input_path), os.fsencode(output_path), opts, stats)
    if prog is not None and prog.error is not None:
        raise prog.error  # the callback's exception, which cancelled the run
    check(status)
    return QuantizeStats(
        stats.input_bytes, stats.output_bytes, stats.tensors_kept,
        [QuantizedType(t.name.decode(), t.ggml_type, t.tensors, t.values, t.rmse, t.relative_rmse)
         for t in stats.types[:stats.n_types]])


__all__ = ["QuantType", "QuantizedType", "QuantizeStats", "quantize"]
