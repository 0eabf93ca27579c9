"""Client CPU per audio chunk of a text-to-speech stream, at 64 concurrent streams, for raw PCM,
WAV and SSE audio, in one run against the emulator in its own process (so this process's CPU time
is the client's alone: the event loop, the native engine thread, the figures).

Each stream is 2 s of audio in 20 ms chunks, written at RTF 0.5 (one chunk every 10 ms per stream:
6,400 chunks per second over all streams). Printed: the client's CPU (user + system) per audio
chunk read, and per request; the ratio to PCM's per chunk. Then 64 realtime sessions (WebSocket,
20 ms frames: 3,200 frames per second) against the realtime emulator in its own process: the
client's CPU per frame sent (its pacing, base64, the send, and the deltas received).

    python bench/bench_voice.py [--streams 64] [--requests 192]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile

from pytps.runner.voice import VoiceSettings, run_voice_sync
from pytps.runner.voice_realtime import RealtimeSettings, run_realtime_sync
from pytps.workload.speech_inputs import SpeechItem

EMULATOR = """
import sys, time, pytps
emu = pytps.Emulator(ttft_ms=10, speech_rtf=0.5, speech_chunk_ms=20, speech_words_per_s=10, keep_truth=False).start()
print(emu.port, flush=True)
sys.stdin.read()
emu.stop()
"""


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--requests", type=int, default=192)
    args = ap.parse_args()
    emu = subprocess.Popen([sys.executable, "-c", EMULATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert emu.stdout is not None
        base_url = f"http://127.0.0.1:{emu.stdout.readline().strip()}"
        text = " ".join(["word"] * 20)  # 2 s of audio
        rows = []
        for fmt, stream_format in (("pcm", "audio"), ("wav", "audio"), ("pcm", "sse")):
            s = VoiceSettings(
                base_url,
                "openai-speech",
                "tts",
                requests=args.requests,
                concurrency=args.streams,
                texts=(text,),
                audio_format=fmt,
                stream_format=stream_format,
            )
            run_voice_sync(VoiceSettings(base_url, "openai-speech", "tts", requests=4, texts=(text,)))  # warm
            before = cpu_s()
            result = run_voice_sync(s)
            used = cpu_s() - before
            chunks = sum(int(r["audio_chunks"]) for r in result.rows if r["ok"])
            ok = result.summary["ok"]
            rows.append((f"{fmt}/{stream_format}", used, chunks, ok))
        base = rows[0][1] / rows[0][2]
        print(f"{'format':<10} {'requests':>8} {'chunks':>8} {'CPU us/chunk':>13} {'CPU ms/request':>15} {'vs pcm':>7}")
        for name, used, chunks, ok in rows:
            per = used / chunks
            print(f"{name:<10} {ok:>8} {chunks:>8} {per * 1e6:>13.2f} {used / ok * 1e3:>15.3f} {per / base:>7.2f}")
    finally:
        if emu.stdin:
            emu.stdin.close()
        emu.wait(timeout=10)
    realtime(args.streams)


def _wav(seconds: float, rate: int = 24000) -> bytes:
    from pytps.workload.speech_inputs import mono_wav

    return mono_wav(b"\x01\x00" * int(seconds * rate), rate)


def realtime(streams: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytps.realtime_emulator", f"{tmp}/t.json", "24000"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = f"ws://127.0.0.1:{proc.stdout.readline().strip()}/v1/realtime"
            item = SpeechItem(_wav(3.0), None)
            before = cpu_s()
            out = run_realtime_sync(RealtimeSettings(url, "m", (item,), sessions=streams, concurrency=streams))
            used = cpu_s() - before
        finally:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=20)
    frames = sum(int(r["frames"]) for r in out["sessions"] if r["ok"])
    late = out["summary"]["figures"]["frame_late_p99_s"]
    print(
        f"realtime   {out['summary']['ok']:>8} {frames:>8} {used / frames * 1e6:>13.2f} "
        f"{used / max(1, out['summary']['ok']) * 1e3:>15.3f}   (frames; p99 lateness per session, "
        f"median {late['p50'] * 1e3:.3f} ms)"
    )


if __name__ == "__main__":
    main()
