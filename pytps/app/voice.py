"""Voice jobs (docs/voice.md): a text-to-speech or speech-to-text run, realtime transcription
sessions, and voice turns (stt → chat → tts). Each takes the run's flags as a mapping (`opts`: the
table's voice settings and the run's shared ones: base_url, api, model, requests, concurrency,
warmup, seed, timeout, header, stream, out, emu_ttft_ms, emu_itl_us), writes its JSON file in the
results folder and returns (the data written, the folder). The CLI prints; the library may call
these directly."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pytps.app.runs import results_folder
from pytps.errors import ConfigError
from pytps.settings.table import parse_headers
from pytps.workload.speech_inputs import (
    SpeechItem,
    espeak_items,
    load_audio_dataset,
    spoken_texts,
)

__all__ = ["realtime_job", "voice_job", "voice_turn_job"]

Say = Callable[[str], None]
#: The endpoint a voice run against the built-in emulator is recorded under in the results store.
BUILTIN_EMULATOR = "emulator://builtin"


def _texts(opts: Mapping[str, Any], n: int) -> tuple[str, ...]:
    if opts["speech_texts"]:
        p = Path(opts["speech_texts"])
        if not p.is_file():
            raise ConfigError(f"--speech-texts {p}: no such file (one text to speak per line)")
        texts = tuple(line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
        if not texts:
            raise ConfigError(f"--speech-texts {p}: no text in it")
        return texts
    return tuple(spoken_texts(n, opts["seed"], opts["speech_words"]))


def _utterances(opts: Mapping[str, Any], n: int) -> tuple[SpeechItem, ...]:
    if opts["audio_dataset"]:
        return tuple(load_audio_dataset(opts["audio_dataset"]))
    return tuple(espeak_items(spoken_texts(min(n, 100), opts["seed"], opts["speech_words"])))


def _speech_clips(opts: Mapping[str, Any]) -> dict[str, tuple[bytes, float]]:
    """The built-in emulator's clip of a compressed --audio-format: a tone as long as a generated
    text's speech (--speech-words at the emulator's 2.5 words per second), encoded once."""
    from pytps.measure.audio_codec import CODED_FORMATS, require_decoder
    from pytps.workload.coded_speech import encoded_speech

    fmt = opts.get("audio_format")
    if opts.get("api") != "openai-speech" or fmt not in CODED_FORMATS:
        return {}
    require_decoder(fmt)
    clip = encoded_speech(fmt, max(1, int(opts["speech_words"])) / 2.5, int(opts["sample_rate"]))
    return {fmt: (clip.data, clip.seconds)}


def _emulator(stack: ExitStack, opts: Mapping[str, Any], items: tuple[SpeechItem, ...]) -> str:
    from pytps.emulator import Emulator

    emu = stack.enter_context(
        Emulator(
            ttft_ms=opts["emu_ttft_ms"],
            itl_us=opts["emu_itl_us"],
            keep_truth=False,
            speech_rtf=opts["emu_speech_rtf"],
            speech_chunk_ms=opts["emu_speech_chunk_ms"],
            speech_sample_rate=opts["sample_rate"],
            stt_rtfx=opts["emu_stt_rtfx"],
            stt_word_error_rate=opts["emu_stt_word_error_rate"],
            stt_vllm_shape=opts["emu_stt_vllm_shape"],
            transcripts=[(i.audio, i.reference) for i in items if i.reference is not None],
            speech_clips=_speech_clips(opts),
        )
    )
    url: str = emu.base_url
    return url


def _write(out_dir: Path, name: str, data: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(out_dir / name)


def _inputs(opts: Mapping[str, Any], what: str) -> dict[str, Any]:
    """What the run spoke or transcribed, for the store's fingerprint: a file by name and hash, or
    generated text by its length (the seed stays out: reruns vary it by design)."""
    from pytps.store.fingerprint import file_sha256

    key = "speech_texts" if what == "openai-speech" else "audio_dataset"
    if opts.get(key):
        return {key: Path(opts[key]).name, f"{key}_sha256": file_sha256(opts[key])}
    return {"generated_words": opts["speech_words"]}


def _record(
    opts: Mapping[str, Any], what: str, url: str, model: str, workload: dict[str, Any], data: dict[str, Any], out: Path
) -> None:
    """The run in the results store (kind "voice"), unless --no-store; a store that fails warns in
    one line and the folder stays complete (pytps.store.run_entry)."""
    from pytps.store.run_entry import record_in_store
    from pytps.store.voice_entry import voice_figures, voice_store_metadata

    if opts.get("no_store") or opts.get("store") is False:
        return
    if not opts.get("base_url") and not (what == "voice-turn" and opts.get("tts_url")):
        # The built-in emulator's port changes from run to run; its runs are one endpoint's.
        url = BUILTIN_EMULATOR
    date = str(data.get("metadata", {}).get("date_utc") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    meta = voice_store_metadata(what, url, model, opts["concurrency"] or 1, workload, date)
    summary = data["summary"]
    figures = voice_figures(what, summary)
    store = opts.get("store")
    spec = None if store is None or isinstance(store, bool) else str(store)
    record_in_store(spec, {"metadata": meta, "summary": summary}, out, kind="voice", figures=figures)


def _max_tokens(value: object) -> int:
    """--output-tokens for speech to text through a chat model: one integer (default 128)."""
    if value is None:
        return 128
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise ConfigError(f"--output-tokens {value!r}: speech to text through chat takes one integer >= 1")
    return int(text)


def voice_job(opts: Mapping[str, Any], say: Say) -> tuple[dict[str, Any], Path]:
    """--api openai-speech or openai-transcriptions: voice.json."""
    from pytps.measure.voice import PcmFormat
    from pytps.runner.voice import VoiceSettings, run_voice_sync

    if opts.get("config") or opts.get("rate") is not None or opts.get("duration") is not None:
        raise ConfigError("a voice run takes --concurrency and --requests (no -c FILE, --rate or --duration yet)")
    requests = opts["requests"] or 20
    items: tuple[SpeechItem, ...] = ()
    texts: tuple[str, ...] = ()
    if opts["api"] == "openai-speech":
        texts = _texts(opts, requests)
    else:
        items = _utterances(opts, requests)
    with ExitStack() as stack:
        base_url = opts["base_url"]
        if base_url is None:
            base_url = _emulator(stack, opts, items)
            say(f"no --base-url: a voice run against the built-in emulator at {base_url}")
        elif not opts["model"]:
            raise ConfigError("--model is required for a voice run against a server (e.g. tts-1, whisper-1)")
        settings = VoiceSettings(
            base_url=base_url,
            api=opts["api"],
            model=opts["model"] or "pytps-emulator",
            requests=requests,
            concurrency=opts["concurrency"] or 1,
            warmup=opts["warmup"],
            texts=texts,
            audio_format=opts["audio_format"],
            stream_format=opts["speech_stream_format"],
            voice=opts["voice"],
            pcm=PcmFormat(opts["sample_rate"]),
            playback_buffer_ms=opts["playback_buffer_ms"],
            items=items,
            stream=opts["stream"],
            stt_request=opts.get("stt_request") or "transcriptions",
            max_tokens=_max_tokens(opts.get("output_tokens")),
            headers=parse_headers(opts["header"]),
            read_timeout_s=opts["timeout"],
        )
        result = run_voice_sync(settings)
    out_dir = results_folder(opts["out"], "voice")
    result.save(out_dir)
    data = result.to_json()
    workload: dict[str, Any] = {"stream": settings.stream, **_inputs(opts, settings.api)}
    if settings.via_chat:
        workload.update(stt_request="chat", max_tokens=settings.max_tokens)
    if settings.api == "openai-speech":
        workload.update(
            audio_format=settings.audio_format,
            stream_format=settings.stream_format,
            voice=settings.voice,
            sample_rate=opts["sample_rate"],
            playback_buffer_ms=settings.playback_buffer_ms,
        )
    _record(opts, settings.api, settings.base_url, settings.model, workload, data, out_dir)
    return data, out_dir


def voice_turn_job(opts: Mapping[str, Any], say: Say) -> tuple[dict[str, Any], Path]:
    """--pipeline stt,chat,tts: voice_turn.json."""
    from pytps.runner.voice_turn import TurnSettings, run_turns_sync

    if [x.strip() for x in str(opts["pipeline"]).split(",")] != ["stt", "chat", "tts"]:
        raise ConfigError(f"--pipeline {opts['pipeline']!r}: the voice turn is 'stt,chat,tts'")
    turns = opts["requests"] or 8
    items = _utterances(opts, turns)
    with ExitStack() as stack:
        urls = {stage: opts[f"{stage}_url"] or opts["base_url"] for stage in ("stt", "chat", "tts")}
        if any(u is None for u in urls.values()):
            emu_url = _emulator(stack, opts, items)
            urls = {k: v or emu_url for k, v in urls.items()}
            say(f"the built-in emulator at {emu_url} serves the stages without a URL")
        models = {stage: opts[f"{stage}_model"] or opts["model"] or "pytps-emulator" for stage in urls}
        settings = TurnSettings(
            urls["stt"],
            urls["chat"],
            urls["tts"],
            models["stt"],
            models["chat"],
            models["tts"],
            items,
            turns=turns,
            concurrency=opts["concurrency"] or 1,
            voice=opts["voice"],
        )
        result = run_turns_sync(settings)
    out_dir = results_folder(opts["out"], "voice-turn")
    data = {
        "metadata": {"pipeline": "stt,chat,tts", "urls": urls, "models": models},
        "summary": result.summary,
        "turns": result.rows,
    }
    _write(out_dir, "voice_turn.json", data)
    workload = {"stages": "stt,chat,tts", "models": models, **_inputs(opts, "voice-turn")}
    _record(opts, "voice-turn", urls["tts"], models["chat"], workload, data, out_dir)
    return data, out_dir


def realtime_job(opts: Mapping[str, Any], say: Say) -> tuple[dict[str, Any], Path]:
    """--api openai-realtime: sessions against --base-url (ws://.../v1/realtime) or the realtime
    emulator, started in its own process; voice_realtime.json."""
    from pytps.runner.voice_realtime import RealtimeSettings, realtime_emulator_process, run_realtime_sync

    sessions = opts["requests"] or 8
    items = _utterances(opts, sessions)
    with ExitStack() as stack:
        url = opts["base_url"]
        if url is None:
            import io
            import wave

            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="pytps-realtime-"))
            with wave.open(io.BytesIO(items[0].audio)) as w:
                rate = int(w.getframerate())
            url = stack.enter_context(realtime_emulator_process(f"{tmp}/truth.json", rate))
            say(f"no --base-url: realtime sessions against the realtime emulator at {url}")
        settings = RealtimeSettings(
            url,
            opts["model"] or "pytps-emulator",
            items,
            sessions=sessions,
            concurrency=opts["concurrency"] or sessions,
            shape=opts["realtime_shape"],
            frame_ms=opts["frame_ms"],
        )
        data = run_realtime_sync(settings)
    data["metadata"] = {
        "api": "openai-realtime",
        "url": url,
        "shape": opts["realtime_shape"],
        "frame_ms": opts["frame_ms"],
    }
    out_dir = results_folder(opts["out"], "realtime")
    _write(out_dir, "voice_realtime.json", data)
    workload = {"shape": opts["realtime_shape"], "frame_ms": opts["frame_ms"], **_inputs(opts, "openai-realtime")}
    _record(opts, "openai-realtime", url, opts["model"] or "pytps-emulator", workload, data, out_dir)
    return data, out_dir
