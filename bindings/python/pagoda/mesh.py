"""Meshes: the devices a model is served on, arranged on named axes."""
from __future__ import annotations

import ctypes
from typing import Optional

from . import _structs as S
from ._api import lib
from ._handle import Handle
from .errors import check


class Mesh(Handle):
    """Devices such as ``"cpu:0"`` or ``"cuda:0-3,cuda:6"``, optionally on axes
    (``"pp=2,tp=4"``). Engines and caches made on it keep it alive, so it may be closed first."""

    _kind = "mesh"

    def __init__(self, devices: Optional[str] = None, axes: Optional[str] = None):
        """Builds a mesh; ``devices`` ``None`` means ``"cpu:0"``, ``axes`` ``None`` lets the plan
        choose the layout. Backends are discovered on first use when none is loaded."""
        opts = S.options(S.MeshOptions, lib.pagoda_mesh_options_init, devices=devices, axes=axes)
        out = ctypes.c_void_p()
        check(lib.pagoda_mesh_create(ctypes.byref(opts), ctypes.byref(out)))
        super().__init__(out.value, lib.pagoda_mesh_destroy)

    def device_count(self) -> int:
        """How many devices the mesh has."""
        n = ctypes.c_size_t()
        self._call(lib.pagoda_mesh_device_count_v2, ctypes.byref(n))
        return n.value

    def device_name(self, index: int) -> str:
        """The name of device ``index``, such as ``"cpu:0"``
        (:class:`~pagoda.errors.InvalidArgumentError` out of range)."""
        name = ctypes.c_char_p()
        self._call(lib.pagoda_mesh_device_name_v2, index, ctypes.byref(name))
        return name.value.decode()

    def device_names(self) -> list[str]:
        """Every device's name, in mesh order."""
        return [self.device_name(i) for i in range(self.device_count())]

    def __len__(self) -> int:
        return self.device_count()
