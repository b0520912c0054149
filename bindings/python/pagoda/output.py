"""What the engine produces: outputs as polled, and the UTF-8 joining of their text."""
from __future__ import annotations

import codecs
import ctypes
import enum
import struct
from array import array
from typing import NamedTuple, Optional

from . import _structs as S


class FinishReason(enum.IntEnum):
    """``pagoda_finish_reason_t``: why a sequence ended (``NONE`` while it runs)."""
    NONE = 0
    LENGTH = 1       #: max_tokens generated, or the context is full
    STOP_TOKEN = 2   #: an end-of-sequence or stop token id
    STOP_STRING = 3  #: a stop string appeared
    ABORTED = 4      #: Engine.abort()
    ERROR = 5        #: it failed: Output.status and Output.error say why


_FINISH = tuple(FinishReason)  # index -> member without the enum's lookup on the hot path
_RUNNING = FinishReason.NONE


class TokenLogprob(NamedTuple):
    """A token and its log-probability (``pagoda_logprob_t``)."""
    token_id: int
    logprob: float


class Output(NamedTuple):
    """What one sequence of a request produced since its previous output. A tuple of copies:
    nothing here points into the library (a tuple, so that reading one costs one call)."""
    request_id: int           #: the id submit returned
    sequence_index: int       #: which of the request's n sequences (rank, for beams)
    token_ids: list[int]      #: the new tokens
    text: str                 #: their text, whole characters only
    finish_reason: FinishReason  #: NONE while the sequence runs
    status: int               #: the failure's status when finish_reason is ERROR, else 0
    error: str                #: the failure's message when finish_reason is ERROR, else ""
    request_finished: bool    #: the request's very last output (all sequences done)
    n_prompt_tokens: int      #: tokens in the prompt
    n_generated: int          #: tokens this sequence generated so far, these included
    cumulative_logprob: float  #: sum of the sequence's token log-probabilities so far
    logprobs: Optional[list[float]]  #: per new token its logprob (when asked)
    top_logprobs: Optional[list[list[TokenLogprob]]]  #: per new token the top-n (when asked)
    #: per prompt position its token's logprob (None at position 0); first output only
    prompt_logprobs: Optional[list[Optional[float]]]
    prompt_top_logprobs: Optional[list[list[TokenLogprob]]]  #: per prompt position the top-n
    #: an embedding request's pooled vector (f32, the model's hidden size), on its one output
    #: when it finished normally; None otherwise
    embedding: Optional[array]

    @property
    def finished(self) -> bool:
        """Whether this is the sequence's last output."""
        return self.finish_reason != FinishReason.NONE


_new_output = tuple.__new__  # Output from one tuple of its fields, without NamedTuple's __new__


def _top(ptr: ctypes._Pointer, rows: int, k: int) -> list[list[TokenLogprob]]:
    flat = [TokenLogprob(e.token_id, e.logprob) for e in ptr[:rows * k]]
    return [flat[i * k:(i + 1) * k] for i in range(rows)]


class Utf8Joiner:
    """Turns each sequence's text pieces into whole characters.

    The library already cuts text at character boundaries; this keeps the promise on the Python
    side too, so a piece that ends inside a character (bytes from a future library, or a byte
    token) never yields a broken character: the incomplete tail waits for the sequence's next
    piece. The common case costs one ``bytes.decode``.
    """

    def __init__(self) -> None:
        #: (request id, sequence index) -> the incomplete character that sequence ended with
        self.tails: dict[tuple[int, int], bytes] = {}

    def join(self, key: tuple[int, int], raw: bytes, final: bool) -> str:
        tails = self.tails
        if tails and key in tails:
            raw = tails.pop(key) + raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(raw, final)
        tail = decoder.getstate()[0]
        if tail:
            tails[key] = tail
        return text

    def forget(self, key: tuple[int, int]) -> None:
        """Drops what a finished sequence left."""
        self.tails.pop(key, None)


def _unpack_code(ctype: type) -> str:
    """The struct module's code for a ctypes field type (a pointer or a number)."""
    if issubclass(ctype, (ctypes._Pointer, ctypes.c_char_p, ctypes.c_void_p)):
        return "P"
    return ctype._type_  # a number: ctypes names it by the struct module's code


# pagoda_output_t's fields in one struct.unpack_from, far quicker than one ctypes read each (a
# poll per token makes this the binding's hottest code). Derived from the ctypes declaration,
# which tests/test_layout.py checks against the C compiler; native alignment ("@") is the C's.
_OUTPUT = struct.Struct("@" + "".join(_unpack_code(t) for _, t in S.Output._fields_))


def read_output(o: S.Output, view: memoryview, joiner: Utf8Joiner) -> Output:
    """Copies a polled ``pagoda_output_t`` (valid only until the next poll) into an Output;
    ``view`` is a byte view of ``o``. Runs once per token: the common case (a running sequence,
    no log-probabilities) takes the first branch and builds the Output in one call."""
    (_, rid, finish, status, error, _, n, text_p, text_len, lp, top, n_top, n_prompt, n_generated,
     plp, ptop, n_ptop, seq, cumulative, request_finished, emb,
     n_emb) = _OUTPUT.unpack_from(view)
    raw = o.text if text_len else b""
    if len(raw) != text_len:  # a NUL inside the text: copy by length instead
        raw = ctypes.string_at(text_p, text_len)
    ids = [o.token_ids[0]] if n == 1 else o.token_ids[:n] if n else []
    if not (finish or request_finished or lp or top or plp or emb or joiner.tails):
        try:
            return _new_output(Output, (rid, seq, ids, raw.decode(), _RUNNING, 0, "", False,
                                        n_prompt, n_generated, cumulative, None, None, None,
                                        None, None))
        except UnicodeDecodeError:
            pass  # half a character: the joiner keeps it for the next piece
    text = joiner.join((rid, seq), raw, finish != 0)
    if finish:
        joiner.forget((rid, seq))
        message = o.error.decode("utf-8", "replace") if error else ""
    else:
        status, message = 0, ""
    prompt_lps = prompt_top = embedding = None
    if emb:  # valid until the next poll only: copied now, in one piece
        embedding = array("f")
        embedding.frombytes(ctypes.string_at(emb, n_emb * embedding.itemsize))
    if plp:
        prompt_lps = [None] + o.prompt_logprobs[1:n_prompt] if n_prompt else []
        if ptop and n_prompt:
            prompt_top = [[]] + _top(o.prompt_top_logprobs, n_prompt, n_ptop)[1:]
    return _new_output(Output, (
        rid, seq, ids, text, _FINISH[finish] if finish < len(_FINISH) else finish, status,
        message, request_finished != 0, n_prompt, n_generated, cumulative,
        o.logprobs[:n] if lp else None, _top(o.top_logprobs, n, n_top) if top else None,
        prompt_lps, prompt_top, embedding))
