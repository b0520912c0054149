"""Backends: the plugins that bring devices (``libpagoda-backend-<name>.so``).

Backends live in a process-wide registry from load until process exit, so :class:`Backend`
objects own nothing and need no closing. (``pagoda_backends_unload_all`` is not offered: it
would leave every Backend, mesh and engine pointing at unloaded code.)
"""
from __future__ import annotations

import ctypes
import dataclasses
import enum
from typing import Optional

from . import _structs as S
from ._api import lib
from ._records import snapshot
from .errors import Status, check


class DeviceKind(enum.IntEnum):
    """``pagoda_device_kind_t`` (backend.h)."""
    CPU = 0
    GPU = 1


DEVICE_HOST_ACCESSIBLE = 1  # DeviceInfo.flags: the host can read and write device memory
DEVICE_USES_HOST_WEIGHTS = 2  # DeviceInfo.flags: kernels run on mmapped host weights


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """``pagoda_device_info_t``: one device of a backend."""
    kind: int            #: a DeviceKind
    flags: int           #: DEVICE_* bits
    compute_units: int   #: threads (CPU) or multiprocessors (GPU)
    total_memory: int    #: bytes
    free_memory: int     #: bytes free when asked
    name: str            #: model name ("NVIDIA H100")
    arch: str            #: architecture tag ("x86_64-avx2", "sm_90")


@dataclasses.dataclass(frozen=True)
class SkippedPlugin:
    """A plugin that a load or discovery skipped, and why."""
    path: str
    status: int
    message: str


def _text(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b is not None else ""


class Backend:
    """A loaded backend (owned by the registry; valid for the rest of the process)."""

    def __init__(self, ptr: int):
        self._ptr = ptr

    @property
    def name(self) -> str:
        """The short name, such as ``"cpu"``."""
        return _text(lib.pagoda_backend_name(self._ptr))

    @property
    def description(self) -> str:
        """A one-line description."""
        return _text(lib.pagoda_backend_description(self._ptr))

    @property
    def path(self) -> str:
        """The file it was loaded from."""
        return _text(lib.pagoda_backend_path(self._ptr))

    def device_count(self) -> int:
        """How many devices it drives."""
        n = ctypes.c_int32()
        check(lib.pagoda_backend_device_count(self._ptr, ctypes.byref(n)))
        return n.value

    def device_info(self, index: int) -> DeviceInfo:
        """Describes device ``index`` (0 ≤ index < device_count())."""
        info = S.new(S.DeviceInfo)
        check(lib.pagoda_backend_device_info(self._ptr, index, ctypes.byref(info)))
        return snapshot(DeviceInfo, info)

    def devices(self) -> list[DeviceInfo]:
        """Every device it drives."""
        return [self.device_info(i) for i in range(self.device_count())]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Backend) and other._ptr == self._ptr

    def __hash__(self) -> int:
        return hash(self._ptr)

    def __repr__(self) -> str:
        return f"<pagoda.Backend {self.name!r}>"


def discover(search_path: Optional[str] = None) -> int:
    """Loads every ``libpagoda-backend-<name>.so`` on ``search_path`` (colon-separated folders;
    ``None``: ``PAGODA_BACKEND_PATH``, then libpagoda's own folder). Plugins that fail are
    skipped (see :func:`skipped`). Returns how many were newly loaded."""
    loaded = ctypes.c_size_t()
    path = search_path.encode() if search_path is not None else None
    check(lib.pagoda_backends_discover(path, ctypes.byref(loaded)))
    return loaded.value


def load(path: str, config: Optional[str] = None) -> Backend:
    """Loads the plugin at ``path`` with its ``config`` (``None``: from the environment)."""
    out = ctypes.c_void_p()
    check(lib.pagoda_backend_load(path.encode(), config.encode() if config is not None else None,
                                  ctypes.byref(out)))
    return Backend(out.value)


def backends() -> list[Backend]:
    """The loaded backends, in load order."""
    result = []
    for i in range(lib.pagoda_backend_count()):
        out = ctypes.c_void_p()
        check(lib.pagoda_backend_get(i, ctypes.byref(out)))
        result.append(Backend(out.value))
    return result


def find(name: str) -> Backend:
    """The backend registered as ``name``; :class:`~pagoda.errors.NotFoundError` otherwise."""
    out = ctypes.c_void_p()
    check(lib.pagoda_backend_find(name.encode(), ctypes.byref(out)))
    return Backend(out.value)


def skipped() -> list[SkippedPlugin]:
    """The plugins skipped by loads and discoveries so far, with the reason."""
    result = []
    for i in range(lib.pagoda_backend_skipped_count()):
        path, message, status = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int32()
        check(lib.pagoda_backend_skipped(i, ctypes.byref(path), ctypes.byref(status),
                                         ctypes.byref(message)))
        try:
            code: int = Status(status.value)
        except ValueError:
            code = status.value
        result.append(SkippedPlugin(_text(path.value), code, _text(message.value)))
    return result
