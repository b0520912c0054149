"""Request and engine options: Python fields in, the C structs out.

A field left ``None`` keeps the library's default (the C ``_init`` function fills the struct
first), so this binding never restates a default that the library may change.
"""
from __future__ import annotations

import ctypes
import dataclasses
import enum
import os
from typing import Any, Optional, Sequence, TypeVar, Union

from . import _structs as S
from ._api import lib

T = TypeVar("T")

REQUEST_IGNORE_EOS = 1
REQUEST_KEEP_SPECIAL_TEXT = 2
REQUEST_INCLUDE_STOP_STRING = 4
REQUEST_NO_SPECIAL_TOKENS = 8


class Preemption(enum.IntEnum):
    """``pagoda_preemption_t``: what frees KV blocks when none are left."""
    AUTO = 0
    RECOMPUTE = 1
    SWAP = 2


class KvReservation(enum.IntEnum):
    """``pagoda_kv_reservation_t``: how KV memory is lent to requests."""
    PAGED = 0
    CONTIGUOUS = 1


class DecodeGraphs(enum.IntEnum):
    """``pagoda_decode_graphs_t``: whether decode steps replay recorded graphs."""
    AUTO = 0
    ON = 1
    OFF = 2


class DeviceSampling(enum.IntEnum):
    """``pagoda_device_sampling_t``: where tokens are picked."""
    AUTO = 0
    ON = 1
    OFF = 2


class QuantizedMatmul(enum.IntEnum):
    """``pagoda_quantized_matmul_t``: whether products on block-quantized weights may round
    their operands (8-bit activations; on a GPU, f16 activations and weights)."""
    AUTO = 0
    EXACT = 1


class KernelChoice(enum.IntEnum):
    """``pagoda_kernel_choice_t`` (kernel_choice.h): how the engine picks among a backend's
    kernels for each matrix product."""
    FILE = 0     #: the file's choices where it has them, the backend's rules elsewhere
    MEASURE = 1  #: as FILE, and the shapes the file lacks measured at creation (and written)
    RULES = 2    #: the backend's built-in rules everywhere; no file is read


@dataclasses.dataclass
class RequestOptions:
    """A request's sampling and stopping (``pagoda_request_options_t``). ``None`` keeps the
    library's default: 256 tokens, temperature 1 (0 is greedy), no top-k/top-p/min-p cut, no
    penalties, seed 0, no logprobs, n = 1, no beam search, priority 0."""
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    min_p: Optional[float] = None
    repetition_penalty: Optional[float] = None
    presence_penalty: Optional[float] = None
    frequency_penalty: Optional[float] = None
    seed: Optional[int] = None
    stop_token_ids: Sequence[int] = ()      #: extra ids that end the request
    stop_strings: Sequence[str] = ()        #: texts that end the request
    logprobs: Optional[int] = None          #: top-n per generated token; 0 = the chosen one's only
    prompt_logprobs: Optional[int] = None   #: per prompt token, its logprob and the top-n
    n: Optional[int] = None                 #: sequences to return
    best_of: Optional[int] = None           #: sequences to generate, the best n returned
    beam_width: Optional[int] = None        #: > 0: beam search of this width
    length_penalty: Optional[float] = None  #: beam score = logprob / length ** this
    early_stopping: Optional[bool] = None   #: beam search stops at beam_width hypotheses done
    priority: Optional[int] = None          #: lower runs first among waiting requests
    ignore_eos: bool = False                #: generate past end-of-sequence tokens
    keep_special_text: bool = False         #: keep special tokens in the text
    include_stop_string: bool = False       #: end the text with the stop string that matched
    no_special_tokens: bool = False         #: do not add BOS (or template tokens) to a text prompt

    def sequences(self) -> int:
        """How many sequences the request returns (``n``, default 1)."""
        return self.n if self.n is not None else 1

    def to_c(self) -> tuple[S.RequestOptions, list[Any]]:
        """The C struct, and the arrays it points into (keep them until the call returns)."""
        c = S.options(S.RequestOptions, lib.pagoda_request_options_init,
                      max_tokens=self.max_tokens, temperature=self.temperature,
                      top_k=self.top_k, top_p=self.top_p, min_p=self.min_p,
                      repetition_penalty=self.repetition_penalty,
                      presence_penalty=self.presence_penalty,
                      frequency_penalty=self.frequency_penalty, seed=self.seed,
                      logprobs=self.logprobs, prompt_logprobs=self.prompt_logprobs, n=self.n,
                      best_of=self.best_of, beam_width=self.beam_width,
                      length_penalty=self.length_penalty, early_stopping=self.early_stopping,
                      priority=self.priority)
        c.flags |= ((REQUEST_IGNORE_EOS if self.ignore_eos else 0)
                    | (REQUEST_KEEP_SPECIAL_TEXT if self.keep_special_text else 0)
                    | (REQUEST_INCLUDE_STOP_STRING if self.include_stop_string else 0)
                    | (REQUEST_NO_SPECIAL_TOKENS if self.no_special_tokens else 0))
        keep: list[Any] = []
        if isinstance(self.stop_strings, str):
            raise TypeError("stop_strings is a sequence of strings, not one string")
        if self.stop_token_ids:
            ids = S.int32_array(self.stop_token_ids, "stop_token_ids")
            c.stop_token_ids = ids
            c.n_stop_token_ids = len(ids)
            keep.append(ids)
        if self.stop_strings:
            encoded = [s.encode("utf-8") for s in self.stop_strings]
            strings = (ctypes.c_char_p * len(encoded))(*encoded)
            c.stop_strings = strings
            c.n_stop_strings = len(encoded)
            keep += [strings, encoded]
        return c, keep


@dataclasses.dataclass
class EngineOptions:
    """How the engine batches (``pagoda_engine_options_t``); ``None`` keeps the library's
    default: 256 sequences and 2048 tokens per step, AUTO preemption, paged KV, AUTO graphs
    and device sampling, activations chosen per device, micro-batches per stage, rounded
    operands on block-quantized weights where the backend takes them (AUTO), no kernel choice
    file (the backend's rules, FILE)."""
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    preemption: Optional[Preemption] = None
    kv_reservation: Optional[KvReservation] = None
    decode_graphs: Optional[DecodeGraphs] = None
    device_sampling: Optional[DeviceSampling] = None
    activation_dtype: Optional[int] = None  #: a DType: F32, BF16 or F16
    pipeline_micro_batches: Optional[int] = None
    quantized_matmul: Optional[QuantizedMatmul] = None
    #: a kernel choice file (``pagoda tune`` writes one); read when the engine is created
    kernel_choices_file: Optional[Union[str, "os.PathLike[str]"]] = None
    kernel_choice: Optional[KernelChoice] = None

    def to_c(self) -> S.EngineOptions:
        """The C struct; it holds the path's bytes (ctypes keeps them with it), so keep it
        until the create call returns."""
        fields = dataclasses.asdict(self)
        if self.kernel_choices_file is not None:
            fields["kernel_choices_file"] = os.fsdecode(self.kernel_choices_file)
        return S.options(S.EngineOptions, lib.pagoda_engine_options_init, **fields)


def resolve(cls: type[T], options: Optional[T], kwargs: dict) -> T:
    """``options``, or ``cls(**kwargs)`` (which refuses a misspelt field): for the calls that take
    an options object or its fields as keyword arguments."""
    if options is not None and kwargs:
        raise TypeError("give options or keyword arguments, not both")
    return options if options is not None else cls(**kwargs)
