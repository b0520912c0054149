"""Request and engine options: Python fields in, the C structs out.

A field left ``None`` keeps the library's default (the C ``_init`` function fills the struct
first), so this binding never restates a default that the library may change.
"""
from __future__ import annotations

import ctypes
import dataclasses
import enum
import json
import os
from typing import Any, Mapping, Optional, Sequence, TypeVar, Union

from . import _structs as S
from ._api import lib
from .logits_processor import LogitsProcessor

T = TypeVar("T")

REQUEST_IGNORE_EOS = 1
REQUEST_KEEP_SPECIAL_TEXT = 2
REQUEST_INCLUDE_STOP_STRING = 4
REQUEST_NO_SPECIAL_TOKENS = 8
REQUEST_FRESH_SEED = 16
REQUEST_EMBED = 32


class ConstraintKind(enum.IntEnum):
    """``pagoda_constraint_kind_t`` (constraint.h): what a request's constraint text is."""
    NONE = 0
    GRAMMAR = 1      #: GBNF text (llama.cpp's format)
    REGEX = 2        #: a regular expression the whole output matches
    JSON_SCHEMA = 3  #: a JSON Schema's JSON text
    JSON_OBJECT = 4  #: any JSON object; no text


class Pooling(enum.IntEnum):
    """``pagoda_pooling_t``: how an embedding request pools its prompt's hidden states."""
    #: the checkpoint's own (its sentence-transformers modules.json or GGUF pooling type); LAST
    #: for a plain decoder. One the engine does not do raises UnsupportedError at submit.
    MODEL = 0
    LAST = 1   #: the last prompt token's state, the only one that has seen the whole prompt
    MEAN = 2   #: the mean of every prompt token's state


class EmbeddingNormalize(enum.IntEnum):
    """``pagoda_embedding_normalize_t``: whether an embedding is scaled to unit length."""
    MODEL = 0  #: the checkpoint's own rule; L2 unless a modules.json lists no Normalize
    L2 = 1     #: divided by its L2 norm
    NONE = 2   #: as pooled


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
    penalties, no logprobs, n = 1, no beam search, priority 0. ``seed=None`` draws a fresh seed
    from the operating system per request (``PAGODA_REQUEST_FRESH_SEED``); a given seed
    repeats.

    At most one constraint: ``grammar=`` (GBNF), ``regex=`` (the whole output matches),
    ``json_schema=`` (a dict, dumped keeping its key order, which is the order the properties are
    written in; or its JSON text) or ``json_object=True`` (any JSON object). The library compiles
    it at submit, raising :class:`InvalidArgumentError` with the construct at fault, and the
    sequence ends (``FinishReason.STOP_TOKEN``) when nothing more may follow.

    ``embed=True`` makes an embedding request (``PAGODA_REQUEST_EMBED``; :meth:`Engine.embed`
    is the short way): nothing is generated, and its one output carries the prompt's pooled
    hidden state as ``Output.embedding``. ``pooling`` is a :class:`Pooling` or its name
    (``"last"``, ``"mean"``, ``"model"``); ``normalize`` True scales the vector to unit L2
    norm, False leaves it as pooled, ``None`` keeps the checkpoint's rule (L2 for a plain
    decoder). The library refuses an embedding request with what has no meaning without
    generation (``n`` above 1, beams, logprobs, stop lists, logit controls, a constraint),
    naming the field, and ``pooling`` or ``normalize`` without ``embed``."""
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
    logit_bias: Mapping[int, float] = dataclasses.field(default_factory=dict)  #: id -> [-100, 100]
    min_tokens: Optional[int] = None        #: EOS and stop ids masked until this many tokens
    bad_words: Sequence[Sequence[int]] = ()  #: token-id sequences that may not be completed
    allowed_token_ids: Sequence[int] = ()   #: only these ids may be sampled (empty: all)
    #: changes each row of logits in place before the token is picked (see
    #: :mod:`pagoda.logits_processor` for its thread and lifetime rules); set in C at submit
    logits_processor: Optional[LogitsProcessor] = None
    grammar: Optional[str] = None           #: GBNF the output must follow
    regex: Optional[str] = None             #: a regular expression the whole output matches
    json_schema: Union[None, str, Mapping[str, Any]] = None  #: a JSON Schema (dict or JSON text)
    json_object: bool = False               #: the output is any JSON object
    embed: bool = False                     #: an embedding request: no generation
    pooling: Union[None, str, Pooling] = None  #: with embed: LAST, MEAN or MODEL (default)
    #: with embed: unit L2 norm (True), as pooled (False), or an EmbeddingNormalize
    normalize: Union[None, bool, EmbeddingNormalize] = None

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
                      priority=self.priority, min_tokens=self.min_tokens)
        c.flags |= ((REQUEST_IGNORE_EOS if self.ignore_eos else 0)
                    | (REQUEST_KEEP_SPECIAL_TEXT if self.keep_special_text else 0)
                    | (REQUEST_INCLUDE_STOP_STRING if self.include_stop_string else 0)
                    | (REQUEST_NO_SPECIAL_TOKENS if self.no_special_tokens else 0)
                    | (REQUEST_FRESH_SEED if self.seed is None else 0)
                    | (REQUEST_EMBED if self.embed else 0))
        keep: list[Any] = []
        self._controls_to_c(c, keep)
        self._constraint_to_c(c, keep)
        self._embedding_to_c(c)
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

    def _controls_to_c(self, c: S.RequestOptions, keep: list[Any]) -> None:
        """logit_bias, bad_words and allowed_token_ids into `c`, their arrays into `keep`."""
        if self.logit_bias:
            bias = (S.LogitBias * len(self.logit_bias))()
            for entry, (token, value) in zip(bias, self.logit_bias.items()):
                S.assign(entry, token_id=int(token), bias=float(value))
            c.logit_bias = bias
            c.n_logit_bias = len(bias)
            keep.append(bias)
        if self.bad_words:
            if any(isinstance(w, (str, bytes)) for w in self.bad_words):
                raise TypeError("bad_words holds token-id sequences, not strings")
            ids = S.int32_array([t for w in self.bad_words for t in w], "bad_words")
            lengths = (ctypes.c_size_t * len(self.bad_words))(*[len(w) for w in self.bad_words])
            c.bad_words_token_ids = ids
            c.bad_words_lengths = lengths
            c.n_bad_words = len(lengths)
            keep += [ids, lengths]
        if self.allowed_token_ids:
            allowed = S.int32_array(self.allowed_token_ids, "allowed_token_ids")
            c.allowed_token_ids = allowed
            c.n_allowed_token_ids = len(allowed)
            keep.append(allowed)

    def constraint(self) -> tuple[ConstraintKind, Optional[str]]:
        """The one constraint asked for as (kind, text); ``(NONE, None)`` when none is."""
        given = [(name, kind, value) for name, kind, value in (
            ("grammar", ConstraintKind.GRAMMAR, self.grammar),
            ("regex", ConstraintKind.REGEX, self.regex),
            ("json_schema", ConstraintKind.JSON_SCHEMA, self.json_schema),
            ("json_object", ConstraintKind.JSON_OBJECT, self.json_object or None))
            if value is not None]
        if len(given) > 1:
            names = " and ".join(f"{name}=" for name, _, _ in given)
            raise ValueError(f"a request takes one constraint, got {names}")
        if not given:
            return ConstraintKind.NONE, None
        name, kind, value = given[0]
        if kind == ConstraintKind.JSON_OBJECT:
            return kind, None
        if kind == ConstraintKind.JSON_SCHEMA and isinstance(value, Mapping):
            value = json.dumps(value)  # dicts keep their insertion order; sort_keys is off
        if not isinstance(value, str):
            raise TypeError(f"{name}= takes a {'dict or ' if name == 'json_schema' else ''}str, "
                            f"not {type(value).__name__}")
        if "\0" in value:
            raise ValueError(f"{name}= holds a NUL byte, which would cut the text C reads")
        return kind, value

    def _constraint_to_c(self, c: S.RequestOptions, keep: list[Any]) -> None:
        """The constraint into `c`, its text into `keep` (the library copies it at submit)."""
        kind, text = self.constraint()
        c.constraint_kind = int(kind)
        if text is not None:
            encoded = text.encode("utf-8")
            c.constraint = encoded
            keep.append(encoded)

    def _embedding_to_c(self, c: S.RequestOptions) -> None:
        """pooling and normalize into `c`. Given without ``embed`` they are passed on all the
        same, for the library to refuse by name (it wants 0 without the flag)."""
        pooling = self.pooling
        if isinstance(pooling, str) and not isinstance(pooling, Pooling):
            try:
                pooling = Pooling[pooling.upper()]
            except KeyError:
                names = ", ".join(repr(p.name.lower()) for p in Pooling)
                raise ValueError(f"pooling={self.pooling!r} is not one of {names}") from None
        if pooling is not None:
            c.pooling = int(pooling)
        normalize = self.normalize
        if normalize is not None and not isinstance(normalize, EmbeddingNormalize):
            # Not bool(): EmbeddingNormalize.NONE is 2, which is true.
            normalize = EmbeddingNormalize.L2 if normalize else EmbeddingNormalize.NONE
        if normalize is not None:
            c.embedding_normalize = int(normalize)


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
