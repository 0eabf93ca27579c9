"""`pytps run --api openai-speech | openai-transcriptions`: a voice run (pytps.runner.voice) on the
flags, against --base-url or the built-in emulator's audio routes; voice.json in the results
folder, and the summary's lines (pytps.report.voice_console)."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from pytps.cli.run_args import _parse_headers, results_dir
from pytps.errors import ConfigError


def _texts(args: argparse.Namespace, n: int) -> tuple[str, ...]:
    from pytps.workload.speech_inputs import spoken_texts

    if args.speech_texts:
        p = Path(args.speech_texts)
        if not p.is_file():
            raise ConfigError(f"--speech-texts {p}: no such file (one text to speak per line)")
        texts = tuple(line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
        if not texts:
            raise ConfigError(f"--speech-texts {p}: no text in it")
        return texts
    return tuple(spoken_texts(n, args.seed, args.speech_words))


def cmd_voice(args: argparse.Namespace) -> int:
    from pytps.measure.voice import PcmFormat
    from pytps.report.voice_console import render_voice
    from pytps.runner.voice import VoiceSettings, run_voice_sync
    from pytps.workload.speech_inputs import SpeechItem, espeak_items, load_audio_dataset, spoken_texts

    if args.config or args.rate is not None or args.duration is not None:
        raise ConfigError("a voice run takes --concurrency and --requests (no -c FILE, --rate or --duration yet)")
    requests = args.requests or 20
    concurrency = args.concurrency or 1
    items: tuple[SpeechItem, ...] = ()
    texts: tuple[str, ...] = ()
    if args.api == "openai-speech":
        texts = _texts(args, requests)
    elif args.audio_dataset:
        items = tuple(load_audio_dataset(args.audio_dataset))
    else:
        items = tuple(espeak_items(spoken_texts(min(requests, 100), args.seed, args.speech_words)))
    with ExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            from pytps.emulator import Emulator

            emu = stack.enter_context(
                Emulator(
                    ttft_ms=args.emu_ttft_ms,
                    keep_truth=False,
                    speech_rtf=args.emu_speech_rtf,
                    speech_chunk_ms=args.emu_speech_chunk_ms,
                    speech_sample_rate=args.sample_rate,
                    stt_rtfx=args.emu_stt_rtfx,
                    stt_word_error_rate=args.emu_stt_word_error_rate,
                    stt_vllm_shape=args.emu_stt_vllm_shape,
                    transcripts=[(i.audio, i.reference) for i in items if i.reference is not None],
                )
            )
            base_url = emu.base_url
            print(f"no --base-url: a voice run against the built-in emulator at {base_url}", file=sys.stderr)
        if not args.model and args.base_url is not None:
            raise ConfigError("--model is required for a voice run against a server (e.g. tts-1, whisper-1)")
        settings = VoiceSettings(
            base_url=base_url,
            api=args.api,
            model=args.model or "pytps-emulator",
            requests=requests,
            concurrency=concurrency,
            warmup=args.warmup,
            texts=texts,
            audio_format=args.audio_format,
            stream_format=args.speech_stream_format,
            voice=args.voice,
            pcm=PcmFormat(args.sample_rate),
            playback_buffer_ms=args.playback_buffer_ms,
            items=items,
            stream=args.stream,
            headers=_parse_headers(args.header),
            read_timeout_s=args.timeout,
        )
        result = run_voice_sync(settings)
    out_dir = results_dir(args, "voice")
    result.save(out_dir)
    data = result.to_json()
    if args.json:
        print(json.dumps(data["summary"], indent=2))
    else:
        print(render_voice(data))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0 if result.summary["ok"] else 3


def cmd_voice_turn(args: argparse.Namespace) -> int:
    """`pytps run --pipeline stt,chat,tts`: voice turns (pytps.runner.voice_turn)."""
    from pytps.report.voice_console import render_turns
    from pytps.runner.voice_turn import TurnSettings, run_turns_sync
    from pytps.workload.speech_inputs import espeak_items, load_audio_dataset, spoken_texts

    if [x.strip() for x in args.pipeline.split(",")] != ["stt", "chat", "tts"]:
        raise ConfigError(f"--pipeline {args.pipeline!r}: the voice turn is 'stt,chat,tts'")
    turns = args.requests or 8
    if args.audio_dataset:
        items = tuple(load_audio_dataset(args.audio_dataset))
    else:
        items = tuple(espeak_items(spoken_texts(min(turns, 100), args.seed, args.speech_words)))
    with ExitStack() as stack:
        urls = {stage: getattr(args, f"{stage}_url") or args.base_url for stage in ("stt", "chat", "tts")}
        if any(u is None for u in urls.values()):
            from pytps.emulator import Emulator

            emu = stack.enter_context(
                Emulator(
                    ttft_ms=args.emu_ttft_ms,
                    itl_us=args.emu_itl_us,
                    keep_truth=False,
                    speech_rtf=args.emu_speech_rtf,
                    speech_chunk_ms=args.emu_speech_chunk_ms,
                    stt_rtfx=args.emu_stt_rtfx,
                    stt_word_error_rate=args.emu_stt_word_error_rate,
                    transcripts=[(i.audio, i.reference) for i in items if i.reference is not None],
                )
            )
            urls = {k: v or emu.base_url for k, v in urls.items()}
            print(f"the built-in emulator at {emu.base_url} serves the stages without a URL", file=sys.stderr)
        models = {stage: getattr(args, f"{stage}_model") or args.model or "pytps-emulator" for stage in urls}
        settings = TurnSettings(
            urls["stt"],
            urls["chat"],
            urls["tts"],
            models["stt"],
            models["chat"],
            models["tts"],
            items,
            turns=turns,
            concurrency=args.concurrency or 1,
            voice=args.voice,
        )
        result = run_turns_sync(settings)
    out_dir = results_dir(args, "voice-turn")
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "metadata": {"pipeline": "stt,chat,tts", "urls": urls, "models": models},
        "summary": result.summary,
        "turns": result.rows,
    }
    (out_dir / "voice_turn.json").write_text(json.dumps(data, indent=1))
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(render_turns(data))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0 if result.summary["ok"] else 3


def cmd_realtime(args: argparse.Namespace) -> int:
    """`pytps run --api openai-realtime`: realtime transcription sessions (pytps.runner.voice_realtime)
    against --base-url (ws://.../v1/realtime) or the realtime emulator, started in its own process."""
    import subprocess
    import tempfile

    from pytps.report.voice_console import render_realtime
    from pytps.runner.voice_realtime import RealtimeSettings, run_realtime_sync
    from pytps.workload.speech_inputs import espeak_items, load_audio_dataset, spoken_texts

    sessions = args.requests or 8
    if args.audio_dataset:
        items = tuple(load_audio_dataset(args.audio_dataset))
    else:
        items = tuple(espeak_items(spoken_texts(min(sessions, 100), args.seed, args.speech_words)))
    with ExitStack() as stack:
        url = args.base_url
        if url is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="pytps-realtime-"))
            rate = _wav_rate(items[0].audio)
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytps.realtime_emulator", f"{tmp}/truth.json", str(rate)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            stack.callback(proc.wait, 20)
            stack.callback(lambda: proc.stdin.close() if proc.stdin else None)
            assert proc.stdout is not None
            url = f"ws://127.0.0.1:{proc.stdout.readline().strip()}/v1/realtime"
            print(f"no --base-url: realtime sessions against the realtime emulator at {url}", file=sys.stderr)
        settings = RealtimeSettings(
            url,
            args.model or "pytps-emulator",
            items,
            sessions=sessions,
            concurrency=args.concurrency or sessions,
            shape=args.realtime_shape,
            frame_ms=args.frame_ms,
        )
        data = run_realtime_sync(settings)
    out_dir = results_dir(args, "realtime")
    out_dir.mkdir(parents=True, exist_ok=True)
    data["metadata"] = {"api": "openai-realtime", "url": url, "shape": args.realtime_shape, "frame_ms": args.frame_ms}
    (out_dir / "voice_realtime.json").write_text(json.dumps(data, indent=1))
    if args.json:
        print(json.dumps(data["summary"], indent=2))
    else:
        print(render_realtime(data))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0 if data["summary"]["ok"] else 3


def _wav_rate(audio: bytes) -> int:
    import io
    import wave

    with wave.open(io.BytesIO(audio)) as w:
        return int(w.getframerate())
