"""Multi-turn sessions against the real emulator: each turn carries the server's own earlier
answers, a failed turn ends its session, and per-turn TTFT follows the caching emulator's model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.measure.records import RequestRecord
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner
from pytps.transport.base import RequestSpec
from pytps.transport.registry import make_transport
from pytps.workload.sessions import ThinkTime


class Recording:
    """The run's own transport, keeping every request body and the text streamed back for it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.bodies: dict[int, dict[str, Any]] = {}
        self.answers: dict[int, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def send(self, spec: RequestSpec) -> RequestRecord:
        rec = await self.inner.send(spec)
        self.bodies[spec.index] = json.loads(spec.body)
        self.answers[spec.index] = rec.text
        return rec


def run(tmp_path: Path, emu: pytps.Emulator, name: str, transport: Any = None, **settings: Any) -> dict[str, Any]:
    cfg = make_config(emu.base_url, out=tmp_path / name, salt=name, **settings)
    result = run_coroutine(Runner(cfg, transport=transport(cfg) if transport else None).run())
    return result.summary


def test_each_turn_carries_the_exact_text_of_the_servers_earlier_answers(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        holder: list[Recording] = []

        def recording(cfg):
            holder.append(Recording(make_transport(cfg)))
            return holder[0]

        # Output lengths vary by turn, so the answers differ from turn to turn.
        summary = run(tmp_path, emu, "s", recording, turns=4, sessions=3, concurrency=2, input_tokens=24,
                      output_tokens="3-30")
        rec = holder[0]
    journal = load_journal(tmp_path / "s")
    assert summary["requests_ok"] == 12 and len(journal) == 12
    by_session: dict[int, list[dict[str, Any]]] = {}
    for line in journal:
        by_session.setdefault(line["session"], []).append(line)
    assert sorted(by_session) == [0, 1, 2]
    for lines in by_session.values():
        lines.sort(key=lambda line: line["turn"])
        assert [line["turn"] for line in lines] == [0, 1, 2, 3]
        for k, line in enumerate(lines):
            messages = rec.bodies[line["index"]]["messages"]
            assert len(messages) == 2 * k + 1 and messages[-1]["role"] == "user"
            for j in range(k):
                earlier = lines[j]["index"]
                assert messages[2 * j] == rec.bodies[earlier]["messages"][-1]  # the earlier user message
                assert messages[2 * j + 1] == {"role": "assistant", "content": rec.answers[earlier]}
                assert rec.answers[earlier]  # a real answer, byte for byte what was streamed
    # Not all answers alike: the test would pass trivially if they were.
    assert len({a for a in rec.answers.values()}) > 1


def test_per_turn_ttft_follows_the_caching_emulators_model(tmp_path):
    # TTFT = 5 ms + 60 µs per uncached prompt token. With the cache the history is served from it,
    # so TTFT stays near the first turn's while the prompt grows; without it TTFT grows with it.
    settings = dict(turns=4, sessions=4, concurrency=2, input_tokens=64, output_tokens=16)
    with pytps.Emulator(ttft_ms=5, itl_us=100, prefill_us_per_token=60, prefix_cache_tokens=1 << 20) as emu:
        cached = run(tmp_path, emu, "cached", **settings)
        truth = {t["id"]: t for t in emu.truth()}
    with pytps.Emulator(ttft_ms=5, itl_us=100, prefill_us_per_token=60) as emu:
        plain = run(tmp_path, emu, "plain", **settings)
    # Each request's TTFT is the model's, from the truth's own prompt and cached tokens: never
    # below it (the emulator is never early), and above it only by the client's and the loop's
    # own delays (a loaded machine adds some ms to a few).
    late = []
    for line in load_journal(tmp_path / "cached"):
        t = truth[line["response_id"]]
        assert line["usage"]["cached_tokens"] == t["cached_tokens"]
        predicted = 0.005 + 60e-6 * (t["prompt_tokens"] - t["cached_tokens"])
        assert line["ttft_s"] >= predicted, (line["turn"], line["ttft_s"], predicted)
        late.append(line["ttft_s"] - predicted)
        if line["turn"] > 0:
            assert t["cached_tokens"] > 0
    assert sorted(late)[len(late) // 2] < 0.003 and max(late) < 0.030, late
    turns_c, turns_p = cached["per_turn"], plain["per_turn"]
    assert [t["turn"] for t in turns_c] == [0, 1, 2, 3]
    assert turns_c[0]["cached_tokens_mean"] == 0 and turns_c[3]["cached_tokens_mean"] > 0
    assert turns_p[0]["cached_tokens_mean"] is None  # no cache, no report: not a report of 0
    # The prompt grows turn by turn in both runs; TTFT grows only without the cache.
    assert turns_c[3]["prompt_tokens_mean"] > 3 * turns_c[0]["prompt_tokens_mean"]
    assert turns_p[3]["ttft_p50_s"] > turns_p[0]["ttft_p50_s"] + 0.010
    assert turns_c[3]["ttft_p50_s"] < turns_p[3]["ttft_p50_s"] - 0.008
    # The cache figures: a hit rate, and TTFT split by how much of the prompt was cached.
    cache = cached["cache"]
    assert cache["hit_rate"] == pytest.approx(cache["cached_tokens"] / cache["prompt_tokens"])
    assert 0.3 < cache["hit_rate"] < 1
    assert cache["ttft_mostly_cached_s"]["count"] + cache["ttft_mostly_uncached_s"]["count"] == 16
    assert plain["cache"]["hit_rate"] is None and plain["cache"]["requests_reporting"] == 0
    # Sessions in flight are what the steady window counts.
    assert cached["sessions_measured"] == 4 and cached["steady_window_s"] is not None


def test_a_failed_turn_ends_its_session_and_the_journal_says_so(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100, faults=[{"kind": "http_500", "every": 5}]) as emu:
        summary = run(tmp_path, emu, "f", turns=3, sessions=4, concurrency=1, input_tokens=16, output_tokens=4)
    journal = sorted(load_journal(tmp_path / "f"), key=lambda line: line["index"])
    failed = [line for line in journal if not line["ok"]]
    assert failed and all(line["error"] == "http_500" for line in failed)
    for line in failed:
        assert line["session_end"] == (
            f"turn {line['turn']} failed (http_500): the session's other {2 - line['turn']} turns were not sent"
        )
        later = [x for x in journal if x["session"] == line["session"] and x["turn"] > line["turn"]]
        assert later == []
    assert all(line["session_end"] is None for line in journal if line["ok"])
    assert summary["requests_total"] == len(journal) < 12


def test_max_context_drops_the_oldest_turns_and_think_time_spaces_them(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        holder: list[Recording] = []

        def recording(cfg):
            holder.append(Recording(make_transport(cfg)))
            return holder[0]

        run(tmp_path, emu, "c", recording, turns=6, sessions=1, input_tokens=40, output_tokens=8,
            max_context_tokens=150, think_time="0.05")
    journal = sorted(load_journal(tmp_path / "c"), key=lambda line: line["turn"])
    sizes = [len(holder[0].bodies[line["index"]]["messages"]) for line in journal]
    assert sizes[:2] == [1, 3] and max(sizes) < 11 and sizes[-1] == sizes[-2]  # bounded, oldest dropped
    last = holder[0].bodies[journal[-1]["index"]]["messages"]
    first_user = holder[0].bodies[journal[0]["index"]]["messages"][0]
    assert first_user not in last  # the first turn went first
    for a, b in zip(journal, journal[1:]):
        assert b["t_send_ns"] - a["end_ns"] >= 0.05e9  # the think time


def test_a_sharegpt_conversation_replays_its_own_human_turns(tmp_path):
    data = tmp_path / "chat.json"
    data.write_text(json.dumps([
        {"conversations": [{"from": "human", "value": "hello there"}, {"from": "gpt", "value": "hi"},
                           {"from": "human", "value": "tell me more"}, {"from": "gpt", "value": "sure"}]},
    ]))
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        holder: list[Recording] = []

        def recording(cfg):
            holder.append(Recording(make_transport(cfg)))
            return holder[0]

        run(tmp_path, emu, "d", recording, turns=5, sessions=2, dataset=data, output_tokens=4)
    journal = sorted(load_journal(tmp_path / "d"), key=lambda line: line["index"])
    assert [(line["session"], line["turn"]) for line in journal] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    second = holder[0].bodies[journal[1]["index"]]["messages"]
    assert [m["content"] for m in second[::2]] == ["hello there", "tell me more"]
    assert second[1]["content"] == holder[0].answers[journal[0]["index"]] != "hi"  # the server's, not the record's


def test_session_settings_are_checked():
    with pytest.raises(ConfigError, match="--think-time"):
        make_config("http://127.0.0.1:9", turns=2, think_time="soon")
    with pytest.raises(ConfigError, match="--turns K"):
        make_config("http://127.0.0.1:9", max_context_tokens=100)
    with pytest.raises(ConfigError, match="closed loop"):
        make_config("http://127.0.0.1:9", turns=2, rate=3.0)
    with pytest.raises(ConfigError, match="--turns must be"):
        make_config("http://127.0.0.1:9", turns=0)
    assert ThinkTime.parse("1-3").kind == "uniform" and str(ThinkTime.parse("exp:2")) == "exp:2"


def test_the_readme_multi_turn_run_runs_in_one_command(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--turns", "3", "--sessions", "4", "--concurrency", "2",
         "--think-time", "0.01", "--input-tokens", "32", "--output-tokens", "8", "--emu-ttft-ms", "2",
         "--emu-itl-us", "100", "--emu-prefill-us-per-token", "50", "--emu-prefix-cache-tokens", "100000",
         "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "turn 2: TTFT p50" in out.stdout and "prefix cache hit rate" in out.stdout
    summary = json.loads((tmp_path / "r" / "results.json").read_text())["summary"]
    assert summary["requests_ok"] == 12 and [t["turn"] for t in summary["per_turn"]] == [0, 1, 2]


def test_warmup_counts_sessions(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        summary = run(tmp_path, emu, "w", turns=2, sessions=3, warmup=1, concurrency=2, input_tokens=16,
                      output_tokens=4)
    journal = load_journal(tmp_path / "w")
    assert len(journal) == 8 and summary["requests_total"] == 6 and summary["sessions_measured"] == 3
    assert {line["session"] for line in journal if line["warmup"]} == {0}
    assert all(not line["warmup"] for line in journal if line["session"] != 0)
    # Calibration learnt from the first turns only (4 sessions): later turns carry a history it did not size.
    assert load_results(tmp_path / "w")["metadata"]["prompt_calibration"]["reports"] == 4
