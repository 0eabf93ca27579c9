"""A voice run's summary as console lines, from its saved voice.json: one line per figure,
hyperfine-style (mean ± σ, range, percentiles, count), then the run's aggregates."""

from __future__ import annotations

from typing import Any

_LABELS = {
    "ttfb_s": ("time to first byte", "ms", 1e3),
    "ttfa_s": ("time to first audio", "ms", 1e3),
    "first_playable_s": ("time to first playable audio", "ms", 1e3),
    "audio_s": ("audio per request", "s", 1.0),
    "generation_s": ("generation time", "s", 1.0),
    "rtf": ("real-time factor (RTF)", "", 1.0),
    "inverse_rtf": ("inverse RTF (x real time)", "", 1.0),
    "stalls": ("stalls per request", "", 1.0),
    "stalled_s": ("stalled time per request", "ms", 1e3),
    "input_audio_s": ("input audio", "s", 1.0),
    "first_text_s": ("time to first text", "ms", 1e3),
    "final_s": ("time to final transcript", "ms", 1e3),
    "rtfx": ("RTFx (audio s / processing s)", "", 1.0),
    "wer": ("WER per request", "", 1.0),
    "turn_s": ("turn: end of speech -> first audio", "ms", 1e3),
    "stt_s": ("  stt: -> final transcript", "ms", 1e3),
    "chat_s": ("  chat: -> first speakable piece", "ms", 1e3),
    "tts_s": ("  tts: -> first audio", "ms", 1e3),
    "chat_handoff_s": ("chat request sent after transcript", "ms", 1e3),
    "chat_ttft_s": ("chat TTFT", "ms", 1e3),
    "tts_handoff_s": ("speech request sent after piece", "ms", 1e3),
    "first_delta_s": ("start of speech -> first delta", "ms", 1e3),
    "frame_late_p50_s": ("frame lateness p50 per session", "ms", 1e3),
    "frame_late_p99_s": ("frame lateness p99 per session", "ms", 1e3),
    "frame_late_max_s": ("frame lateness max per session", "ms", 1e3),
}


def _line(label: str, unit: str, scale: float, d: dict[str, float]) -> str:
    u = f" {unit}" if unit else ""
    return (
        f"  {label + (f' [{unit}]' if unit else ''):<38} {d['mean'] * scale:10.3f} ± {d['sd'] * scale:<9.3f}"
        f" [{d['min'] * scale:.3f} … {d['max'] * scale:.3f}]{u}  p50 {d['p50'] * scale:.3f}"
        f"  p99 {d['p99'] * scale:.3f}  n={int(d['count'])}"
    )


def render_voice(data: dict[str, Any]) -> str:
    meta, s = data["metadata"], data["summary"]
    what = "text to speech" if meta["api"] == "openai-speech" else "speech to text"
    lines = [
        f"{what} ({meta['api']}) · {meta['model']} · concurrency {meta['concurrency']} · {s['ok']}/{s['requests']} ok",
    ]
    for name, d in s["figures"].items():
        if d is None:
            continue
        label, unit, scale = _LABELS.get(name, (name, "", 1.0))
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
            label, unit, scale = _LABELS.get(name, (name, "", 1.0))
            lines.append(_line(label, unit, scale, d))
    return "\n".join(lines)


def render_realtime(data: dict[str, Any]) -> str:
    """Realtime sessions' lines (voice_realtime.json); final_s is end of speech -> final transcript."""
    s, meta = data["summary"], data["metadata"]
    lines = [f"realtime ({meta['shape']}, {meta['frame_ms']:g} ms frames) · {s['ok']}/{s['sessions']} sessions ok"]
    for name, d in s["figures"].items():
        if d is not None:
            label, unit, scale = _LABELS.get(name, (name, "", 1.0))
            if name == "final_s":
                label = "end of speech -> final transcript"
            lines.append(_line(label, unit, scale, d))
    return "\n".join(lines)
