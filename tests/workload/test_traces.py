"""Trace replay: Mooncake, Azure and BurstGPT files written here, parsed exactly, their malformed
lines named, and a Mooncake replay against the caching emulator (shared prefixes, the schedule,
the cache hit rate against the emulator's truth)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pytps
from pytps.errors import ConfigError
from pytps.results.folder import load_journal
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner
from pytps.workload.traces import TraceError, TraceWorkload, azure_time_ns, load_trace

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
BURST_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def mooncake(tmp_path: Path, rows: list[dict]) -> Path:
    return write(tmp_path, "trace.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


# ---- parsing ----------------------------------------------------------------------------------


def test_azure_timestamps_with_seven_fractional_digits_are_exact():
    base = azure_time_ns("2023-11-16 18:15:46")
    assert base == 1700158546 * 10**9
    assert azure_time_ns("2023-11-16 18:15:46.6805900") - base == 680_590_000
    assert azure_time_ns("2023-11-16 18:15:46.0000001") - base == 100  # the 7th digit: 100 ns
    assert azure_time_ns("2023-11-16 18:15:46.123456789") - base == 123_456_789


def test_azure_trace_is_rebased_on_its_first_timestamp(tmp_path):
    path = write(tmp_path, "azure.csv", AZURE_HEADER + "2023-11-16 18:15:46.6805900,374,44\n"
                 "2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.0000001,879,8\n")
    trace = load_trace(path, "azure")
    assert [r.offset_ns for r in trace.requests] == [0, 4_314_579_000, 4_319_410_100]
    assert [(r.input_tokens, r.output_tokens, r.line) for r in trace.requests] == [(374, 44, 2), (396, 109, 3),
                                                                                  (879, 8, 4)]
    assert load_trace(path, "azure", speedup=2).offsets_ns() == [0, 2_157_289_500, 2_159_705_050]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2023-11-16 18:15:46.68,374,44\n2023-11-16T18:15:47.x,1,1\n",
         "line 3: field 'TIMESTAMP' is '2023-11-16T18:15:47.x', not like 2023-11-16 18:15:46.6805900"),
        ("2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:47,abc,1\n",
         "line 3: field 'ContextTokens' is 'abc', not a token count"),
        ("2023-11-16 18:15:46.68,374,0\n", "line 2: field 'GeneratedTokens' is 0, must be >= 1"),
        ("2023-11-16 18:15:46.68,374\n", "line 2: 2 fields, the header has 3"),
    ],
)
def test_azure_malformed_lines_name_the_line_and_field(tmp_path, text, message):
    path = write(tmp_path, "azure.csv", AZURE_HEADER + text)
    with pytest.raises(TraceError) as err:
        load_trace(path, "azure")
    assert str(err.value) == f"trace {path}, {message}"


def test_a_csv_trace_without_its_columns_says_which(tmp_path):
    path = write(tmp_path, "x.csv", "time,in,out\n1,2,3\n")
    with pytest.raises(TraceError, match="line 1: the header has no 'TIMESTAMP' column"):
        load_trace(path, "azure")


def test_burstgpt_skips_and_counts_zero_response_rows(tmp_path):
    path = write(tmp_path, "burst.csv", BURST_HEADER + "5,ChatGPT,472,18,490,Conversation log\n"
                 "45,ChatGPT,1087,0,1087,Conversation log\n118,GPT-4,417,276,693,API log\n"
                 "118.25,ChatGPT,9000,5000,14000,API log\n")
    trace = load_trace(path, "burstgpt", max_input_tokens=4096, max_output_tokens=1024)
    assert trace.skipped_failed == 1 and trace.rows == 4 and len(trace.requests) == 3
    assert [r.offset_ns for r in trace.requests] == [0, 113 * 10**9, 113_250_000_000]
    assert trace.requests[-1].input_tokens == 4096 and trace.requests[-1].output_tokens == 1024
    assert trace.clipped_input == 1 and trace.clipped_output == 1
    d = trace.describe()
    assert d["skipped_failed"] == 1 and d["clipped_input"] == 1 and d["requests"] == 3


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("5x,ChatGPT,472,18,490,Conversation log", "line 3: field 'Timestamp' is '5x', not a time >= 0"),
        ("9,ChatGPT,472,-1,490,Conversation log", "line 3: field 'Response tokens' is -1, must be >= 0"),
        ("9,ChatGPT,4.5,1,490,Conversation log", "line 3: field 'Request tokens' is '4.5', not a whole token count"),
    ],
)
def test_burstgpt_malformed_lines_name_the_line_and_field(tmp_path, row, message):
    path = write(tmp_path, "burst.csv", BURST_HEADER + "5,ChatGPT,472,18,490,Conversation log\n" + row + "\n")
    with pytest.raises(TraceError) as err:
        load_trace(path, "burstgpt")
    assert str(err.value) == f"trace {path}, {message}"


def test_mooncake_malformed_lines_name_the_line_and_field(tmp_path):
    good = {"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}
    for bad, message in [
        ({**good, "hash_ids": [1, "x"]}, "line 2: field 'hash_ids' is not a list of integers"),
        ({**good, "timestamp": "soon"}, "line 2: field 'timestamp' is 'soon', not a time >= 0"),
        ({k: v for k, v in good.items() if k != "output_length"}, "line 2: field 'output_length' is missing"),
    ]:
        path = mooncake(tmp_path, [good, bad])
        with pytest.raises(TraceError) as err:
            load_trace(path, "mooncake")
        assert str(err.value) == f"trace {path}, {message}"
    path = write(tmp_path, "t.jsonl", json.dumps(good) + "\n{oops\n")
    with pytest.raises(TraceError, match=r"line 2: the line is not JSON"):
        load_trace(path, "mooncake")


def test_window_speedup_and_settings(tmp_path):
    path = mooncake(tmp_path, [{"timestamp": t, "input_length": 5, "output_length": 1} for t in (1000, 2000, 5000, 9000)])
    trace = load_trace(path, "mooncake", window="1:8", speedup=4)
    # Rebased on the first timestamp (1000 ms), the window keeps 1 s <= t < 8 s, rebased on 1 s.
    assert [r.offset_ns for r in trace.requests] == [0, 3 * 10**9]
    assert trace.offsets_ns() == [0, 750_000_000] and trace.outside_window == 2
    for bad in ("5", "8:1", "a:b"):
        with pytest.raises(ConfigError, match="--trace-window"):
            load_trace(path, "mooncake", window=bad)
    with pytest.raises(ConfigError, match="--trace-format"):
        make_config("http://127.0.0.1:9", trace=path)
    with pytest.raises(ConfigError, match="--trace-speedup"):
        load_trace(path, "mooncake", speedup=0)
    with pytest.raises(ConfigError, match="leave out --rate and --concurrency"):
        make_config("http://127.0.0.1:9", trace=path, trace_format="mooncake", rate=2.0)


def test_shared_hash_ids_become_byte_identical_prompt_prefixes(tmp_path):
    path = mooncake(tmp_path, [
        {"timestamp": 0, "input_length": 1000, "output_length": 4, "hash_ids": [7, 8]},
        {"timestamp": 1, "input_length": 1300, "output_length": 4, "hash_ids": [7, 8, 9]},
        {"timestamp": 2, "input_length": 900, "output_length": 4, "hash_ids": [7, 5]},
        {"timestamp": 3, "input_length": 512, "output_length": 4, "hash_ids": [7]},
        {"timestamp": 4, "input_length": 300, "output_length": 4, "hash_ids": [7]},
    ])
    w = TraceWorkload(load_trace(path, "mooncake"), seed=1, salt="x")
    a, b, c, block7, part7 = (w.prompt(i).text or "" for i in range(5))
    assert b.startswith(a[: a.rindex(" ")])  # [7, 8] (8 partial in a) starts [7, 8, 9]
    assert a.startswith(block7 + " ") and c.startswith(block7 + " ")  # block 7, byte for byte
    assert a[len(block7) :] != c[len(block7) :][: len(a) - len(block7)]  # then blocks 8 and 5 differ
    assert block7.startswith(part7 + " ")  # a partial block is the start of the full one
    assert w.prompt(0).max_tokens == 4 and w.prompt(1).input_tokens_target == 1300
    other = TraceWorkload(load_trace(path, "mooncake"), seed=1, salt="y")
    assert other.prompt(3).text != block7  # a fresh salt: a repeated run does not hit the last one's cache


def test_mooncake_replay_follows_the_timestamps_and_its_hit_rate_is_the_emulators(tmp_path):
    rows = [
        {"timestamp": 40 * i, "input_length": 300 + 16 * (i % 3), "output_length": 4 + i,
         "hash_ids": [1, 2, 100 + i % 4]}
        for i in range(12)
    ]
    path = mooncake(tmp_path, rows)
    with pytps.Emulator(ttft_ms=2, itl_us=200, prefix_cache_tokens=1 << 16) as emu:
        cfg = make_config(emu.base_url, trace=path, trace_format="mooncake", trace_block_size=128,
                          trace_speedup=2.0, out=tmp_path / "r", salt="t")
        summary = run_coroutine(Runner(cfg).run()).summary
        truth = emu.wait_truth(12)
    journal = sorted(load_journal(tmp_path / "r"), key=lambda line: line["index"])
    assert summary["requests_ok"] == 12 and len(journal) == 12
    # The sends follow the timestamps: 40 ms apart in the trace, 20 ms at speed-up 2, on the
    # absolute schedule from request 1 (request 0 is the probe, sent alone first).
    sched = np.array([line["t_sched_ns"] for line in journal[1:]], dtype=np.int64)
    assert list(np.diff(sched)) == [20_000_000] * 10
    assert summary["schedule_lag_s"]["count"] == 11 and summary["schedule_lag_s"]["p50"] < 0.010
    assert summary["ttft_sched_s"]["count"] == 11
    # The cache hit rate is the emulator's own.
    prompt = sum(t["prompt_tokens"] for t in truth)
    cached = sum(t["cached_tokens"] for t in truth)
    assert cached > 0
    assert summary["cache"]["hit_rate"] == pytest.approx(cached / prompt, rel=1e-12)
    assert summary["cache"]["prompt_tokens"] == prompt and summary["cache"]["cached_tokens"] == cached
    assert {line["output_tokens"] for line in journal} == {r["output_length"] for r in rows}


def test_the_readme_trace_replay_runs_in_one_command(tmp_path):
    import subprocess
    import sys

    example = "example:mooncake_small.jsonl"  # shipped with the package: runs from any folder
    out = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--trace", example, "--trace-format", "mooncake",
         "--trace-speedup", "4", "--emu-ttft-ms", "2", "--emu-itl-us", "100", "--emu-prefill-us-per-token", "5",
         "--emu-prefix-cache-tokens", "1000000", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "trace mooncake" in out.stdout and "prefix cache hit rate" in out.stdout
    summary = json.loads((tmp_path / "r" / "results.json").read_text())["summary"]
    assert summary["requests_ok"] == 24 and summary["cache"]["hit_rate"] > 0.5
    # Its --trace is run's; report's --trace (a Chrome trace) is another flag, and the helps say so.
    run_help = subprocess.run([sys.executable, "-m", "pytps", "run", "--help"], capture_output=True, text=True)
    report_help = subprocess.run([sys.executable, "-m", "pytps", "report", "--help"], capture_output=True, text=True)
    assert "production trace" in run_help.stdout and "production trace" not in report_help.stdout


@pytest.mark.parametrize(
    ("name", "fmt"), [("mooncake_small.jsonl", "mooncake"), ("azure_small.csv", "azure"), ("burstgpt_small.csv", "burstgpt")]
)
def test_the_example_traces_load(name, fmt):
    trace = load_trace("example:" + name, fmt)
    assert len(trace.requests) + trace.skipped_failed == trace.rows >= 16
    assert trace.requests[0].offset_ns == 0 and trace.offsets_ns() == sorted(trace.offsets_ns())
    assert (trace.skipped_failed > 0) == (fmt == "burstgpt")
