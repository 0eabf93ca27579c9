"""pytps calibrate: the ladder against the emulator in its own process, figures from the measured
events against the emulator's truth, the trust envelope, and `pytps run` checked against it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pytps
from pytps.calibrate import envelope as envelope_mod
from pytps.calibrate import session as session_mod
from pytps.calibrate.clients import ClientUnavailable, resolve_clients
from pytps.calibrate.envelope import THRESHOLDS, build_envelope, envelope_for, load_envelope, run_verdict, save_envelope
from pytps.calibrate.figures import ClientStream, cell_figures
from pytps.calibrate.ladder import Ladder
from pytps.calibrate.output import cell_rows
from pytps.calibrate.session import Settings, Who, run_calibration
from pytps.report.run_warnings import collect
from pytps.results.folder import load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

TESTS = Path(__file__).parent.parent


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout, env=full_env
    )


def small_ladder(rates=(1000.0,), concurrency=(1, 4), stream_s=0.3) -> Ladder:
    return Ladder(tuple(rates), tuple(concurrency), stream_s=stream_s)


# ---- end to end ---------------------------------------------------------------------------------


def test_calibrate_quick_end_to_end(tmp_path):
    """--quick's settings on a shorter ladder (the literal --quick is the calibrate_full tier)."""
    out, png = tmp_path / "cal.json", tmp_path / "cal.png"
    p = cli("calibrate", "--quick", "--rates", "1000,20000", "--concurrency", "1,4", "--stream-s", "0.25",
            "--json", str(out), "--plot", str(png))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "pytps calibrate" in p.stdout and "lower bound" in p.stdout
    data = json.loads(out.read_text())
    assert data["clients"] == ["native"]
    # 1000 tok/s at 1 token per event; 20k at 1 and at 4 tokens per event.
    assert {(c["rate_tps"], c["tokens_per_event"]) for c in data["cells"]} <= {(1e3, 1), (2e4, 1), (2e4, 4)}
    assert {c["concurrency"] for c in data["cells"] if c["rate_tps"] == 1e3} == {1, 4} or data["stopped"]
    for c in data["cells"]:
        f = c["figures"]
        assert f["failed"] == 0 and f["events"] > 0
        assert set(f["flags"]) == {"ttft", "tpot", "stamp_p99", "no_errors"}
        assert f["cpu_us_per_token"] > 0 and f["read_floor_us_per_event"] > 0
    for key in ("cpu_model", "cpu_count", "kernel", "pytps_version", "thresholds", "reference_stamp"):
        assert data[key] is not None
    env = load_envelope("native")
    assert env is not None and env["path"] == data["envelopes"]["native"]
    assert Path(env["path"]).parent == Path(os.environ["PYTPS_ENVELOPE_DIR"])
    assert env["cpu_count"] == os.cpu_count() and env["kernel"] and env["pytps_version"] == pytps.__version__
    assert len(env["cells"]) == len(data["cells"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Recorded in the results store (this test's own, tests/conftest.py): one row per transport.
    from pytps.store.store import Store

    with Store() as store:
        (row,) = store.runs(kinds=["calibrate"])
    assert (row.model, row.transport, row.status, row.folder) == ("calibrate/native", "native", "complete", env["path"])
    assert row.figures["stamp_delay_p99_us"] == max(c["figures"]["stamp_delay_p99_us"] for c in data["cells"])
    assert 0 <= row.figures["cells_passed_share"] <= 1 and row.figures["cpu_us_per_token"] > 0


def test_every_figure_comes_from_the_measured_events(monkeypatch):
    """Each figure of the table, recomputed here from the client's stamps and the emulator's
    write stamps; the emulator's schedule changes none of them."""
    seen = []
    real_measure = session_mod.measure_transport
    real_take = session_mod.EmulatorProcess.take_truth

    def measure(*args, **kw):
        streams, cpu, sent = real_measure(*args, **kw)
        seen.append({"streams": streams, "cpu": cpu})
        return streams, cpu, sent

    def take(self, n, timeout_s=10.0):
        truth = real_take(self, n, timeout_s)
        seen[-1]["truth"] = truth
        return truth

    monkeypatch.setattr(session_mod, "measure_transport", measure)
    monkeypatch.setattr(session_mod.EmulatorProcess, "take_truth", take)
    data = run_calibration(Settings(small_ladder(), [Who("native", transport="native")], dict(THRESHOLDS)))
    assert len(data["cells"]) == len(seen) >= 1
    rows = cell_rows(data)
    for cell, raw, row in zip(data["cells"], seen, rows):
        f = cell["figures"]
        truth = {t["id"]: t for t in raw["truth"]}
        assert len(truth) == len(raw["streams"]) + 1  # and the one-token warm-up, left out
        assert sum(t["planned_events"] == 1 for t in truth.values()) == 1
        delays, ttft, tpot = [], [], []
        for s in raw["streams"]:
            t = truth[s.response_id]
            sent = np.asarray(t["sent_ns"])
            assert len(s.stamps_ns) == len(sent)  # every event the emulator wrote, stamped once
            delays.append(s.stamps_ns - sent)
            received = t["received_kernel_ns"] if t["received_kernel_ns"] is not None else t["received_ns"]
            ttft.append((s.stamps_ns[0] - s.t_send_ns) - (sent[0] - received))
            tokens = int(np.sum(t["tokens"][1:]))
            tpot.append(abs((s.stamps_ns[-1] - s.stamps_ns[0]) - (sent[-1] - sent[0])) / (sent[-1] - sent[0]))
            assert tokens > 0
        d = np.concatenate(delays) / 1e3
        assert f["events"] == len(d)
        assert f["stamp_delay_p50_us"] == pytest.approx(np.percentile(d, 50, method="inverted_cdf"))
        assert f["stamp_delay_p99_us"] == pytest.approx(np.percentile(d, 99, method="inverted_cdf"))
        assert f["stamp_delay_max_us"] == pytest.approx(d.max())
        assert f["ttft_error_mean_ms"] == pytest.approx(np.mean(np.abs(ttft)) / 1e6)
        assert f["ttft_error_signed_ms"] == pytest.approx(np.mean(ttft) / 1e6)
        assert f["tpot_error_pct"] == pytest.approx(np.mean(tpot) * 100)
        assert f["cpu_us_per_token"] == pytest.approx(raw["cpu"] * 1e6 / f["tokens"])
        # The table prints these numbers.
        assert row[5] == f"{f['stamp_delay_p50_us']:.0f}/{f['stamp_delay_p99_us']:.0f}/{f['stamp_delay_max_us']:.0f}"
        assert row[7].startswith(f"{f['ttft_error_mean_ms']:.3f}")
        assert row[8] == f"{f['tpot_error_pct']:.3f}"
        # A different schedule (the emulator 3 ms late on every event) changes no error figure.
        shifted = [{**t, "scheduled_ns": [x - 3_000_000 for x in t["scheduled_ns"]]} for t in raw["truth"]]
        again = cell_figures(
            raw["streams"], shifted, events_per_s=cell["events_per_s"], cpu_s=raw["cpu"], thresholds=THRESHOLDS
        ).as_dict()
        for key in ("stamp_delay_p50_us", "stamp_delay_p99_us", "ttft_error_mean_ms", "tpot_error_pct", "flags"):
            assert again[key] == f[key]
        assert again["emulator_late_p99_us"] == pytest.approx(f["emulator_late_p99_us"] + 3000)
        assert again["emulator_late_p50_us"] == pytest.approx(f["emulator_late_p50_us"] + 3000)


def test_figures_are_signed_and_against_the_writes():
    """Synthetic: the client reads 30 µs after each write (one read 10 µs before it returned)."""
    sent = np.arange(100, dtype=np.int64) * 1_000_000 + 50_000_000
    stamps = sent + 30_000
    stamps[5] = sent[5] - 10_000
    truth = [{"id": "a", "received_ns": 0, "received_kernel_ns": None, "sent_ns": sent.tolist(),
              "scheduled_ns": (sent - 2_000_000).tolist(), "tokens": [1] * 100}]  # fmt: skip
    f = cell_figures([ClientStream(-100_000, stamps, "a")], truth, events_per_s=1000, cpu_s=0.001,
                     thresholds=THRESHOLDS)  # fmt: skip
    assert f.stamp_delay_p50_us == pytest.approx(30.0) and f.stamp_delay_max_us == pytest.approx(30.0)
    assert np.isclose(f.stamp_delay_p99_us, 30.0)
    assert f.ttft_error_signed_ms == pytest.approx(0.130)  # 100 µs send lead + 30 µs read
    assert f.emulator_late_p99_us == pytest.approx(2000.0) and not f.emulator_kept_schedule  # late, yet exact
    assert all(f.flags.values()) and f.kept_up
    assert not f.passed  # but the emulator was 2 ms late throughout: the cell did not test its rate
    # Order matching (a client that does not know the response id) pairs the same events.
    g = cell_figures([ClientStream(-100_000, stamps)], truth, events_per_s=1000, cpu_s=0.001, thresholds=THRESHOLDS)
    assert g.stamp_delay_p50_us == f.stamp_delay_p50_us
    on_time = [{**truth[0], "scheduled_ns": (sent - 20_000).tolist()}]
    assert cell_figures([ClientStream(-100_000, stamps, "a")], on_time, events_per_s=1000, cpu_s=0.001,
                        thresholds=THRESHOLDS).passed  # fmt: skip


def test_a_slowed_client_shows_larger_stamp_error_and_a_smaller_envelope():
    """The test hook: every native read stamped 1.5 ms late (busy-waited in the engine thread)."""
    ladder = small_ladder(rates=(1000.0,), concurrency=(1, 4))
    who = [Who("native", transport="native")]
    for _ in range(3):
        # Unslowed, the native client passes at least its lightest cell here (p99 ~20-200 µs); a
        # host busy with other work can spoil a round, so a round with no passing cell is redone.
        normal = run_calibration(Settings(ladder, who, dict(THRESHOLDS)))
        if any(c["figures"]["passed"] for c in normal["cells"]):
            break
    slowed = run_calibration(Settings(ladder, who, dict(THRESHOLDS), read_delay_ns=1_500_000))
    by_cell = {(c["events_per_s"], c["concurrency"]): c["figures"] for c in normal["cells"]}
    compared = 0
    for c in slowed["cells"]:
        base = by_cell.get((c["events_per_s"], c["concurrency"]))
        if base is None:
            continue
        compared += 1
        assert c["figures"]["stamp_delay_p50_us"] >= base["stamp_delay_p50_us"] + 1400, (c, base)
        assert c["figures"]["stamp_delay_p99_us"] >= 1500, (c, base)
    assert compared >= 1
    region = envelope_mod.passing_region(build_envelope("native", normal["cells"], THRESHOLDS))
    slow_region = envelope_mod.passing_region(build_envelope("native", slowed["cells"], THRESHOLDS))
    assert {(r["events_per_s"], r["concurrency"]) for r in slow_region} < {
        (r["events_per_s"], r["concurrency"]) for r in region
    }


# ---- the envelope and pytps run ----------------------------------------------------------------


def saved_envelope(passing: dict[tuple[float, int], bool]) -> dict:
    cells = []
    for (events, conc), ok in passing.items():
        figures = {"passed": ok, "flags": {"ttft": True, "tpot": True, "stamp_p99": ok, "no_errors": True},
                   "stamp_delay_p50_us": 10.0, "stamp_delay_p99_us": 50.0 if ok else 5000.0,
                   "ttft_error_mean_ms": 0.01, "tpot_error_pct": 0.01, "cpu_us_per_event": 5.0, "kept_up": True}  # fmt: skip
        cells.append({"events_per_s": events, "rate_tps": events, "tokens_per_event": 1, "concurrency": conc,
                      "figures": figures})  # fmt: skip
    env = build_envelope("native", cells, THRESHOLDS)
    save_envelope(env)
    return env


def run_native(emu, out: Path, concurrency: int):
    cfg = make_config(emu.base_url, out=out, requests=2 * concurrency, concurrency=concurrency,
                      output_tokens=40, input_tokens=16, transport="native")  # fmt: skip
    # The runner takes this host's envelope as a value, as pytps run and pytps.run() hand it over.
    return asyncio.run(Runner(cfg, envelope=envelope_for(cfg)).run())


# A timing test: the run's measured speed must land on its rung (within 5%), which a busy host's
# late reads move (886 events/s for 1000 seen under a load of 12 on 2 cores).
@pytest.mark.timing
def test_run_inside_the_envelope_does_not_warn_outside_it_does(tmp_path):
    saved_envelope({(1000.0, 1): True, (1000.0, 4): False, (5000.0, 1): True})
    with pytps.Emulator(ttft_ms=5, itl_us=1000) as emu:
        inside = run_native(emu, tmp_path / "in", 1)
        outside = run_native(emu, tmp_path / "out", 3)
        p = cli("run", "--base-url", emu.base_url, "--concurrency", "3", "--requests", "3", "--output-tokens", "40",
                "--transport", "native", "--out", str(tmp_path / "cli"))  # fmt: skip
    saved = load_results(tmp_path / "in")
    assert saved["envelope"]["inside"] is True and inside.envelope["inside"] is True
    assert saved["envelope"]["cell"] == {"events_per_s": 1000.0, "concurrency": 1}
    assert saved["envelope"]["run_events_per_s"] == pytest.approx(1000, rel=0.05)
    assert not [w for w in collect(saved) if "envelope" in w]
    saved = load_results(tmp_path / "out")
    assert saved["envelope"]["inside"] is False and outside.envelope["inside"] is False
    assert "1000 events/s x 4 failed: stamp_p99" in saved["envelope"]["reason"]
    assert [w for w in collect(saved) if w.startswith("Outside the trust envelope")]
    assert p.returncode == 0, p.stderr
    assert "Outside the trust envelope" in " ".join(p.stdout.split())


def test_no_envelope_no_verdict(tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=1000) as emu:
        run_native(emu, tmp_path / "out", 1)
    saved = load_results(tmp_path / "out")
    assert "envelope" in saved and saved["envelope"] is None
    assert not [w for w in collect(saved) if "envelope" in w]


def test_verdict_beyond_the_ladder_and_unmeasured_cells():
    env = saved_envelope({(1000.0, 1): True, (1000.0, 8): True, (5000.0, 1): True})
    meta = {"load": {"mode": "concurrency", "concurrency": 4}}
    summary = {"decode_tps": {"p50": 3000.0}, "tokens_per_event": 1.0}
    v = run_verdict(env, meta, summary)
    assert v["inside"] is False and "not measured" in v["reason"]  # the 5000 x 8 cell
    v = run_verdict(env, {"load": {"mode": "concurrency", "concurrency": 64}}, summary)
    assert v["inside"] is False and "beyond" in v["reason"]
    v = run_verdict(env, {"load": {"mode": "concurrency", "concurrency": 2}}, {"decode_tps": {"p50": 900.0}})
    assert v["inside"] is True
    # A measured 1,030 events/s is the 1,000 rung (jitter), 1,100 is not.
    v = run_verdict(env, {"load": {"mode": "concurrency", "concurrency": 1}}, {"decode_tps": {"p50": 1030.0}})
    assert v["cell"] == {"events_per_s": 1000.0, "concurrency": 1}
    v = run_verdict(env, {"load": {"mode": "concurrency", "concurrency": 1}}, {"decode_tps": {"p50": 1100.0}})
    assert v["cell"] == {"events_per_s": 5000.0, "concurrency": 1}
    # Rate mode: concurrency by Little's law.
    rate = {"load": {"mode": "rate"}}
    v = run_verdict(env, rate, {"decode_tps": {"p50": 900.0}, "request_throughput_rps": 10, "e2e_s": {"mean": 0.5}})
    assert v["run_concurrency"] == pytest.approx(5.0) and v["inside"] is True


def test_envelope_location(monkeypatch, tmp_path):
    monkeypatch.delenv("PYTPS_ENVELOPE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = envelope_mod.envelope_path("native")
    assert path.parent == tmp_path / "cache" / "pytps"
    assert path.name == f"envelope-{envelope_mod.host_name()}-native.json"
    monkeypatch.setenv("PYTPS_ENVELOPE_DIR", str(tmp_path / "own"))
    assert envelope_mod.envelope_path("httpx").parent == tmp_path / "own"
    (tmp_path / "own").mkdir()
    envelope_mod.envelope_path("httpx").write_text("not json")
    assert load_envelope("httpx") is None  # a broken cache never stops a run


# ---- other clients -------------------------------------------------------------------------------


# A timing test: a 1 ms sleep measured as about 1 ms needs a quiet host (a loaded one slept 4 ms, or
# delayed the plain client as much as the sleeper).
@pytest.mark.timing
def test_other_clients_and_a_1ms_sleeper(tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    p = cli("calibrate", "--transports", "none", "--client", "openai", "--client", "calibrate_clients:plain",
            "--client", "calibrate_clients:sleepy", "--client", "calibrate_clients:plain_async",
            "--rates", "250", "--concurrency", "1", "--no-save", "--json", "-", env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    cells = {c["client"]: c["figures"] for c in data["cells"]}
    assert set(cells) == {"openai-sync", "openai-async", "calibrate_clients:plain", "calibrate_clients:sleepy",
                          "calibrate_clients:plain_async"}  # fmt: skip
    for f in cells.values():
        assert f["failed"] == 0 and f["events"] == 300 and f["cpu_us_per_token"] > 0  # a cell's least
    added_us = cells["calibrate_clients:sleepy"]["stamp_delay_p50_us"] - cells["calibrate_clients:plain"][
        "stamp_delay_p50_us"
    ]
    assert 900 <= added_us <= 2500, added_us  # about 1 ms (time.sleep(0.001) sleeps a little longer)
    assert "envelopes" not in data  # --no-save; and other clients have no envelope anyway


def test_client_names(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    with pytest.raises(pytps.PytpsError, match="module:function"):
        resolve_clients("nonsense")
    with pytest.raises(pytps.PytpsError, match="cannot import"):
        resolve_clients("no_such_module_here:f")
    assert [c.name for c in resolve_clients("openai")] == ["openai-sync", "openai-async"]
    assert resolve_clients("calibrate_clients:plain_async")[0].is_async
    assert not resolve_clients("calibrate_clients:plain")[0].is_async
    with pytest.raises(pytps.PytpsError, match="has no 'nope'"):
        resolve_clients("calibrate_clients:nope")


def test_a_client_not_installed_is_skipped_with_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp now raises ImportError
    with pytest.raises(ClientUnavailable, match=r"aiohttp is not installed \(pip install aiohttp\)"):
        resolve_clients("aiohttp")


def test_heat_map_svg_and_a_wrong_suffix(tmp_path):
    from pytps.calibrate.output import write_heatmap

    cells = [
        {"client": "native", "events_per_s": e, "tokens_per_event": 1, "concurrency": n,
         "figures": {"stamp_delay_p99_us": 100.0 * n}}
        for e in (1000.0, 5000.0) for n in (1, 8)
    ]  # fmt: skip
    data = {"clients": ["native"], "cells": cells, "thresholds": dict(THRESHOLDS)}
    svg = write_heatmap(data, tmp_path / "h.svg")
    assert "<svg" in svg.read_text()[:500]
    with pytest.raises(pytps.PytpsError, match="png or .svg"):
        write_heatmap(data, tmp_path / "h.jpg")


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="--realtime speaks with espeak-ng (apt-get install espeak-ng)")
def test_calibrate_realtime_alone_measures_the_final_transcript_and_the_frames(tmp_path):
    """`--transports none --realtime`: the realtime transport against the realtime emulator's truth.
    The stamp error is the client's read − the emulator's write, so never negative; on a busy
    machine only its order of magnitude is checked here (the timing tier holds the 1 ms bound)."""
    out = tmp_path / "rt.json"
    p = cli("calibrate", "--transports", "none", "--realtime", "--realtime-concurrency", "2",
            "--realtime-sessions", "2", "--json", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "final transcript's stamp error" in p.stdout
    (row,) = json.loads(out.read_text())["realtime"]
    assert (row["concurrency"], row["sessions"], row["failed"]) == (2, 2, 0)
    assert 0 <= row["final_error_p50_us"] <= row["final_error_p99_us"] <= row["final_error_max_us"] < 1e6
    assert 0 <= row["frame_late_p99_median_us"] <= row["frame_late_p99_worst_us"] <= row["frame_late_max_us"]
    limit_us = 1000.0  # --max-stamp-p99-ms's default
    assert row["passed"] == (row["final_error_p99_us"] <= limit_us and row["frame_late_p99_worst_us"] <= limit_us)


def test_calibrate_realtime_bad_counts_are_one_line():
    p = cli("calibrate", "--transports", "none", "--realtime", "--realtime-sessions", "0")
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "--realtime-sessions and --realtime-concurrency must be positive" in p.stderr
