"""Status codes and the exceptions that carry them.

Every failing C call becomes a :class:`PagodaError` subclass chosen by its status, carrying the
status and the library's message (``pagoda_last_error_message()``, read on the same thread right
after the call, as the message is thread-local and the next call may replace it).
"""
from __future__ import annotations

import enum

from ._api import lib


class Status(enum.IntEnum):
    """``pagoda_status_t`` (status.h)."""
    OK = 0
    INVALID_ARGUMENT = 1
    OUT_OF_MEMORY = 2
    NOT_FOUND = 3
    IO = 4
    FORMAT = 5
    UNSUPPORTED = 6
    ABI_MISMATCH = 7
    NOT_A_PLUGIN = 8
    BACKEND = 9
    INVALID_HANDLE = 10
    ALREADY_EXISTS = 11
    CANCELLED = 12
    EMPTY = 13
    INTERNAL = 14


class PagodaError(Exception):
    """A call into libpagoda failed.

    Attributes:
        status: the :class:`Status` (a plain ``int`` for a code newer than this binding).
        message: the library's sentence about the failure (may be empty).
    """

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        name = lib.pagoda_status_string(int(status)).decode()
        super().__init__(f"{name}: {message}" if message else name)


class InvalidArgumentError(PagodaError, ValueError):
    """``PAGODA_ERR_INVALID_ARGUMENT``: an argument or option is out of range."""


class OutOfMemoryError(PagodaError):
    """``PAGODA_ERR_OUT_OF_MEMORY``: host or device memory ran out."""


class NotFoundError(PagodaError):
    """``PAGODA_ERR_NOT_FOUND``: a file, symbol, name or id does not exist."""


class PagodaIOError(PagodaError):
    """``PAGODA_ERR_IO``: reading or writing a file failed."""


class FormatError(PagodaError):
    """``PAGODA_ERR_FORMAT``: a file or message is malformed."""


class UnsupportedError(PagodaError):
    """``PAGODA_ERR_UNSUPPORTED``: valid, but not supported by this build or backend."""


class AbiMismatchError(PagodaError):
    """``PAGODA_ERR_ABI_MISMATCH``: a plugin speaks another ABI version."""


class NotAPluginError(PagodaError):
    """``PAGODA_ERR_NOT_A_PLUGIN``: a shared object is not a Pagoda backend."""


class BackendError(PagodaError):
    """``PAGODA_ERR_BACKEND``: a backend failed (driver, kernel, collective)."""


class InvalidHandleError(PagodaError):
    """``PAGODA_ERR_INVALID_HANDLE``: a handle is NULL, destroyed or of the wrong kind."""


class ClosedError(InvalidHandleError):
    """The Python object's handle was closed; raised before any call reaches the library."""

    def __init__(self, what: str):
        super().__init__(Status.INVALID_HANDLE, f"the {what} is closed")


class AlreadyExistsError(PagodaError):
    """``PAGODA_ERR_ALREADY_EXISTS``: something with that name is already registered."""


class CancelledError(PagodaError):
    """``PAGODA_ERR_CANCELLED``: the operation was cancelled by the caller."""


class EmptyError(PagodaError):
    """``PAGODA_ERR_EMPTY``: nothing to return now."""


class InternalError(PagodaError):
    """``PAGODA_ERR_INTERNAL``: a bug in Pagoda; the message says where."""


_BY_STATUS: dict[int, type[PagodaError]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError, Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.NOT_FOUND: NotFoundError, Status.IO: PagodaIOError, Status.FORMAT: FormatError,
    Status.UNSUPPORTED: UnsupportedError, Status.ABI_MISMATCH: AbiMismatchError,
    Status.NOT_A_PLUGIN: NotAPluginError, Status.BACKEND: BackendError,
    Status.INVALID_HANDLE: InvalidHandleError, Status.ALREADY_EXISTS: AlreadyExistsError,
    Status.CANCELLED: CancelledError, Status.EMPTY: EmptyError, Status.INTERNAL: InternalError,
}


def error(status: int, message: str) -> PagodaError:
    """The exception for ``status`` with ``message``."""
    try:
        status = Status(status)
    except ValueError:
        pass  # a code appended after this binding was written: keep the number
    return _BY_STATUS.get(status, PagodaError)(status, message)


def check(status: int) -> None:
    """Raises the exception for a failed call; call it right after the call, on its thread."""
    if status != 0:
        raise error(status, last_error_message())


def last_error_message() -> str:
    """The calling thread's message about its last failed pagoda call (``""`` when none)."""
    return lib.pagoda_last_error_message().decode("utf-8", "replace")
