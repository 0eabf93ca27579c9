"""The synthetic workload's prompt words drawn natively (_core.shuffled_words, issue 42) are the
words random.Random's draws give (_shuffled_words, the reference), seed for seed and word for word."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pytps._native import _core
from pytps.workload.synthetic import WORDS, SyntheticWorkload, _seeded_words, _shuffled_words

# Lengths across the generator's first twist (227 outputs made early, then the rest) and past the
# word list's end (a fresh shuffle starts there).
_LENGTHS = st.sampled_from([1, 2, 11, 226, 227, 228, 624, 625, len(WORDS) - 1, len(WORDS), len(WORDS) + 1])


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40), k=_LENGTHS | st.integers(min_value=0, max_value=3 * len(WORDS)))
def test_seeded_words_are_the_words_random_draws(text, k):
    assert _seeded_words(text, k) == _shuffled_words(random.Random(text), k)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(min_value=0, max_value=1 << 2100), zeros=st.integers(0, 5), k=_LENGTHS)
def test_any_integer_seed_gives_random_s_draws(seed, zeros, k):
    # Leading zero bytes, zero itself, one 32-bit word or many (a key longer than the 624-word state).
    data = b"\0" * zeros + seed.to_bytes((seed.bit_length() + 7) // 8, "big")
    assert _core.shuffled_words(data, WORDS, k) == _shuffled_words(random.Random(seed), k)


def test_a_short_word_list_and_its_reshuffles():
    words = ("a", "b", "c")
    for s in range(50):
        text = f"s{s}".encode()
        seed = text + hashlib.sha512(text).digest()
        assert _core.shuffled_words(seed, words, 10) == _reference(words, random.Random(int.from_bytes(seed)), 10)


def _reference(words, rng, k):
    out, pool, i = [], list(words), 0
    while len(out) < k:
        if i == len(words):
            pool, i = list(words), 0
        j = i + rng.randrange(len(words) - i)
        pool[i], pool[j] = pool[j], pool[i]
        out.append(pool[i])
        i += 1
    return out


def test_prompts_keep_their_words():
    w = SyntheticWorkload(input_tokens="200", output_tokens="1", seed=11, shared_prefix_tokens=40)
    for i in range(30):
        parts = w.prompt(i).text.split(" ")
        tag = next(n for n, p in enumerate(parts) if p.startswith("["))
        assert tag > 0 and parts[:tag] == _shuffled_words(random.Random("pytps:11:prefix"), tag)
        body = parts[tag + 1 : len(parts) - len(w._instruction)]
        assert len(body) > 10 and body == _shuffled_words(random.Random(f"pytps:11:{i}:words"), len(body))


class _Word(str):
    pass


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=20), k=_LENGTHS | st.integers(min_value=0, max_value=2 * len(WORDS)))
def test_the_words_text_is_the_words_joined(text, k):
    seed = text.encode() + hashlib.sha512(text.encode()).digest()
    assert _core.shuffled_words_text(seed, WORDS, k) == " ".join(_core.shuffled_words(seed, WORDS, k))
    # Words that are not plain ASCII str (another script, a subclass) are joined by Python's join.
    for words in (("é", "b", "ß", "dd"), ("a", _Word("b"), "c"), ("🙂", "x")):
        drawn = _core.shuffled_words(seed, words, k)
        assert _core.shuffled_words_text(seed, words, k) == " ".join(drawn)


def test_a_prompt_is_its_parts_joined_and_sized_by_their_count():
    w = SyntheticWorkload(input_tokens="50-400", output_tokens="1", seed=3, shared_prefix_tokens=20, salt="s")
    for i in range(40):
        p = w.prompt(i)
        parts = p.text.split(" ")
        assert p.planned_tokens == round(len(parts) * w._base)
        tag = parts.index(f"[s{i}]")
        body = parts[
            tag + 1 : len(parts) - (len(w._instruction) if parts[-len(w._instruction) :] == w._instruction else 0)
        ]
        assert body == _shuffled_words(random.Random(f"pytps:3:{i}:words"), len(body))
