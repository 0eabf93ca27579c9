"""Realtime transcription sessions (`pytps run --api openai-realtime`): each utterance streamed
at the speed of speech over WebSocket (pytps.transport.realtime), all sessions at once up to the
concurrency; each session's figures from pytps.measure.voice.realtime_figures."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import subprocess
import sys
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.measure.voice import realtime_figures, transcript_errors
from pytps.measure.voice_summary import describe
from pytps.runner.event_loop import run_coroutine
from pytps.transport.realtime import REALTIME_SHAPES, realtime_session
from pytps.workload.speech_inputs import SpeechItem

__all__ = ["RealtimeSettings", "realtime_emulator_process", "run_realtime", "run_realtime_sync"]


@contextlib.contextmanager
def realtime_emulator_process(truth_path: Path | str, rate_hz: int) -> Iterator[str]:
    """The realtime emulator (pytps.realtime_emulator) in a process of its own, so no GIL is shared
    with the client: yields its ws:// URL; on exit its stdin is closed, and it writes its truth
    to truth_path and ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps.realtime_emulator", str(truth_path), str(rate_hz)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield f"ws://127.0.0.1:{proc.stdout.readline().strip()}/v1/realtime"
    finally:
        proc.stdin.close()
        proc.wait(30)


FIGURES = ("first_delta_s", "final_s", "frame_late_p50_s", "frame_late_p99_s", "frame_late_max_s")


@dataclass(frozen=True)
class RealtimeSettings:
    url: str  # ws://host:port/v1/realtime
    model: str
    items: tuple[SpeechItem, ...]
    sessions: int = 8
    concurrency: int = 8
    shape: str = "openai"
    frame_ms: float = 20.0

    def check(self) -> RealtimeSettings:
        if self.shape not in REALTIME_SHAPES:
            raise ConfigError(f"--realtime-shape must be one of {', '.join(REALTIME_SHAPES)}")
        if not self.url.startswith(("ws://", "wss://")):
            raise ConfigError(f"a realtime endpoint is a ws:// or wss:// URL, got {self.url!r}")
        if not 1 <= self.frame_ms <= 1000:
            raise ConfigError("--frame-ms must be within [1, 1000]")
        if not self.items:
            raise ConfigError("realtime needs audio: --audio-dataset FILE.jsonl, or espeak-ng to make it")
        return self


def _pcm(item: SpeechItem) -> tuple[bytes, int]:
    with wave.open(io.BytesIO(item.audio)) as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ConfigError(f"{item.name}: realtime sends 16-bit mono PCM; this WAV is not")
        return w.readframes(w.getnframes()), w.getframerate()


async def run_realtime(settings: RealtimeSettings) -> dict[str, Any]:
    s = settings.check()
    sem = asyncio.Semaphore(s.concurrency)

    async def one(i: int) -> dict[str, Any]:
        item = s.items[i % len(s.items)]
        pcm, rate = _pcm(item)
        async with sem:
            rec = await realtime_session(s.url, s.shape, s.model, pcm, sample_rate=rate, frame_ms=s.frame_ms)
        row: dict[str, Any] = {
            "index": i,
            "ok": rec.error is None and rec.t_final_ns is not None,
            "error": rec.error,
            "text": rec.text,
            "input_audio_s": len(pcm) / 2 / rate,
        }
        row.update(
            realtime_figures(
                rec.t_speech_start_ns,
                rec.t_speech_end_ns,
                rec.delta_ns,
                rec.t_final_ns,
                rec.frame_due_ns,
                rec.frame_sent_ns,
            )
        )
        row["t_final_ns"] = rec.t_final_ns
        if item.reference is not None and row["ok"]:
            row["wer"] = transcript_errors(item.reference, rec.text).wer
        return row

    # The heap made before the sessions is frozen out of the collector while they run: a full
    # collection walks all of it (milliseconds), and one falling between a socket read and its
    # stamp would be counted as the server's time. The sessions' own garbage is still collected.
    gc.collect()
    gc.freeze()
    try:
        rows = list(await asyncio.gather(*(one(i) for i in range(s.sessions))))
    finally:
        gc.unfreeze()
    ok = [r for r in rows if r["ok"]]
    summary = {
        "sessions": len(rows),
        "ok": len(ok),
        "errors": len(rows) - len(ok),
        "figures": {n: describe([float(r[n]) for r in ok if r.get(n) is not None]) for n in FIGURES},
    }
    return {"summary": summary, "sessions": rows}


def run_realtime_sync(settings: RealtimeSettings) -> dict[str, Any]:
    return run_coroutine(run_realtime(settings))
