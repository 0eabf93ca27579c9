"""Issue 42's shortcuts for short requests give what the general code gives, value for value:
the token layout, decode span and ITL samples of a request with fewer than two events (no numpy
on the way), the journal's encoder made once, the prompt words drawn without copying the word
list, and a fixed-length prompt made without seeding a generator for its lengths. Each is checked
against the code as main had it before (copied here as the reference)."""

from __future__ import annotations

import itertools
import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytps.measure.metrics import decode_span, itl_samples, itl_token_weights_ns, token_layout
from pytps.results import folder
from pytps.workload.synthetic import WORDS, SyntheticWorkload, _shuffled_words


def _old_trusted(n, per_event_tokens, tokens):
    per_event = np.asarray(per_event_tokens, dtype=np.int64)
    if n and len(per_event) == n and (per_event >= 0).all() and int(per_event.sum()) == tokens:
        return per_event
    return None


def _old_layout(n, per_event_tokens, tokens):
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    trusted = _old_trusted(n, per_event_tokens, tokens)
    if trusted is not None:
        return trusted
    i = np.arange(n + 1, dtype=np.int64)
    return np.diff(-((-i * tokens) // n))


def _old_span(times_ns, layout):
    carrying = np.flatnonzero(np.asarray(layout) > 0)
    if len(carrying) < 2:
        return None
    first, last = int(carrying[0]), int(carrying[-1])
    return int(np.asarray(layout)[first + 1 :].sum()), int(times_ns[last]) - int(times_ns[first])


def _old_itl(times_ns, layout):
    carrying = np.asarray(layout) > 0
    t = np.asarray(times_ns, dtype=np.int64)[carrying]
    k = np.asarray(layout, dtype=np.int64)[carrying]
    if len(t) < 2:
        return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
    return np.diff(t) / k[1:], k[1:]


def _same_array(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_layout_span_and_itl_match_the_general_code(n):
    for tokens in (0, 1, 2, 7, 1000):
        for per_event in itertools.chain(
            [[], [-1] * n, [tokens] + [0] * (n - 1) if n else []],
            (list(c) for c in itertools.product([-1, 0, 1, 2], repeat=n)),
        ):
            for source in (per_event, np.asarray(per_event, dtype=np.int32)):
                got, want = token_layout(n, source, tokens), _old_layout(n, source, tokens)
                _same_array(got, want)
                times = np.arange(n, dtype=np.int64) * 1000 + 5
                assert decode_span(times, got) == _old_span(times, want)
                for g, w in zip(itl_samples(times, got), _old_itl(times, want), strict=True):
                    _same_array(g, w)
                values, counts = itl_token_weights_ns(times, got)
                assert values.dtype == np.int64 and len(values) == len(counts)


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70), st.floats(),
    st.floats(min_value=-1e-3, max_value=1e-3), st.floats(min_value=1e14, max_value=1e18), st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x80)),
    st.integers(min_value=-5, max_value=5).map(np.int64), st.floats(width=32).map(np.float32),
)  # fmt: skip
_TREES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x80)), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _TREES, max_size=8))
def test_a_journal_line_is_what_the_standard_encoder_wrote(fields):
    assert folder.line_text(fields) == json.dumps(folder._jsonable(fields), separators=(",", ":"))


def test_every_printable_character_and_float_form_is_written_alike():
    fields = {chr(c): chr(c) * 2 for c in range(0x20, 0x7F)}
    fields.update({f"f{i}": x for i, x in enumerate([0.0, -0.0, 1e-05, 2.5e-05, 1e-4, 0.1, 1 / 3, 1e15, 1e16, 1.5e300,
                                                     5e-324, 1.7976931348623157e308, math.nan, math.inf, -math.inf])})  # fmt: skip
    fields["ints"] = [0, -1, (1 << 63) - 1, -(1 << 63), True, False, None]
    want = json.dumps(folder._jsonable(fields), separators=(",", ":"))
    assert folder.line_text(fields) == want
    orjson = pytest.importorskip("orjson")
    if hasattr(orjson, "Fragment"):  # the fast encoder wrote it, not the fallback
        assert orjson.dumps(folder._for_orjson(fields, orjson.Fragment)).decode() == want
    fields["ints"].append(1 << 64)  # beyond orjson's integers: the standard encoder writes the line
    assert folder.line_text(fields) == json.dumps(folder._jsonable(fields), separators=(",", ":"))


def test_the_journal_encoder_writes_what_json_dumps_wrote():
    lines = [
        {"index": 3, "ok": True, "ttft_s": 0.000170654, "tiny": 1e-05, "big": 1.5e300, "none": None,
         "text": "é \"q\" \u2028 \n", "usage": {"prompt_tokens": 26}, "list": [1, 2.5, "x"], "nested": {"a": {"b": []}}},
        {"verdict_of": 1, "useful": False, "why_not_useful": "wrong", "cost": 0.25},
    ]  # fmt: skip
    for line in lines:
        assert folder._compact(line) == json.dumps(line, separators=(",", ":"))


def _old_shuffled(rng, k):
    words, n, pool, i = [], len(WORDS), list(WORDS), 0
    while len(words) < k:
        if i == n:
            pool, i = list(WORDS), 0
        j = i + rng.randrange(n - i)
        pool[i], pool[j] = pool[j], pool[i]
        words.append(pool[i])
        i += 1
    return words


def test_prompt_words_are_the_words_the_list_copy_drew():
    # Past the list's end too (k > len(WORDS)): the stream starts a fresh shuffle there.
    for seed in range(200):
        k = random.Random(seed).randrange(1, 3 * len(WORDS))
        assert _shuffled_words(random.Random(f"s{seed}"), k) == _old_shuffled(random.Random(f"s{seed}"), k)


def test_a_random_subclass_keeps_its_own_draws():
    class Counting(random.Random):
        def randrange(self, *args, **kwargs):  # type: ignore[override]
            self.calls = getattr(self, "calls", 0) + 1
            return 0

    rng = Counting(5)
    assert _shuffled_words(rng, 7) == list(WORDS[:7]) and rng.calls == 7


@pytest.mark.parametrize("lengths", [("16", "1"), ("40", "3"), ("10-30", "2"), ("20:5", "1-4")])
def test_prompts_are_the_ones_drawn_before(lengths):
    w = SyntheticWorkload(input_tokens=lengths[0], output_tokens=lengths[1], seed=11)
    for i in range(50):
        rng = random.Random(f"pytps:{w.seed}:{i}:lengths")
        want = w.sized_prompt(i, w.input_tokens.sample(rng), w.output_tokens.sample(rng))
        assert w.prompt(i) == want


@pytest.mark.parametrize("kernel", [None, 123, 0])
@pytest.mark.parametrize("tokens", [-1, 0, 1, 5, 1 << 31])
def test_one_event_row_is_the_structured_rows_bytes(kernel, tokens):
    from pytps.measure.event_rows import event_row_bytes, event_rows
    from pytps.measure.records import RequestRecord

    for n in (1, 2):
        rec = RequestRecord(index=41, t_send_ns=10)
        rec.output_times_ns = np.arange(n, dtype=np.int64) + 1_000_000_007
        rec.output_kinds = np.full(n, 2, dtype=np.uint8)
        rec.output_tokens = np.full(n, min(tokens, (1 << 31) - 1), dtype=np.int32)
        rec.output_chars = np.full(n, 17, dtype=np.int32)
        if kernel is not None:
            rec.output_kernel_times_ns = np.full(n, kernel, dtype=np.int64)
        layout = np.full(n, tokens, dtype=np.int64)
        rows = event_rows(rec, layout)
        data, stamped = event_row_bytes(rec, layout)
        assert data == rows.tobytes()
        assert stamped == bool((rows["t_kernel_ns"] >= 0).any())


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(1 << 66), max_value=1 << 66) | st.floats() | st.text()
    | st.floats(min_value=-1e25, max_value=1e25) | st.integers(min_value=-(1 << 64) - 5, max_value=-(1 << 62)),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=24,
)  # fmt: skip


def _same_value(a, b):
    assert type(a) is type(b)
    if isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same_value(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_value(a[k], b[k])
    else:
        assert a == b


@settings(max_examples=80, deadline=None)
@given(_JSON_VALUES, st.booleans())
def test_fast_json_reads_what_json_loads_reads(value, as_bytes):
    from pytps.measure import fast_json

    text = json.dumps(value)
    data = text.encode() if as_bytes else text
    _same_value(fast_json.loads(data), json.loads(data))


@pytest.mark.parametrize(
    "text",
    ['{"a":1,"a":2}', "[1e400, -1e400]", "[NaN, Infinity]", '{"x":-0, "y":-0.0}', "[18446744073709551616]",
     "[-9223372036854775809, 0.5]", '{"u": [1, 99999999999999999999999]}', "[1e19, 2]", "[[1.5], [2.5]]",
     '[1, "a"]', "[2.2250738585072011e-308, 1.0000000000000002, 0.1e1, 1E2]", '"\\ud800"', "\ufeff[1]",
     "[1,]", "nul", ""],
)  # fmt: skip
def test_fast_json_gives_the_same_value_or_the_same_error(text):
    from pytps.measure import fast_json

    for data in (text, text.encode("utf-8", "surrogatepass")):
        try:
            want = json.loads(data)
        except Exception as exc:  # noqa: BLE001 - the same class of error is the point
            with pytest.raises(type(exc)):
                fast_json.loads(data)
        else:
            _same_value(fast_json.loads(data), want)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats() | st.floats(min_value=-1e308, max_value=1e308), min_size=1, max_size=40))
def test_a_vector_is_judged_as_numpy_judged_it(vector):
    from pytps.measure.bodies import _vector_length

    assert _vector_length(vector) == (len(vector) if np.isfinite(np.array(vector, dtype=np.float64)).all() else -1)


def test_metrics_as_fields_are_as_dict_without_the_copies():
    from dataclasses import asdict, replace

    from pytps.measure.metrics import RequestMetrics

    base = RequestMetrics(3, False, True, None, 200, 10, 20, 0.1, 0.1, 0.2, None, None, 5.0, 1, "usage", 1, 1.0, 14,
                          None, 1e-05, None, None, None)  # fmt: skip
    timings = {"source": "llama.cpp", "fields": {"prompt_n": 14}, "list": [1, 2]}
    for m in (base, replace(base, server_timings=timings), replace(base, server_timings=(1, [2]))):
        got = m.as_fields()
        assert got == m.as_dict() == asdict(m) and list(got) == list(asdict(m))
    assert replace(base, server_timings=timings).as_fields()["server_timings"] is timings  # shared, not copied



def test_metrics_as_fields_keep_the_field_order_whatever_the_objects_dict_holds():
    """as_fields() copies the object's own dict when it holds the fields in their order; a dict in
    another order, or with an attribute more, still gives the fields in their order and no more."""
    from dataclasses import asdict, fields

    from pytps.measure.metrics import RequestMetrics

    base = RequestMetrics(3, False, True, None, 200, 10, 20, 0.1, 0.1, 0.2, None, None, 5.0, 1, "usage", 1, 1.0, 14,
                          None, 1e-05, None, None, None)  # fmt: skip
    names = [f.name for f in fields(RequestMetrics)]
    reordered = object.__new__(RequestMetrics)
    reordered.__dict__ = {k: vars(base)[k] for k in reversed(names)}
    extra = RequestMetrics(**vars(base))
    extra.note = "not a field"  # type: ignore[attr-defined]
    unusual = RequestMetrics(**{**vars(base), "output_tokens": np.int64(1)})
    for m in (base, reordered, extra, unusual):
        got = m.as_fields()
        assert list(got) == names and got == asdict(m)
    assert type(unusual.as_fields()["output_tokens"]) is np.int64  # as_dict's copy, as before
    assert base.as_fields() is not vars(base)  # a copy: the journal's extra keys stay out of the object

def test_a_record_filled_by_readout_is_the_one_filled_attribute_by_attribute():
    import dataclasses

    import pytps
    from pytps.measure.records import RequestRecord

    stream = (b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
              b'data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":'
              b'{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],'
              b'"usage":{"prompt_tokens":3,"completion_tokens":9999,"total_tokens":4}}\n\ndata: [DONE]\n\n')  # fmt: skip

    class Attributes:  # a recorder stand-in without readout()
        def __init__(self, rec):
            self._rec = rec

        def __getattr__(self, name):
            if name == "readout":
                raise AttributeError(name)
            return getattr(self._rec, name)

    recorder = pytps.StreamRecorder("openai-chat")
    recorder.feed(stream, 1000)
    recorder.close(2000)
    a, b = RequestRecord(index=1, max_tokens=2), RequestRecord(index=1, max_tokens=2)
    a.fill_from_recorder(recorder)
    b.fill_from_recorder(Attributes(recorder))
    assert a.usage_implausible  # the implausible count set aside both ways
    for f in dataclasses.fields(RequestRecord):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            _same_array(x, y)
        else:
            assert x == y, f.name


def test_messages_are_copied_as_deepcopy_copies_them():
    import copy

    from pytps.workload.request_formats import _copy_messages

    text = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi", "name": "u"}]
    parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    for messages in (text, parts, [], [{"role": "user", "content": None}], [{1: "a"}]):
        got = _copy_messages(messages)
        assert got == copy.deepcopy(messages) and got is not messages
        for a, b in zip(got, messages, strict=True):
            assert a is not b  # each message its own: a request's images go into its copy only
    nested = _copy_messages(parts)
    nested[0]["content"].append("x")
    assert parts[0]["content"] == [{"type": "text", "text": "hi"}]


@pytest.mark.parametrize(
    "kind",
    [
        {},
        {"warmup": True, "t_sched_ns": 5, "max_tokens": 3, "sent_request_id": "r-1", "stream": False, "inputs": 4},
        {"top_n": 2, "dimensions": 64, "images": 1, "image_bytes": 99, "image_pixels": 640, "usage_requested": False},
    ],
)
def test_a_specs_record_is_the_one_its_constructor_makes(kind):
    from pytps.measure.records import RequestRecord
    from pytps.transport.base import RequestSpec

    spec = RequestSpec(index=7, path="/v1/x", body=b"{}" * 5, headers={}, dialect="openai-chat", **kind)
    a, b = spec.new_record("native"), spec.new_record("native")
    want = RequestRecord(
        index=spec.index, warmup=spec.warmup, t_sched_ns=spec.t_sched_ns,
        prompt_tokens_planned=spec.prompt_tokens_planned, max_tokens=spec.max_tokens,
        usage_requested=spec.usage_requested, sent_request_id=spec.sent_request_id, request_bytes=len(spec.body),
        transport="native", stream=spec.stream, inputs=spec.inputs, top_n=spec.top_n, dimensions=spec.dimensions,
        images=spec.images, image_bytes=spec.image_bytes, image_pixels=spec.image_pixels,
    )  # fmt: skip
    assert type(a) is RequestRecord
    assert list(vars(a)) == list(vars(want))  # the same attributes, in the same order
    assert {k: v for k, v in vars(a).items() if not isinstance(v, np.ndarray)} == {
        k: v for k, v in vars(want).items() if not isinstance(v, np.ndarray)
    }
    for name, value in vars(want).items():
        if isinstance(value, np.ndarray):
            assert getattr(a, name) is value  # the one shared empty array of its dtype, as the constructor's
            assert len(value) == 0
        elif isinstance(value, (dict, list)):
            assert getattr(a, name) is not getattr(b, name)  # each record its own
    a.usage["x"] = 1
    a.phases_ns["connect"] = 2
    assert b.usage == {} and b.phases_ns == {} and spec.new_record("native").usage == {}


def test_measured_metrics_are_the_ones_their_constructor_makes():
    from dataclasses import fields

    from pytps.measure.metrics import RequestMetrics, measure
    from pytps.measure.records import RequestRecord

    one = RequestRecord(index=1, t_send_ns=10, t_sched_ns=5, t_submit_ns=8, status=200, max_tokens=1)
    one.output_times_ns = np.array([1_000_010], dtype=np.int64)
    one.output_tokens = np.array([-1], dtype=np.int32)
    one.first_output_ns = one.first_answer_ns = one.last_output_ns = one.end_ns = 1_000_010
    one.usage = {"prompt_tokens": 17, "completion_tokens": 1}
    one.server_timings = ("llama.cpp", '{"prompt_n":17,"prompt_ms":0.5,"predicted_n":1,"predicted_ms":0.0}')
    many = RequestRecord(index=2, t_send_ns=0, status=200, max_tokens=5)
    many.output_times_ns = np.array([100, 300, 600, 1000], dtype=np.int64)
    many.output_tokens = np.array([1, 1, 2, 1], dtype=np.int32)
    many.first_output_ns, many.end_ns = 100, 1000
    body = RequestRecord(index=3, t_send_ns=0, status=200, stream=False, inputs=4, embedding_dim=384, end_ns=50)
    failed = RequestRecord(index=4, warmup=True, error="http_500", status=500)
    names = [f.name for f in fields(RequestMetrics)]
    for rec in (one, many, body, failed):
        m, _ = measure(rec)
        assert type(m) is RequestMetrics and list(vars(m)) == names
        assert m == RequestMetrics(**vars(m)) and m.as_fields() == RequestMetrics(**vars(m)).as_fields()
