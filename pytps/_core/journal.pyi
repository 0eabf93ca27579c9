"""Stubs of what csrc/bindings/register_journal.cpp adds to pytps._core."""

from typing import Any

def json_line(value: Any) -> str | None:
    """json.dumps(value, separators=(",", ":")) with NaN and the infinities as null, for values made of
    dict (str keys), list, tuple, str, int, float, bool and None; None for anything else."""

def json_body(value: Any) -> bytes | None:
    """json.dumps(value).encode() (default separators) for values made of dict (str keys), list,
    tuple, str, int, finite float, bool and None; None for anything else."""
