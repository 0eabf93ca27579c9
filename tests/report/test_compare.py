"""pytps compare: the bootstrap's coverage on synthetic samples with a known shift, the two-level
bootstrap of repeated runs, the comparability warnings, and end to end against pytps.Emulator."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pytps
from pytps.cli import main
from pytps.errors import ConfigError
from pytps.report.compare import Run, Side, bootstrap_diff, comparability_warnings, compare, resample


def test_intervals_cover_a_known_shift_92_to_97_percent_of_the_time():
    """1,000 seeded pairs of synthetic runs (60 requests each, log-normal TTFTs like a real server's,
    B shifted by +10 ms), through the very function compare uses. 500 resamples per interval instead
    of the CLI's 2,000 keep it to a few seconds; they leave the percentile interval's coverage unchanged
    within the tolerance (fewer resamples make the end points noisier, not biased)."""
    data = np.random.default_rng(123)
    shift = 0.010
    covered = {"mean": 0, "p50": 0}
    pairs = 1000
    for i in range(pairs):
        a = data.lognormal(np.log(0.05), 0.3, size=60)
        b = data.lognormal(np.log(0.05), 0.3, size=60) + shift  # a pure shift: mean and median move by it
        rng = np.random.default_rng(i)
        for stat in covered:
            d = bootstrap_diff([a], [b], stat, 500, rng)
            assert d.ci95 is not None
            covered[stat] += d.ci95[0] <= shift <= d.ci95[1]
    for stat, hits in covered.items():
        assert 0.92 <= hits / pairs <= 0.97, (stat, hits)


def test_the_bootstrap_is_reproducible_and_seeded():
    x = np.random.default_rng(0).normal(size=50)
    y = x + 1.0
    one = bootstrap_diff([x], [y], "mean", 300, np.random.default_rng(7))
    two = bootstrap_diff([x], [y], "mean", 300, np.random.default_rng(7))
    other = bootstrap_diff([x], [y], "mean", 300, np.random.default_rng(8))
    assert one.ci95 == two.ci95 and one.ci95 != other.ci95
    assert one.significant and one.diff == pytest.approx(1.0)
    same = bootstrap_diff([x], [x], "p50", 300, np.random.default_rng(7))
    assert same.diff == 0 and not same.significant


def test_two_level_bootstrap_covers_run_to_run_variation():
    """Three runs per side whose levels differ run to run: resampling requests alone gives an interval
    as if the pooled requests were one run, too narrow; resampling runs first widens it."""
    data = np.random.default_rng(5)
    runs = [data.normal(loc, 0.01, size=200) for loc in (0.10, 0.13, 0.16)]
    pooled = resample([np.concatenate(runs)], "mean", 2000, np.random.default_rng(0))
    two_level = resample(runs, "mean", 2000, np.random.default_rng(0))
    assert np.std(two_level) > 5 * np.std(pooled)
    # Runs of different lengths: padding never leaks into the statistic.
    uneven = [np.full(3, 1.0), np.full(50, 2.0)]
    reps = resample(uneven, "p50", 500, np.random.default_rng(1))
    assert set(np.unique(reps)) <= {1.0, 1.5, 2.0}
    assert not np.isnan(reps).any()


def fake_run(path, *, model="m", output_tokens="64", concurrency=4, token_source="usage",
             transport="native", date="2026-12-01T00:00:00+00:00", ttft=0.05, n=40, seed=0):
    rng = np.random.default_rng(seed)
    journal = [{"index": i, "warmup": i == 0, "ok": i != 1, "ttft_s": float(ttft + rng.normal(0, 0.002)),
                "tpot_s": 0.01, "e2e_s": 1.0, "decode_tps": 100.0, "user_tps": 60.0} for i in range(n)]
    meta = {"model": model, "api": "openai-chat", "transport": transport, "http2": False, "date_utc": date,
            "workload": {"kind": "synthetic", "input_tokens": "256", "output_tokens": output_tokens},
            "load": {"mode": "concurrency", "concurrency": concurrency, "rate_rps": None}}
    summary = {"token_source": token_source, "requests_ok": n - 2, "output_throughput_tps": 1000.0}
    return Run(path, {"metadata": meta, "summary": summary}, journal)


def test_incomparable_runs_are_warned_about(tmp_path):
    a = fake_run(tmp_path / "a")
    b = fake_run(tmp_path / "b", model="other", output_tokens="128", concurrency=8, token_source="events",
                 transport="httpx", date="2026-12-20T00:00:00+00:00")
    warnings = "\n".join(comparability_warnings([Side("A", [a]), Side("B", [b])], max_days=7))
    for what in ("model: A=m, B=other", "output length: A=64, B=128", "concurrency: A=4, B=8",
                 "token source: A=usage, B=events", "transport: A=native, B=httpx", "19.0 days apart"):
        assert what in warnings
    assert comparability_warnings([Side("A", [a]), Side("B", [fake_run(tmp_path / "c")])], max_days=7) == []
    # Warm-up and failed requests are left out of the samples.
    assert a.values("ttft_s").size == 38


def test_compare_of_repeated_runs_and_run_level_figures(tmp_path):
    sides = [Side("A", [fake_run(tmp_path / f"a{i}", seed=i) for i in range(3)]),
             Side("B", [fake_run(tmp_path / f"b{i}", ttft=0.06, seed=10 + i) for i in range(2)])]
    out = compare(sides, resamples=500)
    ttft = next(m for m in out["metrics"] if m["key"] == "ttft_s")
    d = ttft["stats"]["mean"]["diffs"][0]
    assert d["significant"] and d["diff"] == pytest.approx(0.01, abs=0.002)
    assert ttft["n"] == [114, 76]
    thr = next(m for m in out["metrics"] if m["key"] == "output_throughput_tps")
    assert thr["level"] == "run" and thr["stats"]["mean"]["diffs"][0]["diff"] == 0
    with pytest.raises(ConfigError):
        compare(sides[:1])
    with pytest.raises(ConfigError):
        compare(sides, resamples=5)


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no results.json" in err
    assert main(["compare", str(tmp_path)]) == 2
    assert "at least two runs" in capsys.readouterr().err


def test_end_to_end_against_the_emulator(tmp_path, capsys):
    dirs = {}
    for name, ttft in (("fast", 5), ("slow", 15)):
        with pytps.Emulator(ttft_ms=ttft, itl_us=500) as emu:
            pytps.run(emu.base_url, requests=30, concurrency=2, input_tokens=32, output_tokens=12,
                      out=tmp_path / name)
        dirs[name] = str(tmp_path / name)

    assert main(["compare", dirs["fast"], dirs["slow"], "--json", "--resamples", "1000"]) == 0
    out = json.loads(capsys.readouterr().out)
    ttft = next(m for m in out["metrics"] if m["key"] == "ttft_s")
    for stat in ("mean", "p50"):
        d = ttft["stats"][stat]["diffs"][0]
        assert d["significant"], d
        assert d["diff"] == pytest.approx(0.010, abs=0.002)
        assert d["ci95"][0] <= d["diff"] <= d["ci95"][1]
    assert out["warnings"] == []

    # A run against itself: nothing differs.
    assert main(["compare", dirs["fast"], dirs["fast"], "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert not any(d["significant"] for m in same["metrics"] for s in m["stats"].values() for d in s["diffs"])

    # The console form: units in the labels, the significant difference marked.
    assert main(["compare", dirs["fast"], dirs["slow"]]) == 0
    text = capsys.readouterr().out
    assert "TTFT mean [ms]" in text and "B − A [95% CI]" in text and " *" in text

    # Incomparable metadata: edit the second run's results.json.
    path = tmp_path / "slow" / "results.json"
    res = json.loads(path.read_text())
    res["metadata"]["model"] = "another-model"
    res["metadata"]["load"]["concurrency"] = 16
    path.write_text(json.dumps(res))
    assert main(["compare", dirs["fast"], dirs["slow"], "--json"]) == 0
    warnings = "\n".join(json.loads(capsys.readouterr().out)["warnings"])
    assert "Different model" in warnings and "Different concurrency" in warnings
