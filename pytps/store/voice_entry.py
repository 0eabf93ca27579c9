"""A voice run in the results store (kind "voice"): its flat figures, by the names `pytps history`
and `history check` take (`ttfa_p50`, `stall_rate`, `wer`, `eos_final_p99`, `turn_p50`, ...), and
the metadata its fingerprint is made of, so that two voice runs are comparable exactly when they
asked for the same thing (the API, the audio format, the player's buffer, the texts or audio, the
concurrency): docs/results.md, "The results store"; the figures' definitions: docs/metrics.md."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["VOICE_FIGURE_NAMES", "texts_fingerprint", "voice_figures", "voice_store_metadata"]

_STATS = ("mean", "p50", "p90", "p99")

# What each kind of voice run keeps: (the row's figure key, the store's name for it).
_DISTRIBUTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "openai-speech": (
        ("ttfa_s", "ttfa"),
        ("first_playable_s", "first_playable"),
        ("rtf", "rtf"),
        ("inverse_rtf", "inverse_rtf"),
        ("stalls", "stalls"),
        ("stalled_s", "stalled"),
    ),
    "openai-transcriptions": (("first_text_s", "first_text"), ("final_s", "final"), ("rtfx", "rtfx")),
    # realtime's final_s is end of speech → final transcript: another figure than STT's final_s.
    "openai-realtime": (("first_delta_s", "first_delta"), ("final_s", "eos_final")),
    "voice-turn": (("turn_s", "turn"), ("stt_s", "stt"), ("chat_s", "chat"), ("tts_s", "tts")),
}
_SCALARS: dict[str, tuple[str, ...]] = {
    "openai-speech": ("audio_throughput", "stall_rate"),
    "openai-transcriptions": ("audio_throughput", "wer", "cer"),
    "openai-realtime": ("wer",),
    "voice-turn": (),
}


def _names() -> tuple[str, ...]:
    out: list[str] = []
    for what, pairs in _DISTRIBUTIONS.items():
        out += [f"{name}_{stat}" for _, name in pairs for stat in _STATS]
        out += list(_SCALARS[what])
    return tuple(dict.fromkeys(out))


#: Every figure name a voice run may record (pytps history --metric accepts them).
VOICE_FIGURE_NAMES = _names()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def voice_figures(what: str, summary: Mapping[str, Any]) -> dict[str, float]:
    """The store's figures of a voice run's summary; `what` is its API (openai-speech,
    openai-transcriptions, openai-realtime) or "voice-turn". Times in seconds, shares as fractions."""
    out: dict[str, float] = {}
    dists = summary.get("figures") or {}
    for key, name in _DISTRIBUTIONS[what]:
        d = dists.get(key)
        if not isinstance(d, dict) or not d.get("count"):
            continue
        for stat in _STATS:
            v = _number(d.get(stat))
            if v is not None:
                out[f"{name}_{stat}"] = v
    for name in _SCALARS[what]:
        v = _number(summary.get(name))
        if name == "stall_rate" and summary.get("ok"):
            v = _number(summary.get("stalled_requests"))
            v = None if v is None else v / float(summary["ok"])
        if name == "wer" and v is None and what == "openai-realtime":
            w = dists.get("wer")
            v = _number(w.get("mean")) if isinstance(w, dict) and w.get("count") else None
        if v is not None:
            out[name] = v
    return out


def voice_store_metadata(
    what: str,
    url: str,
    model: str,
    concurrency: int,
    workload: Mapping[str, Any],
    date_utc: str,
) -> dict[str, Any]:
    """results.json-shaped metadata for the store: the endpoint's parts (no userinfo, no query),
    and the workload the fingerprint hashes (`kind: voice`, the API or voice-turn, and `workload`:
    what the run asked for; not the seed, which varies by design)."""
    u = urlsplit(url)
    api = "voice-turn" if what == "voice-turn" else what
    return {
        "date_utc": date_utc,
        "endpoint": {"scheme": u.scheme, "host": u.hostname, "port": u.port, "path": u.path},
        "model": model,
        "api": api,
        "transport": "native" if what in ("openai-speech", "openai-transcriptions") else "python",
        "workload": {"kind": "voice", **{k: v for k, v in workload.items() if k != "seed"}},
        "load": {"mode": "concurrency", "concurrency": concurrency},
    }


def texts_fingerprint(texts: Iterable[str]) -> str:
    """A short hash of the texts spoken or the references transcribed (the workload's content)."""
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
