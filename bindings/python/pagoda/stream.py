"""A request's outputs as they come: text pieces, outputs, or the finished completions."""
from __future__ import annotations

import asyncio
import collections
import dataclasses
from array import array
from typing import TYPE_CHECKING, AsyncIterator, Iterator, Optional

from .errors import ClosedError, NotFoundError, error
from .output import FinishReason, Output, TokenLogprob

if TYPE_CHECKING:
    from .engine import Engine


@dataclasses.dataclass
class Completion:
    """One sequence of a finished request."""
    sequence_index: int
    text: str
    token_ids: list[int]
    finish_reason: FinishReason
    cumulative_logprob: float
    n_prompt_tokens: int
    logprobs: Optional[list[float]] = None  #: per token, when asked
    top_logprobs: Optional[list[list[TokenLogprob]]] = None  #: per token the top-n, when asked
    prompt_logprobs: Optional[list[Optional[float]]] = None  #: per prompt token, when asked
    prompt_top_logprobs: Optional[list[list[TokenLogprob]]] = None
    embedding: Optional[array] = None  #: an embedding request's vector (f32)


class Stream:
    """The outputs of one request, in order. Iterating it yields the new text as it is
    generated (whole characters, never an empty piece); :meth:`outputs` yields every
    :class:`Output` instead (all sequences of an ``n`` > 1 request).

    Iterating drives the engine (one step whenever nothing new has arrived), so no other loop
    is needed; other threads may stream or step the same engine meanwhile. One stream is read
    by one thread at a time. Use it in a ``with`` block: leaving early aborts the request.

    In a coroutine, ``async for piece in stream`` reads it the same way, each wait for the next
    piece on the event loop's default executor (the library releases the GIL while it steps),
    so the loop serves other requests and connections meanwhile.
    """

    def __init__(self, engine: "Engine", request_id: int, box: collections.deque,
                 n_sequences: int):
        self.request_id = request_id
        self.token_ids: list[int] = []  #: tokens generated so far (single-sequence requests)
        self.finish_reason: Optional[FinishReason] = None  #: set once the request ended
        self.finished = False  #: whether the request's last output was read
        self._engine = engine
        self._box = box
        self._n_sequences = n_sequences
        self._closed = False
        self._pieces: Optional[Iterator[str]] = None  # the text generator, made on first use

    def _wait(self) -> bool:
        """Drives the engine until the box has an output; False once the request has ended."""
        box, pump = self._box, self._engine._pump
        while not box:
            if self.finished or self._closed:
                return False
            if pump(box) == 0 and not box and not self._engine.has_work():
                raise RuntimeError(f"request {self.request_id} ended without its last output")
        return True

    def _last(self, o: Output) -> None:
        """Takes note of a sequence's last output; raises the request's error."""
        if o.request_finished:
            self.finished = True
            self.finish_reason = o.finish_reason
        if o.finish_reason == FinishReason.ERROR:
            self.finished = True
            raise error(o.status, o.error)

    def __iter__(self) -> Iterator[str]:
        if self._n_sequences != 1:
            raise ValueError(f"request {self.request_id} has {self._n_sequences} sequences: "
                             "read them with stream.outputs() or stream.completions()")
        if self._pieces is None:
            self._pieces = self._text_pieces()
        return self._pieces

    def __next__(self) -> str:
        return next(iter(self))

    def _next_or_none(self) -> Optional[str]:
        return next(iter(self), None)

    def __aiter__(self) -> AsyncIterator[str]:
        iter(self)  # refuses several sequences here, not on the first await
        return self

    async def __anext__(self) -> str:
        piece = await asyncio.get_running_loop().run_in_executor(None, self._next_or_none)
        if piece is None:
            raise StopAsyncIteration
        return piece

    def _text_pieces(self) -> Iterator[str]:
        # Once per token: a generator (cheaper to resume than a __next__ call) with _wait
        # written out, so that the common case is one pump and one popleft.
        box, pump = self._box, self._engine._pump
        while True:
            while not box:
                if self.finished or self._closed:
                    return
                if pump(box) == 0 and not box and not self._engine.has_work():
                    raise RuntimeError(f"request {self.request_id} ended without its last output")
            if self._closed:  # close() stopped the reading; `box` is the old one
                return
            o = box.popleft()
            if o.finish_reason:
                self._last(o)
            self.token_ids += o.token_ids
            if o.text:
                yield o.text

    def outputs(self) -> Iterator[Output]:
        """Every output of the request, all sequences, until its last."""
        while self._wait():
            o = self._box.popleft()
            if o.finish_reason:
                self._last(o)
            if self._n_sequences == 1:
                self.token_ids += o.token_ids
            yield o

    def completions(self) -> list[Completion]:
        """Reads the request to its end; one :class:`Completion` per sequence, in order."""
        done: dict[int, Completion] = {}
        prompt_lp = prompt_top = None
        for o in self.outputs():
            c = done.get(o.sequence_index)
            if c is None:
                c = done[o.sequence_index] = Completion(
                    o.sequence_index, "", [], FinishReason.NONE, 0.0, o.n_prompt_tokens)
            c.text += o.text
            c.token_ids += o.token_ids
            c.finish_reason = o.finish_reason
            c.cumulative_logprob = o.cumulative_logprob
            if o.logprobs is not None:
                c.logprobs = (c.logprobs or []) + o.logprobs
            if o.top_logprobs is not None:
                c.top_logprobs = (c.top_logprobs or []) + o.top_logprobs
            if o.embedding is not None:
                c.embedding = o.embedding
            if o.prompt_logprobs is not None:  # the request's, on its first output only
                prompt_lp, prompt_top = o.prompt_logprobs, o.prompt_top_logprobs
        result = [done[i] for i in sorted(done)]
        for c in result:
            c.prompt_logprobs, c.prompt_top_logprobs = prompt_lp, prompt_top
        return result

    def text(self) -> str:
        """Reads the rest of a single-sequence request and returns its text."""
        return "".join(self)

    def abort(self) -> None:
        """Ends the request now; the stream then ends with finish reason ABORTED. A request
        that has already ended is left as it is."""
        if self.finished:
            return
        try:
            self._engine.abort(self.request_id)
        except NotFoundError:
            pass  # it ended in the library; its last output is on its way to this stream

    def close(self) -> None:
        """Aborts the request if it is still running and stops reading it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # What is queued, or still routed to the old box, is not read any more.
        self._box.clear()
        self._box = collections.deque()
        if not self.finished:
            try:
                self.abort()
            except ClosedError:
                pass  # the engine is closed, and the request went with it

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit, or an engine closed meanwhile
            pass
