"""A request's logits processor: a Python callable the engine calls on every row the request
samples, before the token is picked, to change the row in place.

It is called as ``processor(request_id, sequence_index, token_ids, n_prompt_tokens, logits)``:
``token_ids`` is a read-only ``memoryview`` of int32 (the prompt, then what the sequence
generated), ``logits`` a writable ``memoryview`` of float32, one per vocabulary token (wrap it
with ``numpy.frombuffer`` if you like), copied back to the engine when the call returns. Both
are Python-owned copies of the C arrays, so a view kept past the call is harmless, but it no
longer reaches the engine.

Threads: it runs on the thread that steps the engine (a stream's iteration, ``step()``), with
the GIL taken back and the engine's lock held: it must not call that engine or its streams,
which would deadlock. It may set ``float("-inf")``, never NaN or +inf. An exception ends the
request with ``FinishReason.ERROR`` and status CANCELLED; the output's ``error`` names it (a
stream raises :class:`~pagoda.errors.CancelledError` with that text). The engine keeps it
until the request's last output has been drained, or until the engine is closed.
"""
from __future__ import annotations

import ctypes
from typing import Callable, Optional

from . import _structs as S

LogitsProcessor = Callable[[int, int, memoryview, int, memoryview], None]
"""``processor(request_id, sequence_index, token_ids, n_prompt_tokens, logits)``."""


def _copy_in(address: Optional[int], count: int, ctype: type) -> ctypes.Array:
    """A Python-owned copy of ``count`` C values at ``address``."""
    copy = (ctype * count)()
    if count and address:
        ctypes.memmove(copy, address, ctypes.sizeof(copy))
    return copy


class LiveProcessor:
    """One submitted request's processor: the callable, the C function pointer wrapping it
    (which must outlive every call C makes through it) and the exception that ended it."""

    __slots__ = ("fn", "c_fn", "failure")

    def __init__(self, fn: LogitsProcessor):
        if not callable(fn):
            raise TypeError(f"logits_processor must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.failure: Optional[BaseException] = None
        self.c_fn = S.LogitsProcessorFn(self._call)

    def _call(self, _user: Optional[int], request_id: int, sequence_index: int,
              token_ids: Optional[int], n_tokens: int, n_prompt_tokens: int,
              logits: Optional[int], n_logits: int) -> int:
        # Nothing may unwind into C: any exception, SystemExit included, ends the request.
        try:
            # Copies, not views of the C arrays, which are valid during the call only: a view
            # the callable kept would point at freed memory. One row is a memmove each way.
            tokens = memoryview(_copy_in(token_ids, n_tokens, ctypes.c_int32)).cast("B")
            row = _copy_in(logits, n_logits, ctypes.c_float)
            # Native formats ("i", "f"), as numpy and array read them (ctypes says "<f").
            self.fn(request_id, sequence_index, tokens.cast("i").toreadonly(), n_prompt_tokens,
                    memoryview(row).cast("B").cast("f"))
            if n_logits and logits:
                ctypes.memmove(logits, row, ctypes.sizeof(row))
        except BaseException as e:  # noqa: B036
            self.failure = e
            return 1
        return 0

    def describe(self) -> str:
        """What ended the request, for its error output."""
        e = self.failure
        return f"{type(e).__name__}: {e}" if e is not None else ""


__all__ = ["LogitsProcessor"]
