"""The base of every Python object that owns a C handle.

The C rule is "destroy only while no other call on the handle runs". Python threads may call
and close at any time, so each call registers as a user of the handle; ``close()`` while calls
run only marks the handle closed, and the last user to leave destroys it. A closed handle is
never passed to C again: using it raises :class:`~pagoda.errors.ClosedError`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from .errors import ClosedError, check


class Handle:
    """Owns one C handle; closed by :meth:`close`, by leaving a ``with`` block, or by the
    garbage collector, whichever comes first."""

    _kind = "handle"  # names the object in ClosedError's message

    def __init__(self, ptr: int, destroy: Callable[[int], None]):
        self._ptr: int | None = ptr
        self._destroy_fn = destroy
        self._lock = threading.Lock()  # a plain lock: every call takes it twice
        self._users = 0
        self._closing = False
        self._detached: threading.Event | None = None  # set by _detach, fired when free

    @classmethod
    def _adopt(cls, ptr: int, destroy: Callable[[int], None]):
        """An object of ``cls`` owning ``ptr``, which a C call other than the one behind
        ``cls.__init__`` made."""
        obj = cls.__new__(cls)
        Handle.__init__(obj, ptr, destroy)
        return obj

    def _enter(self) -> int:
        """Registers a call on the handle and returns the pointer to pass."""
        with self._lock:
            if self._closing:
                raise ClosedError(self._kind)
            self._users += 1
            return self._ptr  # type: ignore[return-value]

    def _leave(self) -> None:
        """Ends a call; destroys the handle when it was closed meanwhile."""
        with self._lock:
            self._users -= 1
            if self._users:
                return
            if self._detached is not None:
                self._detached.set()  # _detach() waits for the handle to be free
                return
            if not self._closing or self._ptr is None:
                return
            ptr, self._ptr = self._ptr, None
        self._destroy_fn(ptr)

    def _detach(self) -> int:
        """Takes the pointer out of this object (closed from now on, never destroyed by it)
        once the calls running on it have ended: for C functions that consume the handle."""
        free = threading.Event()
        with self._lock:
            if self._closing:
                raise ClosedError(self._kind)
            self._closing = True
            self._detached = free
            if not self._users:
                free.set()
        free.wait()
        ptr, self._ptr = self._ptr, None
        return ptr  # type: ignore[return-value]

    def _call(self, fn: Callable[..., int], *args: Any) -> None:
        """``fn(handle, *args)``, its status checked."""
        ptr = self._enter()
        try:
            check(fn(ptr, *args))
        finally:
            self._leave()

    def _get(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(handle, *args)`` for a function that returns a value rather than a status."""
        ptr = self._enter()
        try:
            return fn(ptr, *args)
        finally:
            self._leave()

    @property
    def closed(self) -> bool:
        """Whether the handle was closed (or handed over)."""
        return self._closing

    def close(self) -> None:
        """Releases the handle (at once, or when the calls running on it end). Idempotent."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return  # __init__ never ran to the end: nothing is owned
        with lock:
            if self._closing:
                return
            self._closing = True
            if self._users or self._ptr is None:
                return
            ptr, self._ptr = self._ptr, None
        self._destroy_fn(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit the module may be half torn down
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closing else f"0x{self._ptr:x}"
        return f"<pagoda.{type(self).__name__} {state}>"


class using:
    """``with using(a, b, None) as (pa, pb, pn):`` registers one call on several handles at
    once, for C functions taking more than one (``None`` passes as NULL)."""

    def __init__(self, *handles: "Handle | None"):
        self._handles = handles
        self._entered: list[Handle] = []

    def __enter__(self) -> list["int | None"]:
        ptrs: list[int | None] = []
        try:
            for h in self._handles:
                if h is None:
                    ptrs.append(None)
                else:
                    ptrs.append(h._enter())
                    self._entered.append(h)
        except BaseException:
            self.__exit__()
            raise
        return ptrs

    def __exit__(self, *exc_info: object) -> None:
        for h in self._entered:
            h._leave()
        self._entered = []
