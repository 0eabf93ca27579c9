"""Scaled runs (pytps.scale, docs/scale.md): --workers N against the emulator on 127.0.0.1, the
exact merge checked against the workers' pooled raw data, clock skews injected and removed,
a worker killed mid-run, and the same worker code on Ray actors (`scale` tier)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

import pytps
from pytps.errors import ConfigError
from pytps.measure.metrics import PERCENTILE_KEYS, distribution, itl_samples
from pytps.results.event_log import read_chunks
from pytps.results.folder import load_journal, load_results
from pytps.runner.schedule import LoadPlan, arrival_offsets_ns
from pytps.scale import ScaledRun, ScaleOptions, auto_workers, parse_workers
from pytps.scale import clock as clock_module
from pytps.scale.clock import ClockReading, measure_offset
from pytps.scale.share import divide

S = 1_000_000_000
REL_ERR = 1e-3  # the per-token histograms' stated error (3 significant digits, docs/histogram.md)


def scaled(emu, tmp_path, options, **settings):
    settings.setdefault("output_tokens", 16)
    settings.setdefault("input_tokens", 16)
    run = ScaledRun(emu.base_url, {"out": tmp_path / "out", **settings}, options)
    return run.run()


def worker_dirs(out: Path) -> list[Path]:
    return sorted(p for p in (out / "workers").iterdir() if p.is_dir())


def pooled_raw(out: Path):
    """Every worker's journal lines and its raw ITL samples, pooled, straight from its own files."""
    lines, itl = [], []
    for d in worker_dirs(out):
        journal = load_journal(d)
        lines += journal
        counted = {j["index"] for j in journal if j["ok"] and not j["warmup"]}
        rows = np.concatenate(list(read_chunks(d / "events.log")))
        for index in counted:
            r = rows[rows["request_index"] == index]
            values, counts = itl_samples(r["t_ns"], r["layout"].astype(np.int64))
            itl.append(np.repeat(np.maximum(1, np.rint(values)).astype(np.int64), counts))
    return lines, np.concatenate(itl)


def check_exact_merge(result, out: Path) -> None:
    lines, itl_ns = pooled_raw(out)
    s = result.summary
    measured = [j for j in lines if not j["warmup"]]
    ok = [j for j in measured if j["ok"]]
    # Counts are sums.
    assert len(load_journal(out)) == len(lines)
    assert s["requests_total"] == len(measured)
    assert s["requests_ok"] == len(ok)
    assert s["output_tokens_total"] == sum(j["output_tokens"] for j in ok)
    with np.load(out / "events.npz") as npz:
        assert len(npz["t_ns"]) == sum(
            sum(len(c) for c in read_chunks(d / "events.log")) for d in worker_dirs(out)
        )
    # Per-request percentiles: exactly those of the pooled raw values.
    for name in ("ttft_s", "e2e_s", "tpot_s", "decode_tps"):
        assert s[name] == distribution([j[name] for j in ok]), name
    # Per-token percentiles: within the histogram's error of the pooled raw samples.
    assert s["itl_s"]["count"] == len(itl_ns)
    for key, p in zip(PERCENTILE_KEYS, (50, 90, 95, 99, 99.9), strict=True):
        exact = np.percentile(itl_ns, p, method="inverted_cdf") / S
        assert exact <= s["itl_s"][key] * (1 + 1e-12) and s["itl_s"][key] <= exact * (1 + REL_ERR) + 1e-9, key


def test_two_workers_merge_exactly(tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=300, keep_truth=False) as emu:
        result = scaled(emu, tmp_path, ScaleOptions(workers=2), concurrency=4, requests=60, warmup=2)
    out = tmp_path / "out"
    assert result.summary["requests_total"] == 60 and result.summary["error_rate"] == 0
    per_worker = result.metadata["scale"]["per_worker"]
    assert [w["requests"] for w in per_worker] == [31, 31]  # indices dealt alternately, probes included
    assert all(w["clock"]["method"] == "same clock" and w["failed"] is None for w in per_worker)
    indices = sorted(j["index"] for j in load_journal(out))
    assert indices == list(range(62))  # one process's indices, each sent once
    # Each worker's transport numbers its own connections; merged, they are apart.
    conns = {(j["index"] % 2, j["connection_id"]) for j in load_journal(out)}
    assert len({c for _, c in conns}) == len(conns) >= 4
    check_exact_merge(result, out)


def test_rate_mode_skewed_worker_clock_is_measured_and_removed(tmp_path):
    skew = 7 * S  # worker 1 pretends its CLOCK_MONOTONIC is 7 s ahead, as another machine's might be
    with pytps.Emulator(ttft_ms=5, itl_us=300, keep_truth=False) as emu:
        result = scaled(
            emu, tmp_path, ScaleOptions(workers=2, skew_ns={1: skew}), rate=80, arrival="constant", requests=40,
            warmup=2,
        )
    out = tmp_path / "out"
    clocks = [w["clock"] for w in result.metadata["scale"]["per_worker"]]
    assert clocks[0]["method"] == "same clock" and clocks[0]["offset_ns"] == 0
    assert clocks[1]["method"] == "round trip"
    # Measured within its stated uncertainty (plus a microsecond for the two readings' order).
    assert abs(clocks[1]["offset_ns"] + skew) <= clocks[1]["uncertainty_ns"] + 1_000
    assert clocks[1]["uncertainty_ns"] < 5_000_000
    # Removed: the skewed worker's raw times are 7 s ahead, the merged ones on the driver's base.
    raw = {j["index"]: j for j in load_journal(out / "workers" / "1")}
    merged = {j["index"]: j for j in load_journal(out)}
    for index, line in raw.items():
        assert merged[index]["t_send_ns"] - line["t_send_ns"] == clocks[1]["offset_ns"]
    sends = sorted(j["t_sched_ns"] for j in merged.values() if j["t_sched_ns"] is not None)
    # The schedule was translated: both workers' sends interleave on one constant 12.5 ms grid.
    gaps = np.diff(sends)
    assert np.all(np.abs(gaps - S // 80) < 2_000_000), gaps
    assert result.summary["schedule_lag_s"]["p99"] < 0.5  # 7 s without the translation
    assert result.summary["measured_window_s"] < 3
    check_exact_merge(result, out)


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    """Two workers; worker 1 is killed (SIGKILL) once it finished 8 requests."""
    out = tmp_path_factory.mktemp("killed") / "out"
    killed = threading.Event()

    def kill_worker_1(handles):
        def watch():
            while (handles[1].snapshot() or {}).get("finished", 0) < 8:
                time.sleep(0.01)
            handles[1].kill()
            killed.set()

        threading.Thread(target=watch, daemon=True).start()

    with pytps.Emulator(ttft_ms=2, itl_us=2000, keep_truth=False) as emu:
        run = ScaledRun(
            emu.base_url,
            {"out": out, "concurrency": 2, "requests": 60, "output_tokens": 16, "input_tokens": 16},
            ScaleOptions(workers=2),
            worker_hook=kill_worker_1,
        )
        result = run.run()
    assert killed.is_set()
    return result, out


def test_killed_worker_keeps_its_finished_requests(killed_run):
    result, out = killed_run
    scale = result.metadata["scale"]
    [failure] = scale["failures"]
    assert failure["worker"] == "1" and "killed by signal 9" in failure["error"]
    kept = failure["requests_kept"]
    assert 8 <= kept < 30
    # The live worker finished its share, the dead one's finished requests are all in the results.
    assert scale["per_worker"][0]["requests"] == 30
    assert result.summary["requests_total"] == 30 + kept
    assert result.stopped_reason is None  # --on-worker-failure continue
    check_exact_merge(result, out)  # its ITL histogram rebuilt from its event log
    from pytps.report.run_warnings import collect

    assert any("Worker 1 failed" in w for w in collect(load_results(out)))


def test_worker_failure_stop_ends_the_run(tmp_path):
    def kill_first(handles):
        def watch():
            while (handles[0].snapshot() or {}).get("finished", 0) < 4:
                time.sleep(0.01)
            handles[0].kill()

        threading.Thread(target=watch, daemon=True).start()

    with pytps.Emulator(ttft_ms=2, itl_us=2000, keep_truth=False) as emu:
        run = ScaledRun(
            emu.base_url,
            {"out": tmp_path / "out", "concurrency": 2, "requests": 400, "output_tokens": 16, "input_tokens": 16},
            ScaleOptions(workers=2, on_worker_failure="stop"),
            worker_hook=kill_first,
        )
        result = run.run()
    assert "worker 0 failed" in result.stopped_reason and "--on-worker-failure stop" in result.stopped_reason
    assert result.summary["requests_total"] < 400
    assert result.metadata["scale"]["failures"][0]["requests_kept"] >= 4


def test_duration_and_error_rate_apply_to_the_whole_run(tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=500, keep_truth=False) as emu:
        result = scaled(emu, tmp_path, ScaleOptions(workers=2), concurrency=2, duration=1.0)
    assert 0.9 < result.summary["measured_window_s"] < 1.5
    with pytps.Emulator(ttft_ms=2, itl_us=500, keep_truth=False, faults=[{"kind": "http_503", "probability": 0.5}]) as emu:
        result = scaled(emu, tmp_path / "e", ScaleOptions(workers=2), concurrency=2, requests=400, max_error_rate=0.1)
    assert "exceeded --max-error-rate" in result.stopped_reason
    assert result.summary["requests_total"] < 400


def test_share_deals_one_schedule():
    plan = LoadPlan(rate_rps=100.0, requests=50, warmup=3).validate()
    shares = divide(plan, 3)
    offsets = arrival_offsets_ns(100, 100.0)
    dealt = sorted(x for s in shares for x in s.scheduled(iter(offsets)))
    # One process: the probe is index 0 and index i >= 1 is sent at arrival i - 1; with 3 workers
    # the probes are 0, 1, 2 and index i >= 3 at arrival i - 3: the same sends, shifted by the probes.
    assert [i for i, _ in dealt] == list(range(3, 53))
    assert [o for _, o in dealt] == offsets[:50].tolist()
    assert [s.probe_index for s in shares] == [0, 1, 2]
    conc = divide(LoadPlan(concurrency=5, requests=10).validate(), 2)
    assert [s.slots for s in conc] == [3, 2]
    assert sorted([s.probe_index for s in conc] + [i for s in conc for i in s.indices()]) == list(range(10))
    with pytest.raises(ConfigError, match="each worker needs a slot"):
        divide(LoadPlan(concurrency=2).validate(), 3)


def test_auto_rule_and_flag():
    assert auto_workers(0.3, cores=8, slots=None) == 1
    assert auto_workers(0.9, cores=8, slots=None) == 2  # 0.9 > 0.7: two at 0.45 each
    assert auto_workers(3.0, cores=8, slots=None) == 5
    assert auto_workers(3.0, cores=2, slots=None) == 2  # one per core at most
    assert auto_workers(3.0, cores=8, slots=3) == 3
    assert parse_workers("auto") == "auto" and parse_workers("3") == 3
    with pytest.raises(ConfigError, match="--workers"):
        parse_workers("0")


def test_offset_takes_the_tightest_round_trip(monkeypatch):
    # The driver's clock, read before and after each of three exchanges with a worker 2 s behind;
    # the worker read its clock somewhere inside each round trip.
    driver = iter([0, 4_000, 10_000, 10_500, 20_000, 22_000])
    worker_reads = iter([1_000, 10_200, 21_900])  # on the driver's clock
    monkeypatch.setattr(clock_module, "_core", types.SimpleNamespace(now_ns=lambda: next(driver)))

    def ask():
        return ClockReading(next(worker_reads) - 2 * S, time.time_ns(), None)

    off = measure_offset(ask, tries=3)
    # The second exchange, 500 ns: offset = (10,000 + 10,500) / 2 - (10,200 - 2 s), within ± 250 ns.
    assert (off.method, off.round_trip_ns, off.uncertainty_ns) == ("round trip", 500, 250)
    assert off.offset_ns == 2 * S + 50
    assert abs(off.offset_ns - 2 * S) <= off.uncertainty_ns


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("auto") / "out"
    with pytps.Emulator(ttft_ms=2, itl_us=300, keep_truth=False) as emu:
        run = ScaledRun(
            emu.base_url,
            {"out": out, "concurrency": 2, "requests": 20, "warmup": 6, "output_tokens": 16, "input_tokens": 16},
            ScaleOptions(workers="auto"),
        )
        return run.run(), out


def test_auto_workers_from_the_pilot(auto_run):
    result, out = auto_run
    auto = result.metadata["scale"]["auto"]
    assert auto["workers"] == result.metadata["scale"]["workers"] >= 1
    assert 0 <= auto["pilot_cpu_share"] < 4
    assert result.metadata["scale"]["per_worker"][0]["worker"] == "pilot"
    assert result.summary["requests_total"] == 20
    lines = load_journal(out)
    assert sorted(j["index"] for j in lines) == list(range(26))
    assert sum(j["warmup"] for j in lines) == 6


def test_scaled_results_keys_are_documented_and_written(auto_run, killed_run):
    from results_doc import documented, flatten

    sections, maps = documented()
    scaled_doc = sections["results.json: scaled runs"]
    doc = sections["results.json"] | scaled_doc
    written: set[str] = set()
    for _, out in (auto_run, killed_run):
        flatten(load_results(out), "", maps, written)
    assert written - doc == set(), "written but not in docs/results.md"
    assert scaled_doc - written == set(), "in docs/results.md but never written"


def test_cli_workers_flag(tmp_path):
    out = tmp_path / "cli"
    proc = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--requests", "12", "--concurrency", "2", "--workers", "2",
         "--output-tokens", "8", "--emu-ttft-ms", "2", "--emu-itl-us", "200", "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["requests_total"] == 12
    bad = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--concurrency", "2", "--workers", "3"],
        capture_output=True, text=True, timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("pytps: ")
    assert "each worker needs a slot" in bad.stderr


@pytest.fixture
def local_ray(monkeypatch):
    """A Ray cluster on this machine, loopback only, no dashboard, no usage statistics."""
    # Set before Ray is imported: Ray reads them then (pytps.scale.ray_backend).
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    ray = pytest.importorskip("ray", reason='Ray is not installed (pip install ray; CI step 70-scale)')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    yield ray
    ray.shutdown()


@pytest.mark.scale
def test_ray_backend_on_a_local_cluster(tmp_path, local_ray):
    with pytps.Emulator(ttft_ms=5, itl_us=300, keep_truth=False) as emu:
        result = scaled(
            emu, tmp_path, ScaleOptions(workers=2, backend="ray", skew_ns={1: -3 * S}), concurrency=4,
            requests=40, warmup=2,
        )
    scale = result.metadata["scale"]
    assert scale["backend"] == "ray" and scale["failures"] == []
    clock = scale["per_worker"][1]["clock"]
    assert abs(clock["offset_ns"] - 3 * S) <= clock["uncertainty_ns"] + 1_000
    assert result.summary["requests_total"] == 40
    check_exact_merge(result, tmp_path / "out")


@pytest.mark.scale
def test_ray_actor_killed_keeps_what_was_copied(tmp_path, local_ray):
    def kill_actor_1(handles):
        def watch():
            while (handles[1].snapshot() or {}).get("finished", 0) < 6:
                time.sleep(0.01)
            time.sleep(0.2)  # the driver copies the actor's files every 50 ms
            handles[1].kill()

        threading.Thread(target=watch, daemon=True).start()

    with pytps.Emulator(ttft_ms=2, itl_us=2000, keep_truth=False) as emu:
        result = ScaledRun(
            emu.base_url,
            {"out": tmp_path / "out", "concurrency": 2, "requests": 60, "output_tokens": 16, "input_tokens": 16},
            ScaleOptions(workers=2, backend="ray"),
            worker_hook=kill_actor_1,
        ).run()
    [failure] = result.metadata["scale"]["failures"]
    assert failure["worker"] == "1" and "Ray actor failed" in failure["error"]
    assert 6 <= failure["requests_kept"] < 30
    assert result.summary["requests_total"] == 30 + failure["requests_kept"]
    check_exact_merge(result, tmp_path / "out")


def test_ctrl_c_ends_every_worker_and_keeps_what_finished(tmp_path):
    import signal

    out = tmp_path / "sigint"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "run", "--concurrency", "4", "--duration", "30", "--workers", "2",
         "--output-tokens", "32", "--emu-ttft-ms", "2", "--emu-itl-us", "2000", "--out", str(out), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(out.glob("workers/*/requests.jsonl"))) < 2:
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    results = load_results(out)
    assert results["metadata"]["interrupted"] is True
    assert all(w["interrupted"] for w in results["metadata"]["scale"]["per_worker"])
    assert results["summary"]["requests_total"] == len([j for j in load_journal(out) if not j["warmup"]]) > 0
    assert results["summary"]["measured_window_s"] < 10


def test_merged_workload_and_server_figures_equal_one_process(tmp_path):
    # Worker journals carry usage and the server's timings; the merged summary reads them from
    # there (RunSummary.add_journaled), so the cache figures and server timings are the pooled ones.
    with pytps.Emulator(ttft_ms=2, itl_us=200, prefill_us_per_token=5, prefix_cache_tokens=100_000) as emu:
        result = scaled(emu, tmp_path, ScaleOptions(workers=2), concurrency=4, requests=40, shared_prefix_tokens=64,
                        input_tokens=96, output_tokens=8)
    s = result.summary
    lines = [json.loads(x) for x in (result.out_dir / "requests.jsonl").read_text().splitlines()]
    ok = [x for x in lines if x["ok"] and not x["warmup"]]
    assert s["cache"]["cached_tokens"] == sum(x["usage"]["cached_tokens"] for x in ok) > 0
    assert s["cache"]["prompt_tokens"] == sum(x["usage"]["prompt_tokens"] for x in ok)
    assert s["server_timings"]["requests"] == len(ok) == s["requests_ok"]
    assert sum(b["count"] for b in s["ttft_by_prompt_tokens"]) == len(ok)
    with pytest.raises(ConfigError, match="--turns runs in one process"):
        scaled(emu, tmp_path / "t", ScaleOptions(workers=2), turns=2, sessions=2)
