"""The flags of a voice run (`pytps run --api openai-speech | openai-transcriptions`), in one
block to port into the settings table (issue 34) as it lands. The run's own flags (--base-url,
--model, --concurrency, --requests, --warmup, --seed, --timeout, --out, --json) are shared."""

from __future__ import annotations

import argparse

from pytps.measure.voice import DEFAULT_PLAYBACK_BUFFER_MS


def add_voice_arguments(p: argparse.ArgumentParser) -> None:
    v = p.add_argument_group("voice (--api openai-speech, openai-transcriptions; docs/voice.md)")
    v.add_argument(
        "--playback-buffer-ms",
        type=float,
        default=DEFAULT_PLAYBACK_BUFFER_MS,
        metavar="MS",
        help="text to speech: the simulated player holds the first audio this long before it plays "
        "(default %(default)s)",
    )
    v.add_argument("--audio-format", choices=("pcm", "wav"), default="pcm", help="text to speech's response_format")
    v.add_argument(
        "--speech-stream-format",
        choices=("audio", "sse"),
        default="audio",
        help="text to speech: raw audio bytes, or SSE speech.audio.delta events (default audio)",
    )
    v.add_argument("--voice", default="alloy", help="text to speech's voice (default alloy)")
    v.add_argument("--sample-rate", type=int, default=24000, metavar="HZ", help="pcm's sample rate (default 24000)")
    v.add_argument("--speech-texts", metavar="FILE", help="text to speech: one text per line (default: generated)")
    v.add_argument("--speech-words", type=int, default=12, metavar="N", help="words per generated text (default 12)")
    v.add_argument(
        "--audio-dataset",
        metavar="FILE",
        help='speech to text: JSONL of {"audio": "file.wav", "text": "its transcript"} (default: espeak-ng speech)',
    )
    v.add_argument("--emu-speech-rtf", type=float, default=0.5, metavar="X", help="emulator: TTS real-time factor")
    v.add_argument("--emu-speech-chunk-ms", type=float, default=40.0, metavar="MS", help="emulator: TTS chunk")
    v.add_argument("--emu-stt-rtfx", type=float, default=20.0, metavar="X", help="emulator: STT speed")
    v.add_argument("--emu-stt-word-error-rate", type=float, default=0.0, metavar="P", help="emulator: planted WER")
    v.add_argument(
        "--emu-stt-vllm-shape", action="store_true", help="emulator: stream vLLM's chat-style transcription chunks"
    )
    v.add_argument("--frame-ms", type=float, default=20.0, metavar="MS", help="realtime: audio per frame (default 20)")
    v.add_argument(
        "--realtime-shape",
        choices=("openai", "vllm"),
        default="openai",
        help="realtime: OpenAI's transcription session or vLLM's /v1/realtime (default openai)",
    )
    v.add_argument(
        "--pipeline",
        metavar="STAGES",
        help="a voice turn: 'stt,chat,tts' (end of user speech -> first audio of the reply, in three stages)",
    )
    for stage in ("stt", "chat", "tts"):
        v.add_argument(f"--{stage}-url", metavar="URL", help=f"a voice turn's {stage} endpoint (default --base-url)")
        v.add_argument(f"--{stage}-model", metavar="NAME", help=f"a voice turn's {stage} model")
