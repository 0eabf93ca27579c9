"""The native journal line writer (_core.json_line, issue 42) writes the bytes json.dumps writes,
value for value, over every code point, float and integer size; and it refuses (None) what only
the Python encoders decide: numpy scalars, subclasses, keys that are not str, deep nesting."""

from __future__ import annotations

import enum
import json
import math
import sys
from collections import OrderedDict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytps.measure.fast_json import json_line
from pytps.results import folder


def _dumps(value):
    return json.dumps(folder._jsonable(value), separators=(",", ":"))


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(1 << 200), max_value=1 << 200), st.floats(),
    st.floats(min_value=-1e-3, max_value=1e-3), st.floats(min_value=1e14, max_value=1e18), st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x80)),
    st.text(alphabet=st.characters(blacklist_categories=())),  # surrogates and every plane
)  # fmt: skip
_TREES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=())), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_TREES)
def test_plain_values_are_written_as_json_dumps_writes_them(value):
    assert json_line(value) == _dumps(value)


def test_every_code_point_and_float_form():
    text = "".join(chr(c) for c in range(0x800)) + "\ud800\udfff\U0001f600\U0010ffff\u2028\ufeff"
    floats = [0.0, -0.0, 1e-05, 2.5e-05, 1e-4, 0.1, 1 / 3, 1e15, 1e16, 1.5e300, 5e-324, 1.7976931348623157e308,
              -1e-7, 123456789.0, math.nan, math.inf, -math.inf]  # fmt: skip
    ints = [0, -1, (1 << 63) - 1, -(1 << 63), 1 << 63, -(1 << 64) - 1, 10**40, True, False, None]
    value = {text: text, "floats": floats, "ints": ints, "empty": [{}, [], (), ""]}
    assert json_line(value) == _dumps(value)
    assert json_line(value) == folder.line_text(value)


class _Str(str):
    pass


class _Int(int):
    pass


class _Kind(enum.IntEnum):
    A = 1


def test_what_only_the_python_encoders_decide_is_refused():
    deep: list = []
    for _ in range(100):
        deep = [deep]
    for value in [
        {"x": np.int64(1)}, {"x": np.float64(0.5)}, {"x": np.float32(0.5)}, {"x": _Str("a")}, {"x": _Int(2)},
        {"x": _Kind.A}, {1: 2}, {None: 1}, {"x": OrderedDict(a=1)}, {"x": {1.5}}, {"x": b"bytes"}, deep,
    ]:  # fmt: skip
        assert json_line(value) is None, value
        try:
            want = _dumps(value)
        except (TypeError, RecursionError):
            continue
        assert folder.line_text(value) == want  # the Python encoders wrote it instead


def test_a_value_is_not_leaked_or_changed():
    value = {"a": [1.5, "x" * 100, 1 << 80], "b": {"c": None}}
    before = [sys.getrefcount(v) for v in (value, value["a"], value["b"])]
    for _ in range(1000):
        json_line(value)
    assert [sys.getrefcount(v) for v in (value, value["a"], value["b"])] == before
    assert value == {"a": [1.5, "x" * 100, 1 << 80], "b": {"c": None}}


@settings(max_examples=200, deadline=None)
@given(_TREES)
def test_a_request_body_is_what_json_dumps_wrote(value):
    from pytps.measure.fast_json import dumps_body

    assert dumps_body(value) == json.dumps(value).encode()


def test_a_body_json_dumps_must_write_is_left_to_it():
    from pytps._native import _core

    for value in [{"t": math.nan}, {"t": [math.inf]}, {"x": np.int64(1)}, {1: 2}]:
        assert _core.json_body(value) is None
    body = {"model": "m", "messages": [{"role": "user", "content": 'hé "x"'}], "max_tokens": 1, "t": 0.5}
    assert _core.json_body(body) == json.dumps(body).encode()


def _has_big_float(value):
    if type(value) is float:
        return not (-(2.0**63) < value < 2.0**63)
    if type(value) is dict:
        return any(_has_big_float(v) for v in value.values())
    if type(value) is list:
        return any(_has_big_float(v) for v in value)
    return False


@settings(max_examples=200, deadline=None)
@given(_TREES | st.lists(st.floats(), max_size=50) | st.lists(st.floats(min_value=-1e19, max_value=1e19), max_size=50))
def test_a_big_float_is_found_wherever_it_is(value):
    from pytps._native import _core

    assert _core.json_no_big_float(value) is not _has_big_float(value)


def test_a_big_float_is_found_at_its_edges():
    from pytps._native import _core

    big = 2.0**63
    for x, ok in [(big, False), (-big, False), (math.nextafter(big, 0), True), (-math.nextafter(big, 0), True),
                  (math.nan, False), (math.inf, False), (1e19, False), (0.5, True)]:  # fmt: skip
        assert _core.json_no_big_float({"a": [{"b": [x]}]}) is ok, x
    deep: list = [big]
    for _ in range(100):
        deep = [deep]
    assert _core.json_no_big_float(deep) is False  # too deep to walk: read again by json.loads


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats() | st.integers(-3, 3) | st.booleans() | st.none(), max_size=40))
def test_a_vector_of_floats_is_judged_in_one_pass(vector):
    from pytps._native import _core

    got = _core.json_float_vector_length(vector)
    if not vector or any(type(x) is not float for x in vector):
        assert got is None
    else:
        assert got == (len(vector) if all(math.isfinite(x) for x in vector) else -1)


def test_every_kind_of_float_is_written_as_its_repr():
    # The native writer's own shortest-digits layout (std::to_chars where the standard library has
    # it) against float.__repr__: random bit patterns cover every exponent, rounded decimals the
    # short forms a server's timings take, integers the ".0" and the e+XX switch at 1e16.
    import random
    import struct

    rng = random.Random(42)
    values = []
    for _ in range(20000):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        values += [x, -x, round(rng.random() * 10 ** rng.randint(-9, 20), rng.randint(0, 12)),
                   float(rng.randint(0, 10**18)), rng.random() * 10.0 ** rng.randint(-320, 300)]  # fmt: skip
    values = [v for v in values if math.isfinite(v)]
    got = json_line(values)
    assert got == "[" + ",".join(map(repr, values)) + "]"


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_its_repr(x):
    assert json_line({"x": x}) == '{"x":' + repr(x) + "}"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\"\\\n\x7f\xe9 ", max_size=300), max_size=12), st.integers(0, 3000))
def test_runs_of_plain_characters_and_the_escapes_between_them(texts, pad):
    """A one-byte string is written in runs between the characters it escapes, into a buffer that
    grows past its first size (2,048 bytes for a line, 1,024 for a body)."""
    from pytps._native import _core

    value = {t: ["x" * pad, t] for t in texts} | {"k" * pad: texts}
    assert json_line(value) == _dumps(value)
    assert _core.json_body(value) == json.dumps(value).encode()


_NAMES = st.lists(st.sampled_from(["a", "b", "t_sched_ns", "usage", "é", "\n"]), unique=True, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "x", "usage", "ok", "ü"]), _TREES, max_size=4), _NAMES, st.data())
def test_a_line_of_fields_and_record_values_is_the_merged_dicts_line(fields, names, data):
    """json_line_of(fields, names, values): the line of {**fields, **dict(zip(names, values))} and
    a newline as ASCII bytes, or None where that line is not json_line's or a name is already a key of fields."""
    from pytps._native import _core

    values = tuple(data.draw(_TREES) for _ in names)
    got = _core.json_line_of(fields, tuple(names), values)
    merged = {**fields, **dict(zip(names, values, strict=True))}
    if any(n in fields for n in names) or json_line(merged) is None:
        assert got is None
    else:
        assert got == (json_line(merged) + "\n").encode() == (_dumps(merged) + "\n").encode("ascii")
    assert _core.json_line_of(fields, tuple(names), (*values, 1)) is None  # lengths differ
