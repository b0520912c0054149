"""Meshes: the devices a model is served on, arranged on named axes, in one process or over
the processes of a launch (ranks started by ``mpirun``, or by the host itself)."""
from __future__ import annotations

import ctypes
from typing import Callable, Optional

from . import _structs as S
from ._api import lib
from ._handle import Handle
from .errors import Status, check

BootstrapCallback = Callable[[memoryview, int], object]
"""``bootstrap(data, root)``: the host's broadcast among the processes of its launch, such as
mpi4py's ``comm.Bcast(data, root=root)``. Every rank passes ``data``, a writable byte
``memoryview`` valid only during the call; on return each must hold rank ``root``'s bytes. The
return value is ignored; an exception fails the broadcast, hence the mesh's creation, and is
raised from :class:`Mesh` once the library has returned."""


class _Bootstrap:
    """The C bootstrap broadcast around a Python callable. An exception in the callable returns
    a failing status to the library (it cannot cross into C) and is raised again once the call
    into the library has returned."""

    def __init__(self, callback: BootstrapCallback):
        self.error: Optional[BaseException] = None

        def trampoline(_user: int, data: Optional[int], size: int, root: int) -> int:
            view = None
            try:
                if size:
                    view = memoryview((ctypes.c_char * size).from_address(data)).cast("B")
                else:
                    view = memoryview(bytearray())
                callback(view, root)
                return int(Status.OK)
            except BaseException as e:  # noqa: B036 - nothing may cross into C
                if self.error is None:
                    self.error = e
                return int(Status.BACKEND)
            finally:
                if view is not None:
                    try:
                        view.release()  # the C buffer is gone after the call
                    except BufferError:
                        pass  # the callable kept an export of it; nothing more can be done
        self.fn = S.BootstrapFn(trampoline)

    def raise_pending(self, status: int, mesh: Optional[int]) -> None:
        """After the create returned ``status`` and ``mesh``: raises the callable's exception,
        if any, dropping a mesh the create made all the same."""
        if self.error is not None:
            error, self.error = self.error, None
            if status == 0 and mesh:
                lib.pagoda_mesh_destroy(mesh)
            raise error


class Mesh(Handle):
    """Devices such as ``"cpu:0"`` or ``"cuda:0-3,cuda:6"``, optionally on axes
    (``"pp=2,tp=4"``). Engines and caches made on it keep it alive, so it may be closed first.

    Over several processes each names its own devices (every process as many) and the mesh is
    their lists rank after rank, named like ``"cpu:0@rank1"``; creating it blocks until every
    rank has created it. Caches and engines on such a mesh are refused (``UnsupportedError``)
    for now."""

    _kind = "mesh"

    def __init__(self, devices: Optional[str] = None, axes: Optional[str] = None, *,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 rendezvous: Optional[str] = None, timeout_ms: Optional[int] = None,
                 bootstrap: Optional[BootstrapCallback] = None):
        """Builds a mesh; ``devices`` ``None`` means ``"cpu:0"``, ``axes`` ``None`` lets the plan
        choose the layout. Backends are discovered on first use when none is loaded.

        ``rank`` and ``world_size`` place this process in its launch (``None``: from the
        environment, ``PAGODA_RANK``/``PAGODA_WORLD_SIZE``, else OpenMPI's, else one process);
        a rank outside the world raises :class:`~pagoda.errors.InvalidArgumentError`. The ranks
        meet through ``bootstrap`` (see :data:`BootstrapCallback`) when given, else on the TCP
        address ``rendezvous`` (``"host:port"``; ``None``: ``PAGODA_RENDEZVOUS``, or found by
        itself under a one-machine ``mpirun``). ``timeout_ms`` bounds each wait for the others
        (``None`` or 0: 30 s). The bootstrap callable is kept as long as this object."""
        boot = _Bootstrap(bootstrap) if bootstrap is not None else None
        opts = S.options(S.MeshOptions, lib.pagoda_mesh_options_init, devices=devices, axes=axes,
                         rank=rank, world_size=world_size, rendezvous=rendezvous,
                         timeout_ms=timeout_ms, bootstrap=boot.fn if boot is not None else None)
        out = ctypes.c_void_p()
        status = lib.pagoda_mesh_create(ctypes.byref(opts), ctypes.byref(out))
        if boot is not None:
            boot.raise_pending(status, out.value)
        check(status)
        super().__init__(out.value, lib.pagoda_mesh_destroy)
        # The library holds the function pointer as long as the mesh: so does this object.
        self._bootstrap = boot

    def world(self) -> tuple[int, int]:
        """``(rank, world_size)``: this process's rank and the processes the mesh spans
        (``(0, 1)`` in one process)."""
        rank, size = ctypes.c_int32(), ctypes.c_int32()
        self._call(lib.pagoda_mesh_world, ctypes.byref(rank), ctypes.byref(size))
        return rank.value, size.value

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
