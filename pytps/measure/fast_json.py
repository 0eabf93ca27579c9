"""JSON on the per-request path (issue 42). json.loads: orjson reads a whole JSON body ~5-9x faster,
into the same values; whatever it refuses, or might have read differently, goes to json.loads,
which then decides exactly as before.

orjson follows RFC 8259 strictly, so it refuses what only Python's parser takes (NaN, Infinity,
1e400, UTF-16 or a BOM, lone surrogates, nesting past its limit). The one value it reads
differently is an integer beyond 64 bits, which it makes a float: so a result holding a float of
2**63 or more in size is read again by json.loads. Checked against json.loads by property
(tests/measure/test_short_request_paths.py).
"""

from __future__ import annotations

import json
from typing import Any

from pytps._native import _core

#: json.dumps(value, separators=(",", ":")) with NaN and the infinities as null, written natively
#: for plain values (dict, list, tuple, str, int, float, bool, None), else None: the journal's
#: line writer (results.folder.line_text), checked against json.dumps by property.
json_line = _core.json_line
#: json_line({**fields, **dict(zip(names, values))}) + "\n" without the merged dict, or None.
json_line_of = _core.json_line_of
_json_body = _core.json_body


def dumps_body(value: Any) -> bytes:
    """json.dumps(value).encode(): a request's body, the same bytes, written natively when its
    values are plain (no NaN or infinities), else by json.dumps."""
    body = _json_body(value)
    return body if body is not None else json.dumps(value).encode()


# orjson (a dependency), found on first use: None when it cannot be imported, or is older than
# the 3.9 pyproject asks for (no orjson.Fragment, which the journal's writer needs).
_orjson: Any = False
# No float 2**63 or more in size (what may have been an integer beyond 64 bits in the text,
# orjson's only difference), walked natively: a Python walk of an embedding's 384 floats was
# ~8% of its request's client CPU (issue 42).
_no_big_float = _core.json_no_big_float


def orjson_module() -> Any:
    """The orjson module, or None: then callers take the standard library's json, as before."""
    global _orjson
    if _orjson is False:
        try:
            import orjson

            _orjson = orjson if hasattr(orjson, "Fragment") else None
        except ImportError:  # pragma: no cover - a dependency; without it, the standard library
            _orjson = None
    return _orjson


def loads(data: bytes | str) -> Any:
    """json.loads(data): the same value, or the same exception."""
    orjson = orjson_module()
    if orjson is not None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
        else:
            if _no_big_float(value):
                return value
    return json.loads(data)
