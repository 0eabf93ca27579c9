"""Realtime transcription sessions against the realtime emulator in its own process: both session
shapes, deltas paced against the audio sent, end of speech → final transcript against the
emulator's truth, and frames leaving on their schedule."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytps.runner.voice_realtime import RealtimeSettings, run_realtime_sync
from pytps.workload.speech_inputs import espeak_items, spoken_texts

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)"
)


class _EmulatorProcess:
    def __init__(self, truth: Path, rate: int) -> None:
        self.truth_path = truth
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytps.realtime_emulator", str(truth), str(rate)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        self.url = f"ws://127.0.0.1:{self.proc.stdout.readline().strip()}/v1/realtime"

    def truth(self) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(20)
        return list(json.loads(self.truth_path.read_text()))


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[_EmulatorProcess]:
    emu = _EmulatorProcess(tmp_path / "truth.json", 22050)  # espeak-ng's rate
    yield emu
    if emu.proc.poll() is None:
        emu.proc.kill()
        emu.proc.wait()


def _run(emu: _EmulatorProcess, shape: str, sessions: int = 8) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    items = espeak_items(spoken_texts(sessions, seed=7, words=6))
    out = run_realtime_sync(RealtimeSettings(emu.url, "m", tuple(items), sessions=sessions, concurrency=sessions,
                                             shape=shape, frame_ms=20))
    return out, emu.truth()


def _check(out: dict[str, Any], truth: list[dict[str, Any]], limit_ns: int) -> None:
    assert out["summary"]["ok"] == len(truth) == len(out["sessions"])
    # Each session's final against the truth's final of the same transcript length and time.
    finals = sorted(int(r["t_final_ns"]) for r in out["sessions"])
    sent = sorted(int(t["final_sent_ns"]) for t in truth)
    errors_ns = [got - true for got, true in zip(finals, sent, strict=True)]
    assert max(abs(e) for e in errors_ns) < limit_ns, f"final − truth, µs: {[round(e / 1e3) for e in errors_ns]}"
    for r in out["sessions"]:
        assert r["text"] and r["deltas"] >= 1
        assert r["first_delta_s"] > 0 and r["final_s"] > 0
        assert r["frames"] == -(-round(r["input_audio_s"] * 22050) * 2 // 882)  # 20 ms frames of 441 samples


@pytest.mark.parametrize("shape", ["openai", "vllm"])
def test_realtime_sessions_both_shapes(emulator: _EmulatorProcess, shape: str) -> None:
    out, truth = _run(emulator, shape)
    assert {t["shape"] for t in truth} == {shape}
    _check(out, truth, 100_000_000)  # the default tier: the same message, on a busy machine


@pytest.mark.timing
def test_realtime_final_within_a_millisecond_and_frames_on_schedule(emulator: _EmulatorProcess) -> None:
    out, truth = _run(emulator, "openai")
    _check(out, truth, 1_000_000)
    late_p99_s = [r["frame_late_p99_s"] for r in out["sessions"]]
    assert max(late_p99_s) < 1e-3, f"frames' p99 lateness per session, µs: {[round(x * 1e6) for x in late_p99_s]}"
