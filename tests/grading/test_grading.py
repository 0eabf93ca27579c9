"""Graders, extraction rules and the bad-input lines (docs/grading.md), on real text; and graded
runs against the emulator: user graders sync and async, a grader that raises, cost per correct
response and goodput of correct answers against values computed by hand from the emulator's truth."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.grading.answers import EXTRACTORS
from pytps.measure.grade_figures import wilson_interval
from pytps.grading.graders import build_grading, grade_text, parse_reference
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner


def ref(**raw: Any) -> Any:
    out = parse_reference(raw, where="t.jsonl:1", item="i")
    assert out is not None
    return out


@pytest.mark.parametrize(
    ("rule", "text", "want"),
    [
        ("all", "  hi there \n", "hi there"),
        ("after_marker", "thinking...\nAnswer: Paris\nthanks", "Paris"),
        ("after_marker", "Paris", "Paris"),
        ("last_number", "1 then 2, finally 1,234.5 units", "1234.5"),
        ("last_number", "no digits", None),
        ("choice_letter", "I think so. Answer: (b)", "B"),
        ("choice_letter", "C", "C"),
        ("choice_letter", "Because of this", None),
        ("first_json_object", 'Here: ```json\n{"a": 1, "b": [2]}\n``` done', '{"a": 1, "b": [2]}'),
        ("first_json_object", "{not json} {}", "{}"),
        ("last_line", "a\nb\n\n", "b"),
    ],
)
def test_extraction_rules(rule: str, text: str, want: str | None) -> None:
    assert EXTRACTORS[rule](text) == want


@pytest.mark.parametrize(
    ("raw", "right", "wrong"),
    [
        ({"expected": "Paris"}, "Answer: Paris", "Answer: paris"),
        ({"expected": "Paris", "case_fold": True}, "Answer:  paris ", "Answer: Lyon"),
        ({"grader": "contains", "expected": "blue"}, "the sky is blue today", "the sky is grey"),
        ({"grader": "regex", "expected": r"\b4\d\b"}, "it is 42.", "it is 420."),
        ({"grader": "number", "expected": 42}, "so 40 + 2 = 42", "so 41"),
        ({"grader": "number", "expected": "3.14", "tolerance": 0.01}, "pi is 3.141", "pi is 3.2"),
        ({"grader": "choice", "expected": "b"}, "Answer: B", "Answer: C"),
        (
            {"grader": "json", "expected": {"name": "Ada", "age": 41}},
            '{"age": 41, "name": "Ada", "x": 1}',
            '{"name": "Ada"}',
        ),
        (
            {"grader": "json-schema", "schema": {"type": "object", "required": ["a"]}},
            'out: {"a": 1}',
            'out: {"b": 1}',
        ),
    ],
)
def test_builtin_graders_tell_right_from_wrong(raw: dict[str, Any], right: str, wrong: str) -> None:
    r = ref(**raw)
    assert grade_text(r, right).correct is True
    bad = grade_text(r, wrong)
    assert bad.correct is False and bad.reason


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"prompt": "p", "grader": "exact"}, 'grader exact needs a reference: add "expected"'),
        ({"prompt": "p", "expected": "x", "grader": "fuzzy"}, "unknown grader 'fuzzy'"),
        ({"prompt": "p", "grader": "json-schema", "schema": {"type": 12}}, "schema does not parse"),
        ({"prompt": "p", "grader": "json-schema", "schema": "{nope"}, "schema is not JSON"),
        ({"prompt": "p", "expected": "(", "grader": "regex"}, "not a valid regular expression"),
        ({"prompt": "p", "expected": "x", "grader": "no_such_module_xyz:f"}, "cannot import no_such_module_xyz"),
        ({"prompt": "p", "expected": "x", "grader": "json:nothing_here"}, "json has no function nothing_here"),
        ({"prompt": "p", "expected": "x", "extract": "middle"}, "unknown extract rule 'middle'"),
    ],
)
def test_bad_references_are_one_line_naming_file_and_line(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    data = tmp_path / "set.jsonl"
    data.write_text(json.dumps({"prompt": "fine", "expected": "1"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(ConfigError) as err:
        make_config("http://127.0.0.1:9", dataset=data, output_tokens=4, out=tmp_path / "o")
    text = str(err.value)
    assert f"{data}:2" in text and message in text and "\n" not in text


def test_default_grader_needs_references_and_unknown_default_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "set.jsonl"
    data.write_text(json.dumps({"prompt": "no reference"}) + "\n")
    with pytest.raises(ConfigError, match=r"set.jsonl:1: grader number needs a reference"):
        make_config("http://127.0.0.1:9", dataset=data, output_tokens=4, grader="number")
    with pytest.raises(ConfigError, match="grader .--grader. 'fuzzy'"):
        build_grading([], "fuzzy")
    with pytest.raises(ConfigError, match="--grader. grades the answers of --dataset records or --tasks"):
        make_config("http://127.0.0.1:9", grader="exact")


def test_wilson_interval_matches_the_formula() -> None:
    lo, hi = wilson_interval(8, 10) or (0, 0)
    assert lo == pytest.approx(0.4901625, abs=1e-6) and hi == pytest.approx(0.9433178, abs=1e-6)
    assert wilson_interval(0, 0) is None
    assert wilson_interval(0, 20) == (0.0, pytest.approx(0.1611251, abs=1e-6))
    # Exactly 0 and 1 at the ends, for every n (rounding once left 1e-17 above 0 at n = 22).
    assert all(wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0 for n in range(1, 2000))  # type: ignore[index]


# ---- graded runs against the emulator ------------------------------------------------------------

GRADER_MODULE = """
import asyncio

def sync_grader(request, text, record):
    return {"correct": record["expected"] in text, "score": 0.5, "reason": "not in the text"}

async def async_grader(request, text, record):
    await asyncio.sleep(0)
    return record["expected"] in text

def raising_grader(request, text, record):
    if request["index"] % 2:
        raise ValueError("cannot read " + record["id"])
    return True
"""


@pytest.fixture
def user_graders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "my_graders_25.py").write_text(GRADER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_graders_25", None)
    return "my_graders_25"


def dataset(path: Path, n: int) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"What is the code of item {i}?", "expected": f"C{i}X"}) + "\n"
            for i in range(n)
        )
    )
    return path


def graded_run(tmp_path: Path, emu: pytps.Emulator, **settings: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    cfg = make_config(emu.base_url, out=out, output_tokens=6, **settings)
    result = run_coroutine(Runner(cfg).run())
    return result.summary, load_journal(out)


@pytest.mark.parametrize("which", ["sync_grader", "async_grader"])
def test_user_grader_sync_and_async_end_to_end(tmp_path: Path, user_graders: str, which: str) -> None:
    data = dataset(tmp_path / "d.jsonl", 12)
    with pytps.Emulator(ttft_ms=1, itl_us=100, answers=data, answer_accuracy=0.6, seed=3) as emu:
        summary, lines = graded_run(
            tmp_path, emu, dataset=data, grader=f"{user_graders}:{which}", concurrency=1, requests=12
        )
        truth = sorted(emu.wait_truth(12), key=lambda t: t["seq"])
    lines.sort(key=lambda line: line["index"])
    assert [line["correct"] for line in lines] == [t["answer"] == "right" for t in truth]
    assert {line["grader"] for line in lines} == {f"{user_graders}:{which}"}
    g = summary["grading"]
    assert g["correct"] == sum(t["answer"] == "right" for t in truth) and g["graded"] == 12
    if which == "sync_grader":  # its score and reason are kept
        assert {line["score"] for line in lines} == {0.5}
        assert {line["why_wrong"] for line in lines if not line["correct"]} <= {"not in the text"}


def test_a_grader_that_raises_marks_grader_error_and_the_run_goes_on(tmp_path: Path, user_graders: str) -> None:
    data = dataset(tmp_path / "d.jsonl", 6)
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        summary, lines = graded_run(
            tmp_path, emu, dataset=data, grader=f"{user_graders}:raising_grader", concurrency=1, requests=6
        )
    odd = [line for line in lines if line["index"] % 2]
    assert odd and all(line["correct"] is None for line in odd)
    assert all(line["why_wrong"].startswith("grader_error: ValueError: cannot read q") for line in odd)
    assert all(line["why_not_useful"] == line["why_wrong"] for line in odd)
    g = summary["grading"]
    assert g["grader_errors"] == len(odd) and g["graded"] == 6 - len(odd) and g["correct"] == g["graded"]
    assert summary["not_useful"]["grader_error"] == len(odd)


def test_cost_per_correct_response_and_goodput_of_correct_answers_by_hand(tmp_path: Path) -> None:
    """Every 3rd request's headers are late by 0.2 s, past --slo ttft=0.1: a correct answer there is
    not goodput. Each request costs 6 output tokens x 1000/Mtok + 0.01 = 0.016."""
    with pytps.Emulator(
        ttft_ms=1, itl_us=100, answers="tasks:arithmetic:40:5", answer_accuracy=0.5, seed=11,
        faults=["slow_headers:every=3,seconds=0.2"],
    ) as emu:  # fmt: skip
        summary, lines = graded_run(
            tmp_path, emu, tasks="arithmetic", seed=5, concurrency=1, requests=30, warmup=1,
            slo="ttft=0.1", price_output=1000.0, price_request=0.01,
        )  # fmt: skip
        truth = {t["seq"]: t for t in emu.wait_truth(31)}
    measured = [line for line in lines if not line["warmup"]]
    assert len(measured) == 30
    by_seq = sorted(truth.values(), key=lambda t: t["seq"])[1:]  # the warm-up is request 0, seq 1
    correct = sum(t["answer"] == "right" for t in by_seq)
    in_time = sum(t["answer"] == "right" and t["fault"] == "none" for t in by_seq)
    assert 0 < in_time < correct < 30
    g = summary["grading"]
    assert g["correct"] == correct and g["correct_within_slo"] == in_time
    total = 30 * (6 * 1000.0 / 1e6 + 0.01)
    assert summary["cost"]["total"] == pytest.approx(total)
    assert g["cost_per_correct_response"] == pytest.approx(total / correct)
    assert g["goodput_correct_rps"] == pytest.approx(in_time / summary["measured_window_s"])
    assert summary["goodput_rps"] == pytest.approx(in_time / summary["measured_window_s"])
    assert summary["cost"]["per_useful_response"] == pytest.approx(total / in_time)
    lo, hi = g["accuracy_ci95"]
    assert lo < correct / 30 < hi
    e2e = sorted(line["e2e_s"] for line in measured if line["correct"])
    assert g["time_to_correct_answer_s"]["max"] == pytest.approx(e2e[-1])
    saved = load_results(tmp_path / "run0")
    assert saved["summary"]["grading"]["correct"] == correct


def test_async_grading_keeps_the_loop_free(tmp_path: Path, user_graders: str) -> None:
    """An async grader is awaited on the run's loop, never blocking it (asyncio.sleep(0) above)."""
    assert asyncio.iscoroutinefunction(__import__(user_graders).async_grader)


def test_accuracy_by_turn_of_task_sessions_equals_the_truth(tmp_path: Path) -> None:
    with pytps.Emulator(
        ttft_ms=1, itl_us=100, answers="tasks:arithmetic,choice:40:0", answer_accuracy=0.6, seed=4
    ) as emu:
        summary, lines = graded_run(tmp_path, emu, tasks="arithmetic,choice", turns=4, sessions=10, concurrency=3)
        truth = {t["id"]: t for t in emu.wait_truth(40)}
    assert len(lines) == 40
    by_turn = summary["grading"]["by_turn"]
    assert [b["turn"] for b in by_turn] == [0, 1, 2, 3]
    for b in by_turn:
        mine = [line for line in lines if line["turn"] == b["turn"]]
        assert b["graded"] == len(mine) == 10
        assert b["correct"] == sum(truth[line["response_id"]]["answer"] == "right" for line in mine)


class _CountingJson:
    """json as grading/answers sees it, counting the characters each parse may read."""

    JSONDecodeError = json.JSONDecodeError

    def __init__(self) -> None:
        self.read = 0
        outer = self

        class Decoder(json.JSONDecoder):
            def raw_decode(self, s: str, idx: int = 0) -> Any:  # type: ignore[override]
                outer.read += len(s) - idx
                return super().raw_decode(s, idx)

        self.JSONDecoder = Decoder

    def loads(self, s: str) -> Any:
        self.read += len(s)
        return json.loads(s)

    def dumps(self, value: Any, **kw: Any) -> str:
        return json.dumps(value, **kw)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 20_000 + "}",
        "{ " * 10_000 + "}",
        '{"a":' * 5_000 + "1" + "x}" * 5_000,
        '{"a":{}x' * 5_000,
        "x {" * 10_000 + '{"k": 1}',
    ],
    ids=["braces", "spaced", "nested-bad", "many-bad", "prose"],
)
def test_first_json_object_reads_each_character_a_bounded_number_of_times(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40, defect 5: linear, counted rather than timed (bench/bench_first_json_object.py
    times it). The old rule parsed from every "{" to wherever it failed: N^2/2 characters."""
    import pytps.grading.answers as answers

    counting = _CountingJson()
    monkeypatch.setattr(answers, "json", counting)
    answers.first_json_object(text)
    assert counting.read <= 3 * len(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{"a": {"b": 1} x}', '{"b": 1}'),
        ('{"s": "a\\"}"}', '{"s": "a\\"}"}'),
        ('{"s": "}{"} {"t": 1}', '{"s": "}{"}'),
        ('{"a":1}x{"b":2}', '{"a": 1}'),
        ('{{{"a":{}}', '{"a": {}}'),
        ("{" * 5000 + "}", "{}"),
        ('{"a":' * 3000 + "1" + "}" * 3000, None),  # deeper than the recursion limit: no answer
        ('He said "x". {"k": [1, {"m": null}]}', '{"k": [1, {"m": null}]}'),
    ],
    ids=["nested", "escaped-quote", "braces-in-string", "first", "inner", "last-pair", "too-deep", "prose"],
)
def test_first_json_object_edge_cases(text: str, want: str | None) -> None:
    assert EXTRACTORS["first_json_object"](text) == want
