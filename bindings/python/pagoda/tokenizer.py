"""Tokenizers: text to token ids and back, and chat templates."""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
from typing import Any, Optional, Sequence, Union

from . import _structs as S
from ._api import lib
from ._handle import Handle
from ._records import snapshot
from .errors import check

TOKENIZE_ADD_SPECIAL = 1    # PAGODA_TOKENIZE_ADD_SPECIAL
TOKENIZE_PARSE_SPECIAL = 2  # PAGODA_TOKENIZE_PARSE_SPECIAL
DETOKENIZE_SKIP_SPECIAL = 1  # PAGODA_DETOKENIZE_SKIP_SPECIAL


@dataclasses.dataclass(frozen=True)
class TokenizerInfo:
    """``pagoda_tokenizer_info_t``; ids are -1 when the tokenizer has none."""
    vocab_size: int
    bos_token_id: int
    eos_token_id: int
    unk_token_id: int
    pad_token_id: int
    model: str  #: ``"bpe"`` (byte-level) or ``"spm"`` (SentencePiece-style)


def _take_text(ptr: ctypes.c_void_p, length: int) -> str:
    """Copies a string the library handed over, then frees it."""
    try:
        return ctypes.string_at(ptr.value, length).decode("utf-8", "replace") if length else ""
    finally:
        lib.pagoda_free(ptr)


class Tokenizer(Handle):
    """Text to token ids and back. Immutable: every method is safe from any thread."""

    _kind = "tokenizer"
    _piece_capacity = 32  # token_to_piece's first buffer; a longer piece takes a second call

    def __init__(self, path: Union[str, "os.PathLike[str]"]):
        """Opens a Hugging Face ``tokenizer.json``, or a folder holding one."""
        out = ctypes.c_void_p()
        check(lib.pagoda_tokenizer_open(os.fsencode(path), ctypes.byref(out)))
        super().__init__(out.value, lib.pagoda_tokenizer_destroy)

    @classmethod
    def from_model(cls, model: Any) -> "Tokenizer":
        """The tokenizer ``model`` carries; it stays valid after the model is closed."""
        out = ctypes.c_void_p()
        model._call(lib.pagoda_tokenizer_from_model, ctypes.byref(out))
        return cls._adopt(out.value, lib.pagoda_tokenizer_destroy)

    def info(self) -> TokenizerInfo:
        """Describes the tokenizer."""
        info = S.new(S.TokenizerInfo)
        self._call(lib.pagoda_tokenizer_get_info, ctypes.byref(info))
        return snapshot(TokenizerInfo, info)

    def encode(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of ``text``.

        Args:
            add_special: add the BOS/EOS or template tokens the tokenizer's post-processor adds.
            parse_special: text that spells a special token becomes that token (leave it off for
                untrusted text).
        """
        data = text.encode("utf-8")
        flags = (TOKENIZE_ADD_SPECIAL if add_special else 0) | \
            (TOKENIZE_PARSE_SPECIAL if parse_special else 0)
        ids, n = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t()
        self._call(lib.pagoda_tokenizer_encode, data, len(data), flags, ctypes.byref(ids),
                   ctypes.byref(n))
        try:
            return ids[:n.value] if n.value else []
        finally:
            lib.pagoda_free(ids)

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        """The text of ``ids``, as Hugging Face's ``decode`` gives it."""
        arr = S.int32_array(ids, "ids")
        text, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._call(lib.pagoda_tokenizer_decode, arr, len(ids),
                   DETOKENIZE_SKIP_SPECIAL if skip_special else 0, ctypes.byref(text),
                   ctypes.byref(n))
        return _take_text(text, n.value)

    def token_to_piece(self, token_id: int) -> bytes:
        """The bytes one token stands for (not always whole UTF-8 characters)."""
        length = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(self._piece_capacity)
        ptr = self._enter()
        try:
            status = lib.pagoda_tokenizer_token_to_piece(ptr, token_id, buf, len(buf),
                                                         ctypes.byref(length))
            if status != 0 and length.value > len(buf):  # too small: *length says what it needs
                buf = ctypes.create_string_buffer(length.value)
                status = lib.pagoda_tokenizer_token_to_piece(ptr, token_id, buf, len(buf),
                                                             ctypes.byref(length))
            check(status)
        finally:
            self._leave()
        return buf.raw[:length.value]

    def apply_chat_template(self, messages: Union[str, Sequence[dict]],
                            add_generation_prompt: bool = False,
                            chat_template: Optional[str] = None,
                            template_name: Optional[str] = None,
                            tools: Union[None, str, Sequence[dict]] = None,
                            context: Union[None, str, dict] = None) -> str:
        """Renders a conversation into prompt text, as transformers' ``apply_chat_template(
        messages, tokenize=False)`` does.

        Args:
            messages: OpenAI-style messages (a list of dicts, or its JSON text).
            add_generation_prompt: end with the header of the assistant's turn.
            chat_template: Jinja source to use instead of the tokenizer's own.
            template_name: which of the tokenizer's named templates (``"tool_use"``, ...).
            tools: the template's ``tools`` (a list of schemas, or its JSON text).
            context: more template variables (a dict, or its JSON text).
        """
        def as_json(v: Any) -> Optional[bytes]:
            if v is None:
                return None
            return (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)).encode()

        opts = S.options(S.ChatTemplateOptions, lib.pagoda_chat_template_options_init,
                         add_generation_prompt=add_generation_prompt,
                         chat_template=chat_template, template_name=template_name,
                         tools_json=as_json(tools), context_json=as_json(context))
        text, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._call(lib.pagoda_tokenizer_apply_chat_template, as_json(messages),
                   ctypes.byref(opts), ctypes.byref(text), ctypes.byref(n))
        return _take_text(text, n.value)
