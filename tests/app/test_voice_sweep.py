"""`pytps sweep --api openai-speech | openai-transcriptions --concurrency LIST` (pytps.app.voice_sweep):
one voice run per concurrency against the built-in emulator, the table from the catalogue, each
cell's row equal to its own run's figures, and the knee by its written rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytps.app.voice_sweep import voice_knee
from pytps.store.voice_entry import voice_figures

pytest.importorskip("jiwer")


def _sweep(tmp: Path, *flags: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    cmd = [sys.executable, "-m", "pytps", "sweep", "--requests", "4", "--speech-words", "4", "--no-store",
           "--out", str(tmp), *flags]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    return json.loads((tmp / "voice_sweep.json").read_text()), got.stdout


def test_a_speech_sweep_whose_every_level_stalls_has_no_knee(tmp_path: Path) -> None:
    index, shown = _sweep(tmp_path, "--api", "openai-speech", "--concurrency", "1,2", "--emu-speech-rtf", "1.2",
                          "--emu-speech-chunk-ms", "20")  # fmt: skip
    assert [c["concurrency"] for c in index["cells"]] == [1, 2]
    for c in index["cells"]:
        run = json.loads((tmp_path / c["dir"] / "voice.json").read_text())
        flat = voice_figures("openai-speech", run["summary"])
        assert {k: c[k] for k in c if k in flat} == {k: flat[k] for k in c if k in flat}
        assert c["stall_rate"] == 1.0 and run["metadata"]["concurrency"] == c["concurrency"]
    assert index["knee"] == {"concurrency": None, "rule": "no request stalled", "first_failing": 1}
    assert "TTFA p50 [ms]" in shown and "stalled requests [%]" in shown and "knee: none" in shown


def test_a_transcription_sweep_shows_wer_against_load(tmp_path: Path) -> None:
    index, shown = _sweep(tmp_path, "--api", "openai-transcriptions", "--concurrency", "1..4",
                          "--emu-stt-word-error-rate", "0.25")  # fmt: skip
    assert [c["concurrency"] for c in index["cells"]] == [1, 2, 4]
    assert all(c["wer"] == 0.25 for c in index["cells"])
    assert index["knee"]["concurrency"] == 4  # the emulator's RTFx (20) holds at every level
    assert "WER [%]" in shown and "RTFx p50 [×]" in shown


def test_the_knee_rules() -> None:
    rows = [{"concurrency": c, "ok": 4, "stall_rate": s} for c, s in ((1, 0.0), (2, 0.0), (4, 0.25), (8, 0.0))]
    assert voice_knee("openai-speech", rows) == {"concurrency": 2, "rule": "no request stalled", "first_failing": 4}
    stt = [{"concurrency": c, "ok": 4, "rtfx_p50": x} for c, x in ((1, 5.0), (2, 0.9))]
    assert voice_knee("openai-transcriptions", stt)["concurrency"] == 1


def test_a_voice_sweep_refuses_a_rate(tmp_path: Path) -> None:
    got = subprocess.run([sys.executable, "-m", "pytps", "sweep", "--api", "openai-speech", "--rate", "1,2",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert got.returncode != 0 and "concurrency only" in got.stderr
