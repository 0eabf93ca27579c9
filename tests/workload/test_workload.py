"""pytps.workload.synthetic: length specs, synthetic prompts and their calibration."""

import json
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytps
from pytps.errors import ConfigError
from pytps.workload.synthetic import LengthSpec, Prompt, SyntheticWorkload
from pytps.workload.words import WORDS

# ---- LengthSpec ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind, mean, canonical",
    [
        ("512", "fixed", 512, "512"),
        (" 7 ", "fixed", 7, "7"),
        ("512:64", "normal", 512, "512:64"),
        ("100:12.5", "normal", 100, "100:12.5"),
        ("100:0", "normal", 100, "100:0"),
        ("128-1024", "uniform", 576, "128-1024"),
        ("5 - 5", "uniform", 5, "5-5"),
    ],
)
def test_length_spec_parses_each_form(text, kind, mean, canonical):
    spec = LengthSpec.parse(text)
    assert spec.kind == kind
    assert spec.mean == mean
    assert str(spec) == canonical
    assert LengthSpec.parse(str(spec)) == spec


@given(st.one_of(
    st.integers(1, 10**6).map(str),
    st.tuples(st.integers(1, 10**6), st.integers(0, 10**4)).map(lambda t: f"{t[0]}:{t[1]}"),
    st.tuples(st.integers(1, 10**6), st.integers(0, 10**6)).map(lambda t: f"{t[0]}-{t[0] + t[1]}"),
))
def test_length_spec_str_round_trips(text):
    spec = LengthSpec.parse(text)
    assert str(spec) == text
    assert LengthSpec.parse(str(spec)) == spec


def test_length_spec_accepts_int_and_itself():
    assert LengthSpec.parse(64) == LengthSpec("fixed", 64)
    spec = LengthSpec.parse("3-9")
    assert LengthSpec.parse(spec) is spec


@pytest.mark.parametrize("bad", ["", "0", "-3", "1.5", "abc", "5-3", "0-4", "0:3", "5:", ":5", "5:-1", "1e3", "5-", True, None, 2.0])
def test_length_spec_rejects_bad_text_naming_it_and_the_forms(bad):
    with pytest.raises(ConfigError) as e:
        LengthSpec.parse(bad, name="--input-tokens")
    msg = str(e.value)
    assert repr(bad) in msg and "--input-tokens" in msg
    assert "N:SD" in msg and "LO-HI" in msg
    assert isinstance(e.value, ValueError) and isinstance(e.value, pytps.PytpsError)


def test_length_spec_sampling_follows_the_distribution():
    rng = random.Random(1)
    assert {LengthSpec.parse("42").sample(rng) for _ in range(100)} == {42}

    normal = [LengthSpec.parse("500:50").sample(rng) for _ in range(20000)]
    assert all(isinstance(x, int) for x in normal)
    assert statistics.fmean(normal) == pytest.approx(500, abs=2)
    assert statistics.pstdev(normal) == pytest.approx(50, rel=0.03)

    clipped = [LengthSpec.parse("3:10").sample(rng) for _ in range(5000)]
    assert min(clipped) == 1  # clipped, and the clip is actually reached

    uniform = [LengthSpec.parse("10-20").sample(rng) for _ in range(20000)]
    assert set(uniform) == set(range(10, 21))  # both ends included
    assert statistics.fmean(uniform) == pytest.approx(15, abs=0.1)


def test_length_spec_sampling_is_reproducible():
    spec = LengthSpec.parse("100:30")
    a = [spec.sample(random.Random(7)) for _ in range(3)]
    assert a == [spec.sample(random.Random(7)) for _ in range(3)]


# ---- Prompt ----------------------------------------------------------------------------------


def test_prompt_has_both_messages_and_text():
    p = Prompt(3, None, "hello there", 10, 5)
    assert p.messages == [{"role": "user", "content": "hello there"}]
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    q = Prompt(0, msgs, None, None, 5)
    assert q.text == "Be brief.\n\nHi"
    with pytest.raises(ValueError):
        Prompt(0, None, None, None, 5)


# ---- SyntheticWorkload -----------------------------------------------------------------------

ID = 1  # words the request id takes


def body_words(p, prefix_words=0):
    words = p.text.split()
    assert words[prefix_words] == f"[{p.index}]" or words[prefix_words].endswith(f"{p.index}]")
    return words[prefix_words + ID:]


def test_synthetic_is_deterministic_in_seed_and_index():
    a, b = SyntheticWorkload("100-400", "50-60", seed=3), SyntheticWorkload("100-400", "50-60", seed=3)
    c = SyntheticWorkload("100-400", "50-60", seed=4)
    for i in (0, 1, 17, 999):
        assert a.prompt(i) == b.prompt(i)
        assert a.prompt(i).text != c.prompt(i).text
    assert a.prompt(5) == a.prompt(5)  # asking twice changes nothing


def test_synthetic_prompts_use_the_word_list_and_the_output_spec():
    w = SyntheticWorkload(300, "20-30", seed=1)
    vocab = set(WORDS) | set(SyntheticWorkload._INSTRUCTION.split())
    for i in range(50):
        p = w.prompt(i)
        assert p.index == i and p.input_tokens_target == 300
        assert 20 <= p.max_tokens <= 30
        assert set(body_words(p)) <= vocab
        assert p.messages == [{"role": "user", "content": p.text}]
        assert p.planned_tokens == round(len(p.text.split()) * 1.3)
    assert len({w.prompt(i).max_tokens for i in range(50)}) > 3


def test_synthetic_words_are_drawn_without_replacement():
    # Each run of len(WORDS) words is a permutation of the list: prompts of equal length have the
    # same mix of words, which keeps their token counts close together.
    w = SyntheticWorkload(3 * len(WORDS), 10, seed=4)
    body = body_words(w.prompt(0))
    n = len(WORDS)
    assert len(body) > 2 * n
    assert sorted(body[:n]) == sorted(WORDS) and sorted(body[n:2 * n]) == sorted(WORDS)
    assert body[:n] != body[n:2 * n]


def test_synthetic_starts_are_unique_so_prefix_caches_miss():
    w = SyntheticWorkload(200, 10, seed=0)
    starts = [tuple(w.prompt(i).text.split()[:3]) for i in range(500)]
    assert len(set(starts)) == 500
    # The random words alone already differ from the first one on, not only the request id.
    assert len({s[1:] for s in starts}) > 490
    salted = SyntheticWorkload(200, 10, seed=0, salt="run2-")
    assert salted.prompt(4).text.split()[0] == "[run2-4]"
    assert salted.prompt(4).text != w.prompt(4).text


def test_synthetic_shared_prefix_is_the_same_in_every_prompt():
    w = SyntheticWorkload(1000, 10, shared_prefix_tokens=390, seed=2)
    k = round(390 / 1.3)
    prompts = [w.prompt(i).text.split() for i in range(20)]
    assert all(p[:k] == prompts[0][:k] for p in prompts)
    assert prompts[0][k] == "[0]" and prompts[7][k] == "[7]"
    assert len({tuple(p[k + 1:k + 4]) for p in prompts}) == 20
    assert SyntheticWorkload(1000, 10, shared_prefix_tokens=390, seed=3).prompt(0).text.split()[:k] != prompts[0][:k]


def test_synthetic_uncalibrated_estimate_hits_its_own_target():
    w = SyntheticWorkload("50-5000", 10, seed=5)
    for i in range(100):
        p = w.prompt(i)
        assert abs(p.planned_tokens - p.input_tokens_target) <= 2


def _calibrate(w, server, n, start=0):
    for i in range(start, start + n):
        p = w.prompt(i)
        w.calibrate(p.planned_tokens, server(p.text))


def _worst_error(w, server, start, n=200):
    return max(abs(server(w.prompt(i).text) / w.prompt(i).input_tokens_target - 1) for i in range(start, start + n))


def words_server(text):
    """A chat endpoint whose tokenizer takes 1.5 tokens a word and whose template adds 12."""
    return round(len(text.split()) * 1.5) + 12


def bpe_like_server(text):
    """Closer to a real tokenizer: short words 1 token, longer ones 2 or 3, 25 template tokens.
    Its per-word scatter sets a noise floor of a few % on short prompts."""
    return sum(1 if len(w) <= 6 else 2 if len(w) <= 10 else 3 for w in text.split()) + 25


def test_calibration_brings_prompts_within_5_percent_of_target():
    w = SyntheticWorkload("100-4000", 10, seed=11)
    before = _worst_error(w, words_server, 1000)
    _calibrate(w, words_server, 3)
    after = _worst_error(w, words_server, 1000)
    assert before > 0.1  # the prior ratio really was off, so the test can tell
    assert after < 0.05
    assert w.calibration_reports == 3


def test_calibration_against_a_noisy_tokenizer():
    w = SyntheticWorkload("100-4000", 10, seed=11)
    _calibrate(w, bpe_like_server, 10)
    errors = [abs(bpe_like_server(w.prompt(i).text) / w.prompt(i).input_tokens_target - 1) for i in range(1000, 1200)]
    assert statistics.fmean(errors) < 0.01
    assert sum(e < 0.05 for e in errors) >= 0.95 * len(errors)
    assert w.overhead_tokens == pytest.approx(25, abs=10)


def test_calibration_learns_template_overhead_and_ratio():
    w = SyntheticWorkload("200-3000", 10, seed=1)
    _calibrate(w, words_server, 8)
    assert w.tokens_per_word == pytest.approx(1.5, rel=0.01)
    assert w.overhead_tokens == pytest.approx(12, abs=1.5)


def test_calibration_with_a_fixed_target_converges_too():
    # All first reports have the same planned size: slope and overhead cannot be told apart,
    # the ratio fit is used, and it is exact for that size.
    w = SyntheticWorkload(1000, 10, seed=1)
    _calibrate(w, words_server, 3)
    _calibrate(w, words_server, 5, start=3)
    assert _worst_error(w, words_server, 100, n=50) < 0.01


def test_calibration_with_short_prompts_and_heavy_template():
    w = SyntheticWorkload("40-120", 10, seed=1)
    server = lambda text: round(len(text.split()) * 1.2) + 25  # noqa: E731
    _calibrate(w, server, 6)
    assert _worst_error(w, server, 500) < 0.05


def test_calibration_ignores_missing_reports_and_keeps_request_words():
    w = SyntheticWorkload(2000, 10, seed=1)
    short_body = body_words(w.prompt(42))
    for planned, reported in [(None, 10), (100, None), (0, 10), (100, 0), (100, -5)]:
        w.calibrate(planned, reported)
    assert w.calibration_reports == 0
    _calibrate(w, lambda text: 3 * len(text.split()), 3)
    long_body = body_words(w.prompt(42))
    instruction = SyntheticWorkload._INSTRUCTION.split()
    short_body, long_body = short_body[: -len(instruction)], long_body[: -len(instruction)]
    assert len(long_body) < len(short_body)  # 3 tokens a word: fewer words needed
    assert short_body[: len(long_body)] == long_body


def test_synthetic_tiny_targets_still_make_a_prompt():
    w = SyntheticWorkload(1, 1, seed=0)
    p = w.prompt(0)
    assert p.text.split()[0] == "[0]" and len(p.text.split()) == 2
    assert "story" not in SyntheticWorkload(20, 1).prompt(0).text  # no room for the instruction
    assert SyntheticWorkload(200, 1).prompt(0).text.endswith(SyntheticWorkload._INSTRUCTION)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(input_tokens="abc", output_tokens=1), "input tokens 'abc'"),
        (dict(input_tokens=10, output_tokens="0"), "output tokens '0'"),
        (dict(input_tokens=100, output_tokens=1, shared_prefix_tokens=100), "shared prefix"),
        (dict(input_tokens=100, output_tokens=1, shared_prefix_tokens=-1), "shared prefix"),
        (dict(input_tokens=100, output_tokens=1, tokens_per_word=0), "tokens per word"),
        (dict(input_tokens=100, output_tokens=1, salt="a b"), "salt"),
    ],
)
def test_synthetic_rejects_bad_configuration(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        SyntheticWorkload(**kwargs)


def test_synthetic_rejects_bad_index_and_describes_itself():
    w = SyntheticWorkload("10:2", "5-9", seed=9)
    for bad in (-1, 1.0, "3", True):
        with pytest.raises(ValueError):
            w.prompt(bad)
    d = w.describe()
    assert d["kind"] == "synthetic" and d["input_tokens"] == "10:2" and d["output_tokens"] == "5-9" and d["seed"] == 9
    json.dumps(d)
