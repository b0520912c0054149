"""Finds and loads libpagoda.

The library is a ``ctypes.CDLL``: ctypes releases the GIL around every call into it, so model
loading, engine steps and the rest run while other Python threads go on (``PyDLL``, which keeps
the GIL, is used nowhere). Callbacks into Python (log, progress, logits processors) take the GIL
back while they run.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

# The binding is written against the 0.x headers; another major version may have moved fields.
SUPPORTED_MAJOR = 0


def _locate() -> str:
    """``PAGODA_LIBRARY`` when set (a path), else what the system's library search finds."""
    path = os.environ.get("PAGODA_LIBRARY")
    if path:
        return path
    name = ctypes.util.find_library("pagoda")
    if name is None:
        raise ImportError(
            "libpagoda not found: set PAGODA_LIBRARY to the path of libpagoda.so, or install it "
            "where the dynamic linker looks")
    return name


def _load() -> ctypes.CDLL:
    path = _locate()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"cannot load libpagoda from {path}: {e}") from e
    lib.pagoda_version_number.restype = ctypes.c_int32
    lib.pagoda_version_number.argtypes = []
    major = lib.pagoda_version_number() // 10000
    if major != SUPPORTED_MAJOR:
        raise ImportError(f"{path} is libpagoda {major}.x; this binding speaks {SUPPORTED_MAJOR}.x")
    return lib


lib: ctypes.CDLL = _load()
