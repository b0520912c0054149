"""The engine: continuous batching of many requests over a model and a paged KV cache."""
from __future__ import annotations

import collections
import ctypes
import threading
from array import array
from typing import Any, Optional, Sequence, Union

from . import _structs as S
from ._api import lib
from ._handle import Handle, using
from ._records import snapshot
from .errors import ClosedError, Status, check, error, last_error_message
from .kv_cache import KvCache
from .logits_processor import LiveProcessor
from .mesh import Mesh
from .model import Model
from .options import EmbeddingNormalize, EngineOptions, Pooling, RequestOptions, resolve
from .output import FinishReason, Output, Utf8Joiner, read_output
from .plan import Plan
from .stats import DeviceStats, EngineMetrics, EngineStats, KernelChoiceInfo, metrics_from_c
from .stream import Completion, Stream

Prompt = Union[str, Sequence[int]]

_EMPTY = int(Status.EMPTY)
_poll_batch_fn = lib.pagoda_engine_poll_batch
_step_poll_fn = lib.pagoda_engine_step_poll
_BATCH = 32  # outputs one call takes at most: a step and its outputs in one call into the library


class Engine(Handle):
    """Serves requests over a model, a mesh and a KV cache.

    Threads: :meth:`submit`, :meth:`abort`, :meth:`poll`, the statistics and every
    :class:`Stream` may be used from any thread; :meth:`step` may be too (the binding lets one
    step run at a time, as the library requires). A stream drives the engine itself: iterating
    it steps the engine until its request has new text, routing other requests' outputs to their
    own streams (or to :meth:`poll`).

    The engine keeps the model, mesh, plan and cache alive: their objects may be closed first.
    """

    _kind = "engine"

    def __init__(self, model: Model, mesh: Mesh, cache: KvCache,
                 options: Optional[EngineOptions] = None, *, plan: Optional[Plan] = None,
                 **kwargs: Any):
        """Makes an engine; ``options`` or keyword arguments set :class:`EngineOptions`
        fields (``max_num_seqs=8``). ``plan`` ``None`` runs the cache's layout."""
        c_opts = resolve(EngineOptions, options, kwargs).to_c()
        # The library runs one step at a time. A step (or a stream's pump) holds this lock
        # rather than registering as a user of the handle, one lock less per token; close()
        # takes it, so the handle never goes while a step runs.
        self._step_lock = threading.Lock()
        out = ctypes.c_void_p()
        with using(model, mesh, plan, cache) as (m, me, p, c):
            check(lib.pagoda_engine_create(m, me, p, c, ctypes.byref(c_opts), ctypes.byref(out)))
        # The logits processors of live requests by request id: request.h wants each alive
        # until its request's last output, so _drain drops it then, or the engine's destroy.
        processors: dict[int, LiveProcessor] = {}
        self._processors = processors

        def destroy(ptr: int) -> None:
            lib.pagoda_engine_destroy(ptr)
            processors.clear()  # C calls none of them any more

        super().__init__(out.value, destroy)
        # Outputs are polled into preallocated structs, copied out at once and routed to the
        # stream that owns their request (or to poll()). The move lock is held while outputs
        # move from the library to those queues, by a step with them, so they arrive in the
        # library's order; stream() holds it from submit until the new request's stream is
        # registered, so none of its outputs is routed first. Lock order: step, then move.
        self._move_lock = threading.Lock()
        self._slot = _OutputSlot()
        self._joiner = Utf8Joiner()
        self._boxes: dict[int, collections.deque] = {}  # request id -> its stream's outputs
        self._unclaimed: collections.deque = collections.deque()  # outputs for poll()

    # ---- requests ---------------------------------------------------------------------------

    def _submit_locked(self, ptr: int, prompt: Prompt, options: RequestOptions) -> int:
        """Submits with the handle entered; with a logits processor, the caller holds the move
        lock, so that no output of the request is drained before the processor is kept."""
        c_opts, keep = options.to_c()
        live = None
        if options.logits_processor is not None:
            live = LiveProcessor(options.logits_processor)
            c_opts.logits_processor = live.c_fn
        request_id = ctypes.c_uint64()
        if isinstance(prompt, (bytes, bytearray)):
            raise TypeError("a prompt is a str or a sequence of token ids, not bytes")
        if isinstance(prompt, str):
            data = prompt.encode("utf-8")
            status = lib.pagoda_engine_submit_text(ptr, data, len(data), ctypes.byref(c_opts),
                                                   ctypes.byref(request_id))
        else:
            ids = S.int32_array(prompt, "prompt")
            status = lib.pagoda_engine_submit_tokens(ptr, ids, len(ids), ctypes.byref(c_opts),
                                                     ctypes.byref(request_id))
        check(status)
        del keep  # the library copied the stop strings and ids
        if live is not None:
            self._processors[request_id.value] = live
        return request_id.value

    def submit(self, prompt: Prompt, options: Optional[RequestOptions] = None,
               **kwargs: Any) -> int:
        """Submits a prompt (text, tokenized with the model's tokenizer, or token ids) and
        returns the request id at once. ``options`` or keyword arguments set
        :class:`RequestOptions` fields. Its outputs come from :meth:`poll`."""
        opts = resolve(RequestOptions, options, kwargs)
        ptr = self._enter()
        try:
            if opts.logits_processor is None:
                return self._submit_locked(ptr, prompt, opts)
            with self._move_lock:
                return self._submit_locked(ptr, prompt, opts)
        finally:
            self._leave()

    def stream(self, prompt: Prompt, options: Optional[RequestOptions] = None,
               **kwargs: Any) -> Stream:
        """Submits a prompt and returns its :class:`Stream`: iterate it for the text pieces
        (or ``stream.outputs()`` for every :class:`Output`). Leaving its ``with`` block, or
        closing it, before the end aborts the request."""
        opts = resolve(RequestOptions, options, kwargs)
        box: collections.deque = collections.deque()
        ptr = self._enter()
        try:
            # No output of the new request may be polled before its stream is registered.
            with self._move_lock:
                request_id = self._submit_locked(ptr, prompt, opts)
                self._boxes[request_id] = box
        finally:
            self._leave()
        return Stream(self, request_id, box, opts.sequences())

    def generate(self, prompt: Prompt, options: Optional[RequestOptions] = None,
                 **kwargs: Any) -> list[Completion]:
        """Runs a request to its end; returns one :class:`Completion` per sequence, in
        sequence order. Raises the request's error if it failed."""
        with self.stream(prompt, options, **kwargs) as s:
            return s.completions()

    def embed(self, prompt: Prompt, pooling: Union[str, Pooling] = Pooling.MODEL,
              normalize: Union[None, bool, EmbeddingNormalize] = None) -> array:
        """The prompt's embedding (``PAGODA_REQUEST_EMBED``): its hidden states after the
        model's final norm, pooled (``"last"``, ``"mean"`` or ``"model"``: what the checkpoint
        names, last for a plain decoder) and scaled to unit L2 norm (``True``), left as pooled
        (``False``) or as the checkpoint says (``None``: L2 unless it says otherwise). Returns
        the model's hidden size of f32 as an ``array('f')``. Runs the request to its end,
        driving the engine as :meth:`generate` does; other requests go on meanwhile."""
        c = self.generate(prompt, embed=True, pooling=pooling, normalize=normalize)[0]
        if c.embedding is None:  # the library promises one on a request that ended normally
            raise RuntimeError(f"the embedding request ended ({c.finish_reason.name}) "
                               "without its vector")
        return c.embedding

    def abort(self, request_id: int) -> None:
        """Ends a request now; its last output (finish reason ABORTED) follows.
        :class:`~pagoda.errors.NotFoundError` when it is not live (finished ones are not)."""
        self._call(lib.pagoda_engine_abort, request_id)

    # ---- driving ----------------------------------------------------------------------------

    def step(self) -> None:
        """Runs one iteration (schedule, run the model, sample, emit); outputs go to their
        streams and to :meth:`poll`."""
        with self._step_lock:
            ptr = self._stepping_ptr()
            with self._move_lock:
                self._drain(ptr, step=True)

    def follow(self) -> None:
        """On a rank other than 0 of a mesh over several processes: takes part in rank 0's steps
        until rank 0's engine is closed (its outputs are rank 0's; this engine takes no
        requests). Raises on rank 0 or a mesh in one process, and when a step fails."""
        with self._step_lock:
            check(lib.pagoda_engine_follow(self._stepping_ptr()))

    def has_work(self) -> bool:
        """Whether any request is waiting or running."""
        flag = ctypes.c_int32()
        self._call(lib.pagoda_engine_has_work_v2, ctypes.byref(flag))
        return flag.value != 0

    def poll(self) -> Optional[Output]:
        """The oldest output of a request that no :class:`Stream` owns, or ``None``."""
        try:
            return self._unclaimed.popleft()
        except IndexError:
            pass
        ptr = self._enter()
        try:
            with self._move_lock:
                self._drain(ptr)
        finally:
            self._leave()
        try:
            return self._unclaimed.popleft()
        except IndexError:
            return None

    def _drain(self, ptr: int, step: bool = False) -> int:
        """Moves every queued output to its stream's box or to poll()'s queue, after a step
        when ``step``; returns how many. The caller holds the move lock (and, to step, the
        step lock)."""
        slot, joiner, boxes, processors = self._slot, self._joiner, self._boxes, self._processors
        entries, views, first, count, count_ref = (slot.entries, slot.views, slot.first_ref,
                                                    slot.count, slot.count_ref)
        fill = _step_poll_fn if step else _poll_batch_fn
        n = 0
        while True:
            status = fill(ptr, first, _BATCH, count_ref)
            if status:  # a failed step leaves its ERROR outputs queued for the next drain
                raise error(status, last_error_message())
            got = count.value
            for i in range(got):
                o = read_output(entries[i], views[i], joiner)
                if processors:
                    o = self._processor_output(o)
                box = boxes.get(o.request_id)
                if box is None:
                    self._unclaimed.append(o)
                else:
                    box.append(o)
                    if o.request_finished:
                        del boxes[o.request_id]
            n += got
            if got < _BATCH:  # the queue ran out
                return n
            fill = _poll_batch_fn

    def _processor_output(self, o: Output) -> Output:
        """``o`` with the exception that made its request fail in its error; drops the
        request's processor with its last output. The caller holds the move lock."""
        live = self._processors.get(o.request_id)
        if live is None:
            return o
        if o.request_finished:
            del self._processors[o.request_id]
        if live.failure is not None and o.finish_reason == FinishReason.ERROR:
            o = o._replace(error=f"{o.error}: {live.describe()}")
        return o

    def _pump(self, box: collections.deque) -> int:
        """For a stream waiting on ``box``: one step and a drain, unless another thread's pump
        filled the box meanwhile. Returns the outputs routed (0: the engine had nothing)."""
        with self._step_lock:
            if box:
                return len(box)
            ptr = self._stepping_ptr()
            with self._move_lock:
                n = self._drain(ptr, step=True)
                if n == 0 and not box:
                    busy = ctypes.c_int32()
                    check(lib.pagoda_engine_has_work_v2(ptr, ctypes.byref(busy)))
                    if not busy.value:  # an abort may have queued its output since the step
                        n = self._drain(ptr)
            return n

    def _stepping_ptr(self) -> int:
        """The handle, for a caller holding the step lock (which close() waits for)."""
        if self._closing:
            raise ClosedError(self._kind)
        return self._ptr  # type: ignore[return-value]

    def close(self) -> None:
        """Aborts every request and releases the engine, once no step runs. Idempotent."""
        step_lock = getattr(self, "_step_lock", None)
        if step_lock is None:
            return  # the engine was never made
        with step_lock:
            super().close()

    # ---- statistics -------------------------------------------------------------------------

    def stats(self) -> EngineStats:
        """The engine's counters."""
        s = S.new(S.EngineStats)
        self._call(lib.pagoda_engine_get_stats, ctypes.byref(s))
        return snapshot(EngineStats, s)

    def metrics(self) -> EngineMetrics:
        """Serving metrics: gauges, counters and latency histograms."""
        m = S.new(S.EngineMetrics)
        self._call(lib.pagoda_engine_get_metrics, ctypes.byref(m))
        return metrics_from_c(m)

    def device_count(self) -> int:
        """Devices the engine runs on."""
        n = ctypes.c_size_t()
        self._call(lib.pagoda_engine_device_count_v2, ctypes.byref(n))
        return n.value

    def device_stats(self, index: int) -> DeviceStats:
        """What device ``index`` (mesh order) holds and runs."""
        s = S.new(S.DeviceStats)
        self._call(lib.pagoda_engine_get_device_stats, index, ctypes.byref(s))
        return snapshot(DeviceStats, s)

    def kernel_choices(self) -> list[KernelChoiceInfo]:
        """The engine's kernel choice table (kernel_choice.h): the choice file's entries and
        what the engine measured, in an order fixed for its life; empty under
        ``KernelChoice.RULES``."""
        ptr = self._enter()
        try:
            n = ctypes.c_size_t()
            check(lib.pagoda_engine_kernel_choice_count(ptr, ctypes.byref(n)))
            choices = []
            for i in range(n.value):
                c = S.new(S.KernelChoiceInfo)
                check(lib.pagoda_engine_kernel_choice(ptr, i, ctypes.byref(c)))
                choices.append(snapshot(KernelChoiceInfo, c))
            return choices
        finally:
            self._leave()


class _OutputSlot:
    """``_BATCH`` preallocated ``pagoda_output_t`` entries with what polling needs of them."""

    def __init__(self) -> None:
        array = (S.Output * _BATCH)()
        array[0].struct_size = ctypes.sizeof(S.Output)  # the entries' stride
        self.array = array
        self.entries = [array[i] for i in range(_BATCH)]  # views into array, not copies
        self.views = [memoryview(e).cast("B") for e in self.entries]
        self.first_ref = ctypes.byref(self.entries[0])
        self.count = ctypes.c_size_t()
        self.count_ref = ctypes.byref(self.count)


__all__ = ["Engine", "Prompt"]
