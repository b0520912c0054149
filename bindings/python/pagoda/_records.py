"""Copies a filled C struct into a plain, immutable Python record (a frozen dataclass whose
fields are named as the struct's), so nothing the caller keeps points into C memory."""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def _value(v: Any) -> Any:
    if isinstance(v, bytes):  # a char[N] field, NUL-terminated
        return v.decode("utf-8", "replace")
    return v


def snapshot(cls: type[T], struct: Any) -> T:
    """``cls`` with every field read from the struct field of the same name."""
    return cls(**{f.name: _value(getattr(struct, f.name)) for f in dataclasses.fields(cls)})
