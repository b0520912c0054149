"""Where libpagoda's log lines go: a Python callable, or standard error (the default)."""
from __future__ import annotations

import enum
import sys
import threading
import traceback
from typing import Callable, Optional

from . import _structs as S
from ._api import lib
from .errors import check


class LogLevel(enum.IntEnum):
    """``pagoda_log_level_t`` (log.h)."""
    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    OFF = 4


LogCallback = Callable[[LogLevel, str], None]

# The C function pointer must outlive every call the library may make through it: kept here
# until another callback replaces it (pagoda_log_set_callback returns only once no call of the
# previous one runs or will start, so dropping it then is safe).
_trampoline: Optional[S.LogFn] = None
_set_lock = threading.Lock()
# Whether this thread is inside the log callback, where changing the callback would deadlock.
_inside = threading.local()


def _make_trampoline(callback: LogCallback) -> S.LogFn:
    def trampoline(_user: int, level: int, message: bytes) -> None:
        # An exception must not unwind into C: report it and carry on, as logging should.
        _inside.active = True
        try:
            text = message.decode("utf-8", "replace") if message else ""
            callback(LogLevel(level), text)
        except BaseException:  # noqa: B036 - nothing may cross into C, not even SystemExit
            print("pagoda: the log callback raised; the exception is ignored:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
        finally:
            _inside.active = False
    return S.LogFn(trampoline)


def set_log_callback(callback: Optional[LogCallback]) -> None:
    """Sends log lines to ``callback(level, message)``; ``None`` goes back to standard error.

    The callback runs on whichever thread logs (engine workers included), one line at a time. It
    must not call :func:`set_log_callback` (that raises RuntimeError); lines it causes the
    library to log are dropped.
    Exceptions it raises are printed to standard error and ignored.
    """
    global _trampoline
    if getattr(_inside, "active", False):
        raise RuntimeError("set_log_callback cannot be called from inside the log callback")
    with _set_lock:
        # LogFn() with no argument is a NULL function pointer: back to standard error.
        new = _make_trampoline(callback) if callback is not None else S.LogFn()
        lib.pagoda_log_set_callback(new, None)
        _trampoline = new


def set_log_level(level: LogLevel) -> None:
    """Sets the least severe level that is logged (``LogLevel.OFF`` for silence)."""
    check(lib.pagoda_log_set_level(int(level)))


def get_log_level() -> LogLevel:
    """The least severe level that is logged now."""
    return LogLevel(lib.pagoda_log_get_level())
