"""A voice run's summary as console lines, from its saved voice.json: one line per figure,
hyperfine-style (mean ± σ, range, percentiles, count), then the run's aggregates."""

from __future__ import annotations

from typing import Any

from pytps.measure.catalogue import metric


def _heading(name: str) -> tuple[str, str, float]:
    """(heading with its unit, unit, scale) of a row's figure, from the catalogue (pytps.measure.catalogue)."""
    m = metric(name)
    return m.heading, m.unit, m.scale


def _line(label: str, unit: str, scale: float, d: dict[str, float]) -> str:
    u = f" {unit}" if unit else ""
    return (
        f"  {label:<38} {d['mean'] * scale:10.3f} ± {d['sd'] * scale:<9.3f}"
        f" [{d['min'] * scale:.3f} … {d['max'] * scale:.3f}]{u}  p50 {d['p50'] * scale:.3f}"
        f"  p99 {d['p99'] * scale:.3f}  n={int(d['count'])}"
    )


def render_voice(data: dict[str, Any]) -> str:
    meta, s = data["metadata"], data["summary"]
    what = "text to speech" if meta["api"] == "openai-speech" else "speech to text"
    how = meta["api"] + (", input_audio chat parts" if meta.get("stt_request") == "chat" else "")
    lines = [
        f"{what} ({how}) · {meta['model']} · concurrency {meta['concurrency']} · {s['ok']}/{s['requests']} ok",
    ]
    for name, d in s["figures"].items():
        if d is None:
            continue
        label, unit, scale = _heading(name)
        lines.append(_line(label, unit, scale, d))
    if s.get("audio_throughput") is not None:
        lines.append(f"  audio throughput (all streams)          {s['audio_throughput']:10.3f} audio s per s")
    if meta["api"] == "openai-speech":
        lines.append(
            f"  requests that stalled                   {s['stalled_requests']:10d} of {s['ok']}"
            f" (player buffer {meta['playback_buffer_ms']:g} ms)"
        )
    elif s.get("wer") is not None:
        lines.append(
            f"  WER (all words)                         {s['wer']:10.4f}  ({s['word_errors']}/{s['ref_words']})"
            f"  CER {s['cer']:.4f}"
        )
    return "\n".join(lines)


def render_turns(data: dict[str, Any]) -> str:
    """A voice turn run's lines (voice_turn.json): the turn, its three stages, the hand-offs."""
    s = data["summary"]
    lines = [f"voice turn (stt,chat,tts) · {s['ok']}/{s['turns']} ok"]
    for name, d in s["figures"].items():
        if d is not None:
            label, unit, scale = _heading(name)
            lines.append(_line(label, unit, scale, d))
    return "\n".join(lines)


def render_realtime(data: dict[str, Any]) -> str:
    """Realtime sessions' lines (voice_realtime.json); final_s is end of speech -> final transcript."""
    s, meta = data["summary"], data["metadata"]
    lines = [f"realtime ({meta['shape']}, {meta['frame_ms']:g} ms frames) · {s['ok']}/{s['sessions']} sessions ok"]
    for name, d in s["figures"].items():
        if d is not None:
            label, unit, scale = _heading("eos_final_s" if name == "final_s" else name)
            lines.append(_line(label, unit, scale, d))
    return "\n".join(lines)
