"""Parsing cost per event: pytps.StreamRecorder against the straightforward Python way.

A realistic openai-chat stream (vLLM-shaped chunks) of N events is fed
  (a) in 64 KiB chunks, and
  (b) one event per feed() call (what a fast endpoint's socket reads look like),
to pytps.StreamRecorder and, in the same run, to a plain Python parser that splits lines,
json.loads each data line and picks choices[0].delta.content, stamping each with the
chunk's time. Prints ns per event for each and the ratios.

Targets on a 2-core machine: (a) <= 250 ns/event, (b) <= 1 us per feed call, and pytps at
least 10x faster than the Python way.

    python bench/bench_parse.py [--events 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import pytps

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "tokens", "stream", "fast", "and", "benchmarks", "measure", "every", "gap", "between", "events", "sent", "by", "the", "server"]


def make_events(n: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    head = {"id": "chatcmpl-9f8e7d6c5b4a39281706f5e4d3c2b1a0", "object": "chat.completion.chunk",
            "created": 1732900000, "model": "meta-llama/Llama-3.1-8B-Instruct"}
    events = []
    role = dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                "logprobs": None, "finish_reason": None}])
    events.append(("data: " + json.dumps(role, separators=(",", ":")) + "\n\n").encode())
    for _ in range(n - 3):
        word = " " + rng.choice(WORDS)
        obj = dict(head, choices=[{"index": 0, "delta": {"content": word}, "logprobs": None, "finish_reason": None}])
        events.append(("data: " + json.dumps(obj, separators=(",", ":")) + "\n\n").encode())
    fin = dict(head, choices=[{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}])
    events.append(("data: " + json.dumps(fin, separators=(",", ":")) + "\n\n").encode())
    events.append(b"data: [DONE]\n\n")
    return events


def chunked(stream: bytes, size: int) -> list[bytes]:
    return [stream[i:i + size] for i in range(0, len(stream), size)]


def run_pytps(chunks: list[bytes]) -> tuple[float, str]:
    rec = pytps.StreamRecorder("openai-chat")
    feed = rec.feed
    t0 = time.perf_counter_ns()
    for i, c in enumerate(chunks):
        feed(c, i)
    rec.close(len(chunks))
    dt = time.perf_counter_ns() - t0
    return dt, rec.text


def run_python(chunks: list[bytes]) -> tuple[float, str]:
    # The way most Python clients do it.
    t0 = time.perf_counter_ns()
    buf = b""
    texts: list[str] = []
    times: list[int] = []
    for i, c in enumerate(chunks):
        buf += c
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if not line.startswith(b"data: "):
                continue
            payload = line[6:]
            if payload == b"[DONE]":
                break
            obj = json.loads(payload)
            choices = obj.get("choices")
            if choices:
                content = choices[0].get("delta", {}).get("content")
                if content:
                    texts.append(content)
                    times.append(i)
    dt = time.perf_counter_ns() - t0
    return dt, "".join(texts)


def best_of(fn, chunks, repeat):
    best = None
    text = ""
    for _ in range(repeat):
        dt, text = fn(chunks)
        best = dt if best is None else min(best, dt)
    return best, text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of this many runs per case")
    args = ap.parse_args()

    events = make_events(args.events)
    stream = b"".join(events)
    n = len(events)
    big = chunked(stream, 64 * 1024)
    print(f"stream: {n} events, {len(stream) / 1e6:.1f} MB, {len(stream) / n:.0f} bytes/event; best of {args.repeat}")

    a_ns, a_text = best_of(run_pytps, big, args.repeat)
    pa_ns, pa_text = best_of(run_python, big, args.repeat)
    b_ns, b_text = best_of(run_pytps, events, args.repeat)
    pb_ns, pb_text = best_of(run_python, events, args.repeat)
    assert a_text == pa_text == b_text == pb_text, "the parsers disagree on the text"

    rows = [
        ("(a) 64 KiB chunks", a_ns / n, pa_ns / n, 250.0),
        ("(b) one event per feed", b_ns / n, pb_ns / n, 1000.0),
    ]
    print(f"{'case':<26}{'pytps ns/event':>16}{'python ns/event':>17}{'speed-up':>10}{'target':>10}  verdict")
    for name, ours, theirs, target in rows:
        ratio = theirs / ours
        ok = ours <= target and ratio >= 10
        print(f"{name:<26}{ours:>16.0f}{theirs:>17.0f}{ratio:>9.1f}x{target:>9.0f}ns  {'MET' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
