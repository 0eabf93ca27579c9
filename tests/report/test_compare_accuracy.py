"""pytps compare pairs graded answers item by item (docs/compare.md, "Accuracy"): McNemar's exact
test and the Bonett-Price interval against hand-computed values, and runs against emulators of
known accuracy: 0.8 against 0.7 is flagged, 0.8 against 0.8 is not, different items are warned of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytps
from pytps.report.compare import compare, load_side
from pytps.report.paired import mcnemar_exact_p, paired_interval
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner

ITEMS = 500


def test_mcnemar_and_the_paired_interval_by_hand() -> None:
    assert mcnemar_exact_p(0, 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact_p(5, 5) == 1.0
    assert mcnemar_exact_p(3, 9) == pytest.approx(2 * (1 + 12 + 66 + 220) / 4096)
    lo, hi = paired_interval(10, 30, 100) or (0.0, 0.0)
    # p12 = 11/102, p21 = 31/102, d = 20/102, se = sqrt((42/102 - d^2) / 102)
    d = 20 / 102
    se = ((42 / 102 - d * d) / 102) ** 0.5
    assert (lo, hi) == (pytest.approx(d - 1.959964 * se, abs=1e-6), pytest.approx(d + 1.959964 * se, abs=1e-6))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """500-item arithmetic runs against emulators answering right with 0.8, 0.7 and 0.8 (another
    seed: an independent repeat), and one over other items (another task seed)."""
    base = tmp_path_factory.mktemp("acc")
    out = {}
    for name, accuracy, emu_seed, task_seed in (("a", 0.8, 1, 0), ("b", 0.7, 2, 0), ("c", 0.8, 3, 0), ("d", 0.8, 4, 9)):
        answers = f"tasks:arithmetic:{ITEMS}:{task_seed}"
        with pytps.Emulator(ttft_ms=0.5, itl_us=20, answers=answers, answer_accuracy=accuracy, seed=emu_seed) as emu:
            cfg = make_config(emu.base_url, tasks="arithmetic", seed=task_seed, output_tokens=2, concurrency=1,
                              requests=ITEMS, out=base / name)  # fmt: skip
            grading = run_coroutine(Runner(cfg).run()).summary["grading"]
            assert grading["correct"] == sum(t["answer"] == "right" for t in emu.wait_truth(ITEMS))
        out[name] = base / name
    return out


def test_08_against_07_is_significant_08_against_08_is_not(runs: dict[str, Path]) -> None:
    result = compare([load_side(str(runs["a"]), "A"), load_side(str(runs["b"]), "B"), load_side(str(runs["c"]), "C")])
    b, c = result["accuracy"]
    assert b["pairs"] == c["pairs"] == ITEMS
    assert b["significant"] and b["diff"] < 0 and b["ci95"][1] < 0
    assert not c["significant"] and c["ci95"][0] < 0 < c["ci95"][1]
    assert not any("graded different items" in w for w in result["warnings"])


def test_runs_over_different_items_are_warned_of(runs: dict[str, Path]) -> None:
    result = compare([load_side(str(runs["a"]), "A"), load_side(str(runs["d"]), "B")])
    (d,) = result["accuracy"]
    assert d["pairs"] == 0 and d["unpaired"] == {"base": ITEMS, "other": ITEMS}
    assert any("B and A graded different items" in w for w in result["warnings"])


def test_the_console_prints_the_accuracy_line(runs: dict[str, Path]) -> None:
    text = subprocess.run(
        [sys.executable, "-m", "pytps", "compare", str(runs["a"]), str(runs["b"])],
        capture_output=True, text=True, check=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert "accuracy B − A:" in text and "McNemar exact p =" in text and "significant *" in text
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "pytps", "compare", str(runs["a"]), str(runs["c"]), "--json"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    )
    assert doc["accuracy"][0]["significant"] is False
