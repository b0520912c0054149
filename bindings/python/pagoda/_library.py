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
import shutil
import subprocess
from typing import Optional

# The binding is written against the 0.x headers; another major version may have moved fields.
SUPPORTED_MAJOR = 0


_HERE = os.path.dirname(os.path.abspath(__file__))


def _pkg_config_libdir() -> Optional[str]:
    """libpagoda's folder as pkg-config tells it now, or None."""
    if shutil.which("pkg-config") is None:
        return None
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "pagoda"], capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return os.path.normpath(out.stdout.strip()) if out.stdout.strip() else None


def _in_folder(folder: Optional[str]) -> Optional[str]:
    """The library in ``folder`` (its major version's name, as the dynamic linker would pick
    it), or None."""
    if not folder:
        return None
    for name in (f"libpagoda.so.{SUPPORTED_MAJOR}", "libpagoda.so"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def _locate() -> str:
    """The first of: ``PAGODA_LIBRARY`` (a path); the library the wheel carries
    (``pagoda/_lib``, with its CPU backend beside it); the folder pkg-config named when the
    package was built; the folder pkg-config names now; what the system's library search
    finds."""
    path = os.environ.get("PAGODA_LIBRARY")
    if path:
        return path
    try:
        from ._built_with import LIBDIR as built_with  # written by setup.py
    except ImportError:
        built_with = None
    for folder in (os.path.join(_HERE, "_lib"), built_with, _pkg_config_libdir()):
        found = _in_folder(folder)
        if found:
            return found
    name = ctypes.util.find_library("pagoda")
    if name is None:
        raise ImportError(
            "libpagoda not found: set PAGODA_LIBRARY to the path of libpagoda.so, install it where "
            "pkg-config or the dynamic linker finds it, or install the wheel that carries it")
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
