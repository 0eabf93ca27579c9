"""An embeddings body's vectors counted instead of read (_core.json_empty_float_vectors, issue 42):
the emptied text reads as json.loads reads the body, each counted vector emptied to [] and each a
list of that many finite floats; and read_body's verdict is the one it gives the body read whole,
over bodies of every shape the generator below writes (whitespace, escaped and repeated keys,
every kind of number literal, NaN and Infinity, truncations)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pytps._native import _core
from pytps.measure import bodies
from pytps.measure.bodies import read_body
from pytps.measure.records import RequestRecord

_WS = st.sampled_from(["", " ", "\n", "\t ", "\r\n  "])
_NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.6f}"),
    st.builds(lambda m, e, c: f"{m}{c}{e:+d}", st.integers(-99, 99), st.integers(-400, 400), st.sampled_from("eE")),
    st.builds(lambda d, f, e: f"{d}.{f}e{e}", st.sampled_from(["1", "17", "9" * 20, "1" + "0" * 300]),
              st.sampled_from(["0", "5", "7976931348623157"]), st.integers(-20, 320)),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["-0", "0.0", "-0.0", "1e308", "1.7976931348623157e308", "1.8e308", "-1e309", "1e-400",
                     "1e0000001", "2.5E-0000007", "NaN", "Infinity", "-Infinity", "01.5", "1.", ".5", "+1.0"]),
)  # fmt: skip


@st.composite
def _array(draw):
    items = draw(st.lists(_NUMBERS | st.sampled_from(['"x"', "null", "[1.0]", "true"]) if draw(st.booleans())
                          else _NUMBERS, max_size=6))  # fmt: skip
    return "[" + ",".join(draw(_WS) + x + draw(_WS) for x in items) + draw(_WS) + "]"


_KEYS_EMBEDDING = st.sampled_from(["embedding", "embedding", "emb\\u0065dding", "Embedding", "embeddings"])
_VALUES = st.sampled_from(['"embedding"', "null", "3", '{"a": [1.0]}', '"\\u00e9"'])


@st.composite
def _element(draw):
    members = []
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["index", "object", "embedding", "embedding", "embedding", "x"]))
        if key == "embedding":
            key = draw(_KEYS_EMBEDDING)
            value = draw(_array()) if draw(st.integers(0, 5)) else draw(_VALUES)
        elif key == "index":
            value = str(draw(st.integers(-1, 4)))
        else:
            value = draw(_VALUES)
        members.append(f'{draw(_WS)}"{key}"{draw(_WS)}:{draw(_WS)}{value}{draw(_WS)}')
    return "{" + ",".join(members) + "}"


@st.composite
def _body(draw):
    members = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(["data", "data", "object", "model", "usage", "d\\u0061ta", "id"]))
        if key in ("data", "d\\u0061ta"):
            elements = draw(st.lists(_element() | _VALUES, max_size=4)) if draw(st.integers(0, 6)) else []
            value = "[" + ",".join(draw(_WS) + e + draw(_WS) for e in elements) + "]"
            if not draw(st.integers(0, 8)):
                value = draw(_VALUES)
        elif key == "usage":
            value = '{"prompt_tokens": 7, "total_tokens": 7}'
        else:
            value = draw(_VALUES)
        members.append(f'{draw(_WS)}"{key}"{draw(_WS)}:{value}')
    text = draw(_WS) + "{" + ",".join(members) + "}" + draw(_WS)
    cut = draw(st.integers(0, 12))
    if cut == 0:
        text = text[: draw(st.integers(0, len(text)))]
    elif cut == 1:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from([",", "]", "}", '"', "\\", "\x00", "é", "\ud800"])) + text[at:]
    return text.encode("utf-8", "surrogatepass")


def _emptied(value, counted):
    """json.loads's value of the body with the counted vectors emptied."""
    data = value["data"]
    for i in counted:
        data[i]["embedding"] = []
    return value


@settings(max_examples=400, deadline=None)
@given(_body())
def test_emptied_text_reads_as_the_body_with_those_vectors_emptied(body):
    got = _core.json_empty_float_vectors(body)
    if got is None:
        return
    small, counted = got
    whole = json.loads(body)
    assert counted, "a result always counts a vector"
    for i, n in counted.items():
        vector = whole["data"][i]["embedding"]
        assert type(vector) is list and len(vector) == n
        assert all(type(x) is float and math.isfinite(x) for x in vector)
    assert json.loads(small) == _emptied(whole, counted)


def _verdict(body: bytes, api: str, dimensions: int | None = None) -> dict:
    rec = RequestRecord(index=0, stream=False, inputs=2, dimensions=dimensions, request_bytes=10_000)
    rec.body, rec.done = body, True
    read_body(rec, api)
    keep = ("error", "error_detail", "embedding_dim", "results", "usage", "usage_implausible", "response_id", "model")
    return {k: getattr(rec, k) for k in (*keep, "done")}


def _verdict_read_whole(body: bytes, dimensions: int | None) -> dict:
    """An embeddings body's verdict with no vector counted: the body read whole, as before."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bodies, "_empty_float_vectors", lambda _body: None)
        return _verdict(body, "openai-embeddings", dimensions)


@settings(max_examples=400, deadline=None)
@given(_body(), st.sampled_from([None, 2, 3]))
def test_the_verdict_is_the_one_the_body_read_whole_gives(body, dimensions):
    whole = _verdict_read_whole(body, dimensions)
    counted = _core.json_empty_float_vectors(body)
    event("counted" if counted is not None else "read whole")
    assert _verdict(body, "openai-embeddings", dimensions) == whole


@st.composite
def _answer(draw):
    """An answer to 2 inputs as servers write one: two vectors, of any numbers and lengths."""
    vectors = [draw(_array()) for _ in range(2)] if draw(st.booleans()) else [draw(_array())] * 2
    elements = [f'{{"object":"embedding","index":{i},"embedding":{v}}}' for i, v in enumerate(vectors)]
    text = '{"object":"list","data":[' + ",".join(elements) + '],"model":"m","usage":{"prompt_tokens":7}}'
    return text.encode()


@settings(max_examples=300, deadline=None)
@given(_answer(), st.sampled_from([None, 1, 3]))
def test_an_answers_verdict_is_the_one_the_body_read_whole_gives(body, dimensions):
    whole = _verdict_read_whole(body, dimensions)
    event("counted" if _core.json_empty_float_vectors(body) is not None else "read whole")
    event("accepted" if whole["error"] is None else "refused")
    assert _verdict(body, "openai-embeddings", dimensions) == whole


def test_the_common_bodies_are_counted():
    """The emulator's and OpenAI's shape: every vector counted, the verdict unchanged."""
    obj = {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": [0.25, -1e-05, 3.5]} for i in range(2)],
        "model": "m",
        "usage": {"prompt_tokens": 14, "total_tokens": 14},
    }
    for body in (json.dumps(obj).encode(), json.dumps(obj, separators=(",", ":")).encode(),
                 json.dumps(obj, indent=2).encode()):  # fmt: skip
        small, counted = _core.json_empty_float_vectors(body)
        assert counted == {0: 3, 1: 3} and json.loads(small)["data"][1] == {**obj["data"][1], "embedding": []}
        assert _verdict(body, "openai-embeddings")["embedding_dim"] == 3


@pytest.mark.parametrize(
    "body",
    [
        b"[]", b"{}", b'{"data": []}', b'{"data": [{"embedding": []}]}', b'{"data": [{"embedding": [1, 2]}]}',
        b'{"data": [{"embedding": [1e308]}]}', b'{"data": [{"embedding": [NaN]}]}',
        b'{"data": [{"embedding": [1.0], "embedding": [2.0]}]}', b'{"data": [{"embedding": [1.0]}], "data": []}',
        b'{"data": [{"embedding": [1.0]}]} x', b'\xef\xbb\xbf{"data": [{"embedding": [1.0]}]}',
        b'{"data": [{"embedding": [1.0, 2]}]}', b'{"data": [{"embedding": [1.0]}]',
    ],
)  # fmt: skip
def test_what_is_left_to_the_whole_read(body):
    """Not strict JSON, no vector of floats only, a float that may not be finite, a repeated key:
    nothing is counted."""
    assert _core.json_empty_float_vectors(body) is None


def test_an_escaped_key_is_the_key_it_decodes_to():
    small, counted = _core.json_empty_float_vectors(b'{"d\\u0061ta": [{"emb\\u0065dding": [0.5, 1.5]}]}')
    assert counted == {0: 2} and json.loads(small) == {"data": [{"embedding": []}]}
