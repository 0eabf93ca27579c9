"""Voice runs in the results store (pytps.store.voice_entry): `pytps run --api openai-speech |
openai-transcriptions` records a row of kind "voice" with its figures, `pytps history` shows them
with the catalogue's units, the fingerprint tells voice workloads apart, and `pytps history check`
finds a slower time to first audio. Real runs against the built-in emulator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytps.store.store import Store
from pytps.store.voice_entry import voice_figures

pytest.importorskip("jiwer")


def _run(tmp: Path, store: Path, out: str, *flags: str) -> None:
    cmd = [sys.executable, "-m", "pytps", "run", "--requests", "4", "--concurrency", "2", "--speech-words", "4",
           "--store", str(store), "--out", str(tmp / out), *flags]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr


def _pytps(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=120)


def test_voice_runs_are_recorded_trended_and_checked(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    speech = ("--api", "openai-speech", "--emu-speech-rtf", "0.5")
    for i in range(3):
        _run(tmp_path, store, f"tts{i}", *speech, "--emu-ttft-ms", "5")
    _run(tmp_path, store, "slow", *speech, "--emu-ttft-ms", "60")
    _run(tmp_path, store, "wav", *speech, "--audio-format", "wav")
    _run(tmp_path, store, "stt", "--api", "openai-transcriptions", "--emu-stt-word-error-rate", "0.25")
    with Store(str(store)) as s:
        runs = s.runs(kinds=["voice"])
    assert len(runs) == 6 and {r.endpoint for r in runs} == {"emulator://builtin"}
    by_folder = {Path(r.folder).name: r for r in runs}
    # One workload, one fingerprint; another audio format or API is another workload.
    prints = {name: r.fingerprint for name, r in by_folder.items()}
    assert len({prints["tts0"], prints["tts1"], prints["tts2"], prints["slow"]}) == 1
    assert len({prints["tts0"], prints["wav"], prints["stt"]}) == 3
    # The stored figures are the summary's, in seconds and fractions.
    slow = json.loads((tmp_path / "slow" / "voice.json").read_text())
    assert by_folder["slow"].figures == voice_figures("openai-speech", slow["summary"])
    assert by_folder["slow"].figures["ttfa_p50"] == slow["summary"]["figures"]["ttfa_s"]["p50"] >= 0.06
    assert by_folder["slow"].figures["stall_rate"] == 0.0
    assert by_folder["stt"].figures["wer"] == 0.25
    shown = _pytps("history", "--store", str(store), "--metric", "ttfa_p50,rtf_p50,wer,stall_rate")
    assert shown.returncode == 0, shown.stderr
    assert "ttfa_p50" in shown.stdout and " ms " in shown.stdout and "25.0 %" in shown.stdout
    check = _pytps("history", "check", "--store", str(store), "--metric", "ttfa_p50", "--json")
    found = [f for f in json.loads(check.stdout) if f["fingerprint"] == prints["slow"]]
    assert check.returncode == 1 and found[0]["regression"] and found[0]["latest"] == by_folder["slow"].id


def test_no_store_records_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    got = _pytps("run", "--api", "openai-speech", "--requests", "2", "--speech-words", "3", "--no-store",
                 "--store", str(store), "--out", str(tmp_path / "r"))  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert not store.exists()


def test_voice_figures_of_each_kind() -> None:
    d = {"count": 2, "mean": 0.5, "p50": 0.4, "p90": 0.6, "p99": 0.7}
    speech = {"ok": 4, "stalled_requests": 1, "audio_throughput": 3.0, "figures": {"ttfa_s": d, "rtf": None}}
    got = voice_figures("openai-speech", speech)
    assert got["stall_rate"] == 0.25 and got["ttfa_p99"] == 0.7 and "rtf_p50" not in got
    turn = voice_figures("voice-turn", {"figures": {"turn_s": d, "stt_s": d}})
    assert set(turn) == {f"{n}_{s}" for n in ("turn", "stt") for s in ("mean", "p50", "p90", "p99")}
    rt = voice_figures("openai-realtime", {"figures": {"final_s": d, "wer": d}})
    assert rt["eos_final_p50"] == 0.4 and rt["wer"] == 0.5
