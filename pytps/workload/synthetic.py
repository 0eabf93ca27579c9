"""Workloads: what each benchmark request asks the server for.

A workload turns a request number i into a Prompt (chat messages, the same text for
completion-style APIs, and max_tokens). It is deterministic in (seed, i) so a run can be repeated
and two servers can be compared on identical requests. Two kinds:

- SyntheticWorkload: English-like word prompts of a chosen token length, each starting with a
  unique part so the server's prefix cache cannot serve it (unless a shared prefix is asked for).
- DatasetWorkload: prompts from a JSONL or ShareGPT file (parsed by pytps.workload.datasets).

Both expose prompt(i), calibrate(planned_tokens, reported_prompt_tokens), describe() and
prompt_calibration(), so the runner treats them alike (the Workload protocol).
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.workload.datasets import (
    DEFAULT_TOKENS_PER_WORD,
    DatasetRecord,
    estimate_tokens,
    load_dataset,
    messages_text,
)
from pytps.workload.words import WORDS

__all__ = ["DEFAULT_TOKENS_PER_WORD", "DatasetWorkload", "LengthSpec", "Prompt", "SyntheticWorkload", "Workload"]

# The output length when none is given: --output-tokens' default, and a dataset record's that
# carries neither max_tokens nor a reply to measure (docs/run-inputs.md).
DEFAULT_OUTPUT_TOKENS = 128

_FORMS = (
    "N (fixed, e.g. 512), N:SD (normal with mean N and standard deviation SD, e.g. 512:64) "
    "or LO-HI (uniform, e.g. 128-1024), with counts >= 1"
)
_FIXED = re.compile(r"\s*(\d+)\s*")
_NORMAL = re.compile(r"\s*(\d+)\s*:\s*(\d+(?:\.\d*)?|\.\d+)\s*")
_UNIFORM = re.compile(r"\s*(\d+)\s*-\s*(\d+)\s*")


@dataclass(frozen=True)
class LengthSpec:
    """A token-count distribution, written the way people type it on a command line.

    kind "fixed": always a. kind "normal": round(gauss(a, b)), clipped to >= 1 (a = mean, b = sd).
    kind "uniform": an integer in [a, b], inclusive. Sampling takes the caller's random.Random, so
    the workload decides which random stream each length comes from.
    """

    kind: str
    a: int
    b: float = 0

    @classmethod
    def parse(cls, text: str | int | LengthSpec, name: str = "length") -> LengthSpec:
        """ "N", "N:sd" or "lo-hi" (an int or a LengthSpec passes through). `name` is what the value
        is for ("--input-tokens"), used in the ConfigError for bad text."""
        if isinstance(text, LengthSpec):
            return text
        if isinstance(text, int) and not isinstance(text, bool):
            text = str(text)
        why = ""
        if isinstance(text, str):
            if m := _FIXED.fullmatch(text):
                if int(m[1]) >= 1:
                    return cls("fixed", int(m[1]))
                why = " (a length of 0 asks for nothing)"
            elif m := _NORMAL.fullmatch(text):
                if int(m[1]) >= 1:
                    sd = float(m[2])
                    return cls("normal", int(m[1]), int(sd) if sd.is_integer() else sd)
                why = " (the mean must be >= 1)"
            elif m := _UNIFORM.fullmatch(text):
                if 1 <= int(m[1]) <= int(m[2]):
                    return cls("uniform", int(m[1]), int(m[2]))
                why = " (need 1 <= LO <= HI)"
        raise ConfigError(f"{name} {text!r} is not a valid length{why}: use {_FORMS}")

    def sample(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return self.a
        if self.kind == "normal":
            return max(1, round(rng.gauss(self.a, self.b)))
        return rng.randint(self.a, int(self.b))

    @property
    def mean(self) -> float:
        """The distribution's nominal mean (for "normal", the clipping at 1 is ignored: it only
        matters when sd is comparable to the mean)."""
        return (self.a + self.b) / 2 if self.kind == "uniform" else float(self.a)

    def __str__(self) -> str:
        if self.kind == "fixed":
            return str(self.a)
        sep = ":" if self.kind == "normal" else "-"
        b = int(self.b) if float(self.b).is_integer() else self.b
        return f"{self.a}{sep}{b}"


@dataclass
class Prompt:
    """One request's input. Both messages (chat APIs) and text (completion APIs) are always set:
    give either and the other is derived (text -> one user message; messages -> their contents
    joined by blank lines).

    input_tokens_target: the length the workload aimed for (None for datasets, which do not aim).
    planned_tokens: the workload's own, uncalibrated estimate of this prompt's tokens. Pass it back,
    with the server's prompt_tokens, to the workload's calibrate().
    """

    index: int
    messages: list[dict[str, Any]] | None
    text: str | None
    input_tokens_target: int | None
    max_tokens: int
    planned_tokens: int | None = None
    # Graded answers (docs/grading.md): the item this prompt is (its id, stable across runs) and
    # its reference's fields as given; None when the prompt has no item.
    item: str | None = None
    reference: dict[str, Any] | None = None
    # Images a dataset record names, loaded (pytps.workload.images.Image); empty for text prompts.
    images: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.messages is None and self.text is None:
            raise ValueError("Prompt needs messages or text")
        if self.messages is None:
            self.messages = [{"role": "user", "content": self.text}]
        elif self.text is None:
            self.text = messages_text(self.messages)


class Workload(Protocol):
    """What the runner needs of a workload."""

    def prompt(self, i: int) -> Prompt: ...
    def calibrate(self, planned_tokens: int | None, reported_prompt_tokens: int | None) -> None: ...
    def describe(self) -> dict[str, Any]: ...
    def prompt_calibration(self) -> dict[str, Any] | None: ...


class SyntheticWorkload:
    """Prompts of random common English words, sized in tokens without a tokenizer.

    Layout of each prompt: [shared prefix words] [request id] [random words] [instruction].
    The request id and the random words (seeded by (seed, i)) make the start of every prompt
    unique, so a server's prefix cache cannot answer from earlier requests and TTFT measures real
    prefill. shared_prefix_tokens > 0 deliberately puts the same words first in every prompt, to
    measure a warm prefix cache. salt goes into the request id: give a fresh salt per run to keep
    a repeated run (same seed, same prompts) from hitting the cache the previous run filled.

    Token counts are estimated as words x tokens_per_word (default 1.3, the usual ratio for English
    under BPE tokenizers), which is only a guess for any given model and ignores the chat template.
    calibrate() fixes both from the prompt_tokens the server reports: with >= 3 reports of varied
    size it fits reported = overhead + slope x planned by weighted least squares (the overhead being the
    chat template), and later prompts are sized through that fit. The fit never scales a prompt's
    word count by more than MAX_PROMPT_SCALE either way; when the reports would need more (a server
    whose prompt_tokens are constant, capped or truncated), calibration stops for the rest of the
    run, prompts go back to the estimate, and prompt_calibration() says why.
    A prompt is never shorter than the shared prefix plus its id and one word, even when the
    sampled length is. The short instruction at the end asks for a long answer, so models without ignore_eos tend
    to use their max_tokens; it is left out when the prompt is too short to afford it.
    """

    _ID_WORDS = 1
    _INSTRUCTION = "Now write a long story that uses all of these words."
    #: Calibration may scale a prompt's word count by at most this factor either way: a server
    #: whose prompt_tokens do not follow the prompt (constant, capped, truncating to its context)
    #: must not grow prompts without bound. A real tokenizer is within 4x of 1.3 tokens per word.
    MAX_PROMPT_SCALE = 4.0
    #: Reports before calibration may conclude that they do not follow the prompt's size.
    _MIN_REPORTS_TO_STOP = 3

    def __init__(
        self,
        input_tokens: LengthSpec | str | int,
        output_tokens: LengthSpec | str | int,
        shared_prefix_tokens: int = 0,
        seed: int = 0,
        *,
        tokens_per_word: float = DEFAULT_TOKENS_PER_WORD,
        salt: str = "",
    ) -> None:
        self.input_tokens = LengthSpec.parse(input_tokens, "input tokens")
        self.output_tokens = LengthSpec.parse(output_tokens, "output tokens")
        if (
            not isinstance(shared_prefix_tokens, int)
            or isinstance(shared_prefix_tokens, bool)
            or shared_prefix_tokens < 0
        ):
            raise ConfigError(f"shared prefix tokens must be an integer >= 0, got {shared_prefix_tokens!r}")
        if shared_prefix_tokens and shared_prefix_tokens >= self.input_tokens.mean:
            raise ConfigError(
                f"shared prefix ({shared_prefix_tokens} tokens) must be shorter than the input "
                f"(mean {self.input_tokens.mean:g} tokens): each prompt's unique part follows the prefix"
            )
        if not (isinstance(tokens_per_word, (int, float)) and math.isfinite(tokens_per_word) and tokens_per_word > 0):
            raise ConfigError(f"tokens per word must be a positive number, got {tokens_per_word!r}")
        if any(ch.isspace() for ch in salt):
            raise ConfigError(f"salt must not contain whitespace, got {salt!r}")
        self.shared_prefix_tokens = shared_prefix_tokens
        self.seed = seed
        self.salt = salt
        self._base = float(tokens_per_word)
        self._instruction = self._INSTRUCTION.split()
        self._prefix_pool: list[str] = []
        self._lock = threading.Lock()
        self._n = 0
        self._sx = self._sy = self._sw = self._syw = 0.0
        self._overhead = 0.0  # fitted: reported = overhead + slope * planned
        self._slope = 1.0
        self._seen = (math.inf, 0.0, math.inf, 0.0)  # min/max planned, min/max reported
        self._stopped: str | None = None  # why calibration stopped, once it has

    # -- calibration ---------------------------------------------------------------------------

    @property
    def tokens_per_word(self) -> float:
        """Current estimate of tokens per prompt word (prior x fitted slope)."""
        return self._base * self._slope

    @property
    def overhead_tokens(self) -> float:
        """Current estimate of tokens the server adds to every prompt (chat template, BOS)."""
        return self._overhead

    @property
    def calibration_reports(self) -> int:
        return self._n

    def calibrate(self, planned_tokens: int | None, reported_prompt_tokens: int | None) -> None:
        """Learn from one completed request: prompt.planned_tokens and the server's prompt_tokens.

        Missing or non-positive values are ignored (servers that report no usage). Thread-safe.
        Fewer than 3 reports, or reports whose planned sizes are all about the same, cannot separate
        overhead from slope; then the ratio of the sums is used, which is exact for the sizes seen.
        """
        if planned_tokens is None or reported_prompt_tokens is None:
            return
        x, y = float(planned_tokens), float(reported_prompt_tokens)
        if not (x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y)):
            return
        if self._base >= 1:
            # planned_tokens is round(words x base); with base >= 1 the word count is recoverable,
            # and fitting on the unrounded value removes up to half a token of noise per report.
            x = max(1, round(x / self._base)) * self._base
        with self._lock:
            if self._stopped is not None:
                return
            self._n += 1
            self._sx += x
            self._sy += y
            self._sw += 1 / x
            self._syw += y / x
            x0, x1, y0, y1 = self._seen
            self._seen = (min(x0, x), max(x1, x), min(y0, y), max(y1, y))
            self._refit()

    def _refit(self) -> None:
        # Weighted least squares with weights 1/planned: a prompt's token count is a sum over its
        # words, so its scatter grows with its length, and unweighted fits let the longest prompts
        # swamp the overhead estimate that matters most for the shortest ones. With these weights
        # the no-overhead fit is the ratio of the sums.
        n, ratio = self._n, self._sy / self._sx
        overhead, slope = 0.0, ratio
        if n >= 3:
            s0, s1, sy_w = self._sw, float(n), self._syw  # sum 1/x, sum x/x, sum y/x
            det = s0 * self._sx - s1 * s1
            # det / (s0 * sx) is 1 - (harmonic mean / mean) of the sizes: 0 when all are equal.
            if det > 1e-3 * s0 * self._sx:
                b = (s0 * self._sy - s1 * sy_w) / det
                # A slope far from the plain ratio means noisy or odd reports; the ratio is safer.
                if ratio / 4 < b < ratio * 4:
                    overhead, slope = (sy_w - b * s1) / s0, b
        bound = self.MAX_PROMPT_SCALE
        if not 1 / bound <= slope <= bound and n >= self._MIN_REPORTS_TO_STOP:
            # The reports do not follow the prompts' size: a fit would scale prompts past any
            # tokenizer's ratio. Stop, and size prompts by the estimate alone from here on.
            x0, x1, y0, y1 = self._seen
            self._stopped = (
                f"the server's prompt_tokens did not follow the prompts' size ({y0:.0f}-{y1:.0f} tokens reported "
                f"for prompts estimated at {x0:.0f}-{x1:.0f}, over {n} requests), so prompt-size calibration "
                f"stopped and prompts are sized by the estimate of {self._base:g} tokens per word"
            )
            overhead, slope = 0.0, 1.0
        self._overhead, self._slope = overhead, min(max(slope, 1 / bound), bound)

    # -- prompts -------------------------------------------------------------------------------

    def prompt(self, i: int) -> Prompt:
        """Request i's prompt. The same (seed, i) gives the same lengths and words; the word
        count follows the calibration in effect at the time of the call."""
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ValueError(f"request index must be an integer >= 0, got {i!r}")
        if self.input_tokens.kind == "fixed" and self.output_tokens.kind == "fixed":
            # Nothing to draw: seeding a generator for nothing was a tenth of a short request's
            # cost (issue 42); the lengths are those sample() gives.
            return self.sized_prompt(i, self.input_tokens.a, self.output_tokens.a)
        lengths = random.Random(f"pytps:{self.seed}:{i}:lengths")
        target = self.input_tokens.sample(lengths)
        max_tokens = self.output_tokens.sample(lengths)
        return self.sized_prompt(i, target, max_tokens)

    def words_for(self, tokens: float) -> int:
        """Prompt words for `tokens` tokens by the calibration in effect (the overhead left out),
        within MAX_PROMPT_SCALE of the estimate. Traces size their shared blocks with it."""
        uncalibrated = max(1, round(tokens / self._base))
        words = round(tokens / self.tokens_per_word)
        words = max(1, round(uncalibrated / self.MAX_PROMPT_SCALE), words)
        return min(words, round(uncalibrated * self.MAX_PROMPT_SCALE))

    def sized_prompt(self, i: int, target: int, max_tokens: int, *, tag: str = "") -> Prompt:
        """Request i's prompt aimed at `target` tokens (trace replays and session turns give their
        own lengths); `tag` goes into the request id beside the salt, keeping ids unique when one
        i gives several prompts."""
        with self._lock:
            overhead, slope = self._overhead, self._slope
        per_word = self._base * slope
        uncalibrated = max(1, round(target / self._base))
        total_words = round((target - overhead) / per_word)
        total_words = max(1, round(uncalibrated / self.MAX_PROMPT_SCALE), total_words)
        total_words = min(total_words, round(uncalibrated * self.MAX_PROMPT_SCALE))
        prefix = self._prefix_words(round(self.shared_prefix_tokens / per_word)) if self.shared_prefix_tokens else []
        body = total_words - len(prefix) - self._ID_WORDS
        tail = self._instruction if body >= 3 * len(self._instruction) else []
        body = max(1, body - len(tail))
        # The words joined natively (body >= 1: the text is " ".join of prefix, id, words, tail).
        words = _seeded_text(f"pytps:{self.seed}:{i}:words", body)
        text = " ".join([*prefix, f"[{self.salt}{tag}{i}]", words, *tail])
        return Prompt(i, None, text, target, max_tokens, round((len(prefix) + 1 + body + len(tail)) * self._base))

    def _prefix_words(self, k: int) -> list[str]:
        # Grown by extension only, so when calibration changes k the prefix keeps its start and a
        # server's cache still holds most of it.
        with self._lock:
            if len(self._prefix_pool) < k:
                self._prefix_pool = _seeded_words(f"pytps:{self.seed}:prefix", max(k, 2 * len(self._prefix_pool)))
            return self._prefix_pool[:k]

    def describe(self) -> dict[str, Any]:
        """What a results file records about this workload (results.json metadata.workload)."""
        return {
            "kind": "synthetic",
            "input_tokens": str(self.input_tokens),
            "output_tokens": str(self.output_tokens),
            "shared_prefix_tokens": self.shared_prefix_tokens,
            "seed": self.seed,
            "salt": self.salt,
        }

    def prompt_calibration(self) -> dict[str, Any]:
        """Where prompt sizing ended up (results.json metadata.prompt_calibration)."""
        return {
            "prior_tokens_per_word": self._base,
            "tokens_per_word": round(self.tokens_per_word, 4),
            "overhead_tokens": round(self._overhead, 2),
            "reports": self._n,
            "stopped": self._stopped,
        }


def _seeded_words(seed_text: str, k: int) -> list[str]:
    """_shuffled_words(random.Random(seed_text), k): the same words, drawn in C++
    (_core.shuffled_words). Seeding a Mersenne Twister from a string for each prompt and drawing
    its words in Python were ~7 us of a 1-token request's client CPU (issue 42); natively the
    seeding's constant part is made once and only the outputs a prompt uses are made.
    tests/workload/test_native_words.py holds the two to the same words."""
    if k <= 0:
        return []
    return _core.shuffled_words(_seed_key(seed_text), WORDS, k)


def _seed_key(seed_text: str) -> bytes:
    """The bytes random.Random(seed_text) seeds with: int.from_bytes(text + sha512(text).digest())
    (seed version 2)."""
    text = seed_text.encode()
    return text + hashlib.sha512(text).digest()


def _seeded_text(seed_text: str, k: int) -> str:
    """The words of _seeded_words(seed_text, k) joined by single spaces, laid out natively without their list
    (_core.shuffled_words_text: ~1.3 us of a 256-token prompt, issue 42)."""
    if k <= 0:
        return ""
    return _core.shuffled_words_text(_seed_key(seed_text), WORDS, k)


def _shuffled_words(rng: random.Random, k: int) -> list[str]:
    """k words from a stream of shuffled copies of the whole word list.

    Drawing without replacement makes every prompt's mix of short and long words nearly the
    same, so its token count varies little around words x ratio (independent draws scatter it by
    ~sqrt(k) and blur the calibration). The stream only depends on rng, so a longer prompt
    extends a shorter one: request i keeps its words whatever calibration does to its length.
    """
    # An incremental Fisher-Yates shuffle: only the k words needed are drawn (a whole shuffle of
    # the list per prompt cost ~0.5 ms of Python on the send path), and the draws are the same
    # whatever k is, so the prefix property holds.
    # The pool is WORDS with the swaps made so far kept in a dict (slot -> word): a short prompt
    # draws a few words, and copying the whole list for each prompt was most of its cost (issue 42).
    # Slot i is never read again once drawn, so only slot j's new word is kept.
    words: list[str] = []
    n = len(WORDS)
    moved: dict[int, str] = {}
    i = 0
    # rng.randrange(m) of a random.Random is _randbelow_with_getrandbits(m): getrandbits of
    # m.bit_length() bits until one is below m. Done here, the draws are the same and two Python
    # calls per word are saved (~4% of a 1-token request's client CPU, issue 42); a subclass of
    # Random may draw otherwise, so it keeps its randrange.
    getrandbits = rng.getrandbits if type(rng) is random.Random else None
    while len(words) < k:
        if i == n:
            moved, i = {}, 0
        m = n - i
        if getrandbits is not None:
            bits = m.bit_length()
            r = getrandbits(bits)
            while r >= m:
                r = getrandbits(bits)
            j = i + r
        else:
            j = i + rng.randrange(m)
        moved[j], drawn = moved.get(i, WORDS[i]), moved.get(j, WORDS[j])
        words.append(drawn)
        i += 1
    return words


class FixedPrompts:
    """A workload whose prompts are sent as they are (a dataset's records, graded tasks): its text
    must not depend on the run's timing, so there is nothing to calibrate."""

    def calibrate(self, planned_tokens: int | None, reported_prompt_tokens: int | None) -> None:
        """Nothing to learn."""

    def prompt_calibration(self) -> None:
        return None


class DatasetWorkload(FixedPrompts):
    """Prompts replayed from a dataset, cycled in an order shuffled by the seed.

    max_tokens comes from output_tokens when given (the command line wins), else from the record's
    max_tokens, else from the length of the recorded reply (ShareGPT), as vLLM's benchmark does,
    else DEFAULT_OUTPUT_TOKENS (counted: describe()'s output_tokens_defaulted).
    """

    def __init__(
        self,
        records: list[DatasetRecord],
        output_tokens: LengthSpec | str | int | None = None,
        seed: int = 0,
        *,
        source: str = "",
        skipped: int = 0,
    ) -> None:
        if not records:
            raise ConfigError(f"dataset {source or '(in memory)'} has no usable prompts")
        self.output_tokens = None if output_tokens is None else LengthSpec.parse(output_tokens, "output tokens")
        self.defaulted = (
            0
            if self.output_tokens is not None
            else sum(1 for r in records if r.max_tokens is None and r.reference_output_tokens is None)
        )
        self.records = list(records)
        self.seed = seed
        self.source = source
        self.skipped = skipped
        self._order = list(range(len(self.records)))
        random.Random(f"pytps:{seed}:order").shuffle(self._order)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], output_tokens: LengthSpec | str | int | None = None, seed: int = 0
    ) -> DatasetWorkload:
        """Load and validate a JSONL or ShareGPT JSON file (see pytps.workload.datasets.load_dataset)."""
        spec = None if output_tokens is None else LengthSpec.parse(output_tokens, "output tokens")
        loaded = load_dataset(path, need_output_length=spec is None)
        return cls(loaded.records, spec, seed, source=os.fspath(path), skipped=loaded.skipped)

    def __len__(self) -> int:
        return len(self.records)

    def prompt(self, i: int) -> Prompt:
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ValueError(f"request index must be an integer >= 0, got {i!r}")
        rec = self.records[self._order[i % len(self.records)]]
        if self.output_tokens is not None:
            max_tokens = self.output_tokens.sample(random.Random(f"pytps:{self.seed}:{i}:lengths"))
        else:
            own = rec.max_tokens if rec.max_tokens is not None else rec.reference_output_tokens
            max_tokens = own if own is not None else DEFAULT_OUTPUT_TOKENS
        # Copies: the runner may adapt messages per API; the dataset must stay as loaded.
        messages = copy.deepcopy(rec.messages)
        p = Prompt(i, messages, rec.text, None, int(max_tokens), item=rec.item, reference=rec.reference)
        p.planned_tokens = estimate_tokens(p.text or "")
        if rec.images:
            from pytps.workload.images import load_image

            p.images = [load_image(path) for path in rec.images]
        return p

    def references(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every record's (item id, where, reference fields), for checking before the run."""
        return [(r.item or r.where, r.where, r.reference or {}) for r in self.records]

    def describe(self) -> dict[str, Any]:
        """What a results file records about this workload (results.json metadata.workload)."""
        return {
            "kind": "dataset",
            "source": self.source,
            "records": len(self.records),
            "skipped": self.skipped,
            "output_tokens": None if self.output_tokens is None else str(self.output_tokens),
            # Where each request's max_tokens came from: "given" (output_tokens), or "records" (each
            # record's max_tokens, else its reply's length, else the default for output_tokens_defaulted).
            "output_tokens_source": "given" if self.output_tokens is not None else "records",
            "output_tokens_defaulted": self.defaulted,
            "seed": self.seed,
        }
