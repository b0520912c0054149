"""Models: opening a GGUF file or a Hugging Face folder, with progress and cancellation."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import time
from typing import Callable, Optional, Union

from . import _structs as S
from ._api import lib
from ._handle import Handle
from ._records import snapshot
from .errors import check
from .tokenizer import Tokenizer

PathLike = Union[str, "os.PathLike[str]"]
ProgressCallback = Callable[[float, str], object]
"""``progress(fraction, stage)``; returning ``False`` cancels the open (any other value goes on)."""


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """``pagoda_model_info_t``: what a model is."""
    architecture: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    max_position: int
    n_parameters: int
    bos_token_id: int  #: -1 when none
    eos_token_id: int  #: -1 when none
    n_experts: int  #: a mixture of experts' experts per sparse layer; 0 for a dense model
    experts_per_token: int
    expert_intermediate_size: int
    n_sparse_layers: int


class _Progress:
    """The C progress callback around a Python one. An exception in the callback cancels the
    open and is raised again once the open has returned (it cannot cross into C)."""

    def __init__(self, callback: ProgressCallback):
        self.error: Optional[BaseException] = None

        def trampoline(_user: int, fraction: float, stage: bytes) -> int:
            try:
                text = stage.decode("utf-8", "replace") if stage else ""
                return 0 if callback(fraction, text) is False else 1
            except BaseException as e:  # noqa: B036 - nothing may cross into C
                self.error = e
                return 0
        self.fn = S.ProgressFn(trampoline)

    def raise_pending(self, status: int, model: Optional[int]) -> None:
        """After the open returned ``status`` and ``model``: raises the callback's exception,
        if any, dropping a model the open made before it saw the cancel."""
        if self.error is not None:
            if status == 0:
                lib.pagoda_model_destroy(model)
            raise self.error


def _options(progress: Optional[_Progress]) -> S.ModelOptions:
    return S.options(S.ModelOptions, lib.pagoda_model_options_init,
                     progress=progress.fn if progress is not None else None)


class Model(Handle):
    """An open model (immutable: every method is safe from any thread).

    Engines and KV caches made from it keep what they need alive, so it may be closed first.
    """

    _kind = "model"

    def __init__(self, path: PathLike, progress: Optional[ProgressCallback] = None):
        """Opens ``path`` (a ``.gguf`` file or a Hugging Face folder), blocking until ready.

        Raises :class:`~pagoda.errors.NotFoundError`, ``FormatError``, ``UnsupportedError`` or
        ``CancelledError`` (the callback returned ``False``), with the library's message.
        """
        prog = _Progress(progress) if progress is not None else None
        opts = _options(prog)
        out = ctypes.c_void_p()
        status = lib.pagoda_model_open(os.fsencode(path), ctypes.byref(opts), ctypes.byref(out))
        if prog is not None:
            prog.raise_pending(status, out.value)
        check(status)
        super().__init__(out.value, lib.pagoda_model_destroy)

    @staticmethod
    def load_async(path: PathLike, progress: Optional[ProgressCallback] = None) -> "ModelLoader":
        """Starts opening ``path`` on a background thread; see :class:`ModelLoader`."""
        return ModelLoader(path, progress)

    def info(self) -> ModelInfo:
        """Describes the model."""
        info = S.new(S.ModelInfo)
        self._call(lib.pagoda_model_get_info, ctypes.byref(info))
        return snapshot(ModelInfo, info)

    @property
    def path(self) -> str:
        """The file or folder the model was opened from."""
        p = ctypes.c_char_p()
        self._call(lib.pagoda_model_path_v2, ctypes.byref(p))
        return os.fsdecode(p.value)

    def tokenizer(self) -> Tokenizer:
        """The tokenizer the model carries (valid after the model is closed)."""
        return Tokenizer.from_model(self)


class ModelLoader(Handle):
    """A model opening in the background: poll :meth:`progress`, :meth:`cancel` it from any
    thread, collect the model with :meth:`finish`. Closing an unfinished loader cancels it."""

    _kind = "model loader"

    def __init__(self, path: PathLike, progress: Optional[ProgressCallback] = None):
        # The callback (if any) runs on the loader's thread and must live until finish.
        self._progress = _Progress(progress) if progress is not None else None
        opts = _options(self._progress)
        out = ctypes.c_void_p()
        check(lib.pagoda_model_load_start(os.fsencode(path), ctypes.byref(opts),
                                          ctypes.byref(out)))
        super().__init__(out.value, _abandon)

    def progress(self) -> tuple[float, bool]:
        """``(fraction, done)``: how far the open has come, and whether it has ended."""
        fraction, done = ctypes.c_float(), ctypes.c_int()
        self._call(lib.pagoda_model_loader_progress, ctypes.byref(fraction), ctypes.byref(done))
        return fraction.value, bool(done.value)

    def cancel(self) -> None:
        """Asks the open to stop; :meth:`finish` then raises ``CancelledError``."""
        self._get(lib.pagoda_model_loader_cancel)

    def finish(self, poll_seconds: float = 0.005) -> Model:
        """Waits for the open to end and returns the model (or raises its error).

        The wait polls :meth:`progress` rather than blocking in C, so that :meth:`cancel` stays
        callable from other threads until the open is over (the C ``finish`` frees the loader).
        """
        while not self.progress()[1]:
            time.sleep(poll_seconds)
        ptr = self._detach()
        out = ctypes.c_void_p()
        status = lib.pagoda_model_loader_finish(ptr, ctypes.byref(out))
        if self._progress is not None:
            self._progress.raise_pending(status, out.value)
        check(status)
        return Model._adopt(out.value, lib.pagoda_model_destroy)


def _abandon(loader: int) -> None:
    """Destroys an unfinished loader: cancel, wait, drop whatever it opened."""
    lib.pagoda_model_loader_cancel(loader)
    out = ctypes.c_void_p()
    # Its status (CANCELLED, or the open's own failure) concerns nobody now: nothing was kept.
    lib.pagoda_model_loader_finish(loader, ctypes.byref(out))
    lib.pagoda_model_destroy(out.value)
