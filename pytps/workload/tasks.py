"""Built-in graded task sets (`--tasks arithmetic,choice,json-extract`; docs/grading.md).

Each item is generated from (seed, request index), so nothing is downloaded and every reference
is correct by construction. They are a sanity floor, not a leaderboard: they tell whether an
endpoint's answers survive load, quantisation or a new serving setting on easy, checkable
questions, not how capable a model is. `--input-tokens` pads the prompt with a background
paragraph before the task (word-estimated: these prompts are not calibrated, so the same seed
gives the same text in every run), `--output-tokens` sets max_tokens.

Every prompt ends with one line holding the item's question and how to answer; that line is
unique per item, so an emulator given the same set finds the reference whatever the padding.
"""

from __future__ import annotations

import random
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.datasets import DEFAULT_TOKENS_PER_WORD, estimate_tokens
from pytps.workload.synthetic import FixedPrompts, LengthSpec, Prompt
from pytps.workload.words import WORDS

_COLORS = ("red", "blue", "green", "yellow", "black", "white", "orange", "purple")
_FIRST = ("Ada", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lena")
_LAST = ("Novak", "Okafor", "Silva", "Tanaka", "Urban", "Varga", "Weiss", "Yilmaz", "Zhou", "Moreau")
_CITIES = ("Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Porto", "Quito", "Riga", "Seoul", "Tunis")


def _arithmetic(rng: random.Random, k: int) -> tuple[str, str, dict[str, Any]]:
    op = rng.choice("+-*")
    if op == "*":
        a, b = rng.randint(12, 999), rng.randint(12, 99)
        result = a * b
    else:
        a, b = rng.randint(100, 99999), rng.randint(100, 99999)
        result = a + b if op == "+" else a - b
    question = f'Question {k}: what is {a} {op} {b}? Reply with the number after "Answer:".'
    return "", question, {"grader": "number", "expected": result}


def _choice(rng: random.Random, k: int) -> tuple[str, str, dict[str, Any]]:
    labels = [f"{rng.choice('KMPRTVX')}{rng.randint(10, 99)}" for _ in range(6)]
    labels = list(dict.fromkeys(labels))
    colors = {label: rng.choice(_COLORS) for label in labels}
    facts = " ".join(f"The box labelled {label} is {color}." for label, color in colors.items())
    asked = rng.choice(labels)
    options = [colors[asked], *rng.sample([c for c in _COLORS if c != colors[asked]], 3)]
    rng.shuffle(options)
    letters = "ABCD"
    right = letters[options.index(colors[asked])]
    shown = " ".join(f"{letters[j]}) {c}" for j, c in enumerate(options))
    question = (
        f"Question {k}: what colour is the box labelled {asked}? Options: {shown}. "
        'Reply with the letter after "Answer:".'
    )
    return f"Facts: {facts}", question, {"grader": "choice", "expected": right}


def _json_extract(rng: random.Random, k: int) -> tuple[str, str, dict[str, Any]]:
    name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    city, age, order = rng.choice(_CITIES), rng.randint(18, 90), rng.randint(1000, 9999)
    record = f"Customer record: {name} lives in {city}, is {age} years old and placed order number {order}."
    question = (
        f'Question {k}: give the name, city and age in this record as one JSON object with keys "name", '
        '"city" and "age" (a number).'
    )
    return record, question, {"grader": "json", "expected": {"name": name, "city": city, "age": age}}


#: The task sets: name -> a generator of (context, question line, reference) from (rng, item number).
TASKS = {"arithmetic": _arithmetic, "choice": _choice, "json-extract": _json_extract}


def parse_tasks(text: str | list[str]) -> list[str]:
    names = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    for name in names:
        if name not in TASKS:
            raise ConfigError(f"tasks (--tasks) {name!r} is not a built-in task set; use one of {', '.join(TASKS)}")
    if not names:
        raise ConfigError(f"tasks (--tasks) is empty; use one or more of {', '.join(TASKS)}, comma-separated")
    return names


class TaskWorkload(FixedPrompts):
    """Request i is item i of task tasks[i % len(tasks)]: generated from (seed, i), the same in
    every run with the same seed, so two runs over it pair item by item (pytps compare)."""

    def __init__(
        self,
        tasks: str | list[str],
        input_tokens: LengthSpec | str | int = 64,
        output_tokens: LengthSpec | str | int = 32,
        seed: int = 0,
    ) -> None:
        self.tasks = parse_tasks(tasks)
        self.input_tokens = LengthSpec.parse(input_tokens, "input tokens")
        self.output_tokens = LengthSpec.parse(output_tokens, "output tokens")
        self.seed = seed

    def item(self, i: int) -> tuple[str, str, dict[str, Any]]:
        """Item i: (its id, its prompt text, its reference fields)."""
        task = self.tasks[i % len(self.tasks)]
        rng = random.Random(f"pytps:{self.seed}:{i}:task")
        context, question, reference = TASKS[task](rng, i)
        core = f"{context}\n{question}" if context else question
        target = self.input_tokens.sample(random.Random(f"pytps:{self.seed}:{i}:lengths"))
        missing = target - estimate_tokens(core)
        if missing > 8:  # padding: background words before the task, word-estimated
            pad_rng = random.Random(f"pytps:{self.seed}:{i}:pad")
            words = [pad_rng.choice(WORDS) for _ in range(max(1, round(missing / DEFAULT_TOKENS_PER_WORD) - 3))]
            core = "Background (not needed for the task): " + " ".join(words) + ".\n\n" + core
        return f"{task}:{self.seed}:{i}", core, reference

    def prompt(self, i: int) -> Prompt:
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ValueError(f"request index must be an integer >= 0, got {i!r}")
        item, text, reference = self.item(i)
        max_tokens = self.output_tokens.sample(random.Random(f"pytps:{self.seed}:{i}:output"))
        target = self.input_tokens.sample(random.Random(f"pytps:{self.seed}:{i}:lengths"))
        p = Prompt(i, None, text, target, max_tokens, item=item, reference=reference)
        p.planned_tokens = estimate_tokens(text)
        return p

    def records(self, count: int) -> list[dict[str, Any]]:
        """The first `count` items as dataset records (docs/grading.md's JSONL form): what
        `pytps serve --answers` reads, or a file to run again with --dataset."""
        out = []
        for i in range(count):
            item, text, reference = self.item(i)
            out.append({"id": item, "prompt": text, **reference})
        return out

    def references(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Nothing to check before the run: references are correct by construction."""
        return []

    def describe(self) -> dict[str, Any]:
        """What results.json records (metadata.workload)."""
        return {
            "kind": "tasks",
            "tasks": list(self.tasks),
            "input_tokens": str(self.input_tokens),
            "output_tokens": str(self.output_tokens),
            "seed": self.seed,
        }
