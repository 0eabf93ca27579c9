"""Stubs of what csrc/bindings/register_jsontext.cpp adds to pytps._core."""

from typing import Any

def json_line(value: Any) -> str | None:
    """json.dumps(value, separators=(",", ":")) with NaN and the infinities as null, for values made of
    dict (str keys), list, tuple, str, int, float, bool and None; None for anything else."""

def json_line_of(fields: dict[str, Any], names: tuple[str, ...], values: tuple[Any, ...]) -> bytes | None:
    """json_line({**fields, **dict(zip(names, values))}) and a newline, ASCII-encoded, without the merged dict; None
    where json_line gives None, when a name is a key of fields, or names and values differ in length."""

def json_body(value: Any) -> bytes | None:
    """json.dumps(value).encode() (default separators) for values made of dict (str keys), list,
    tuple, str, int, finite float, bool and None; None for anything else."""

def json_no_big_float(value: Any) -> bool:
    """True when no float in value (dict values and list items) is 2**63 or more in size, or NaN."""

def json_float_vector_length(value: Any) -> int | None:
    """A non-empty list of floats only: its length, or -1 when one is NaN or infinite; else None."""

def json_empty_float_vectors(body: bytes | bytearray | memoryview) -> tuple[bytes, dict[int, int]] | None:
    """An OpenAI-style embeddings body with each data[i].embedding that is a non-empty array of finite
    float literals emptied to [], and {i: its components}; None when the body is not strict JSON of
    that shape or has no such vector (csrc/core/embedding_vectors.hpp)."""
