"""pytps.Emulator's Python face and the `pytps serve` command: argument validation, fault
specs, lifecycle, and the CLI running until Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from emu_raw import call

import pytps
from pytps.cli import build_parser
from pytps.emulator import parse_fault


@pytest.mark.parametrize("kwargs,needle", [
    ({"host": "0.0.0.0"}, "127.0.0.1 only"),
    ({"port": -1}, "port"),
    ({"port": 70000}, "65535"),
    ({"ttft_ms": -1}, "ttft_ms"),
    ({"itl_us": float("nan")}, "itl_us"),
    ({"itl_dist": "gamma"}, "itl_dist"),
    ({"itl_dist": "normal"}, "itl_sd_us"),
    ({"itl_dist": "replay"}, "itl_replay_us"),
    ({"itl_replay_us": []}, "at least one"),
    ({"ttft_dist": "lognormal"}, "ttft_sd_ms"),
    ({"tokens_per_event": 0}, "tokens_per_event"),
    ({"coalesce": 1.5}, "coalesce"),
    ({"coalesce": -1}, "coalesce"),
    ({"reasoning_tokens": -2}, "reasoning_tokens"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"faults": ["explode:p=0.5"]}, "unknown fault kind"),
    ({"faults": ["stall"]}, "probability=P or every=N"),
    ({"faults": ["stall:p=2"]}, "within [0, 1]"),
    ({"faults": ["stall:every=2,when=3"]}, "unknown field"),
    ({"faults": ["stall:every=x"]}, "not a number"),
])
def test_bad_arguments_raise_value_error(kwargs, needle):
    with pytest.raises(ValueError, match=None) as e:
        pytps.Emulator(**kwargs)
    assert needle in str(e.value)


def test_fault_spec_forms():
    assert parse_fault("429:p=0.1") == {"kind": "http_429", "probability": 0.1}
    assert parse_fault("stall:every=5,seconds=2") == {"kind": "stall", "every": 5, "seconds": 2.0}
    assert parse_fault("malformed:every=1,after=3") == {"kind": "malformed_json", "every": 1, "after_events": 3}
    assert parse_fault({"kind": "http_429", "every": 2, "retry_after": 3}) == {
        "kind": "http_429", "every": 2, "retry_after_s": 3}


def test_lifecycle_and_base_url():
    emu = pytps.Emulator(ttft_ms=0, itl_us=10)
    assert emu.port == 0 and not emu.running
    with emu:
        assert emu.running and emu.base_url == f"http://127.0.0.1:{emu.port}"
        assert call(emu.port, "GET", "/health").status == 200
        assert "serving" in repr(emu)
        with pytest.raises(ValueError, match="already started"):
            emu.start()
    assert not emu.running


def test_port_in_use_is_a_clear_error():
    with pytps.Emulator() as a, pytest.raises(ValueError, match="pick another port"):
        pytps.Emulator(port=a.port).start()


def test_serve_parser_has_the_documented_options():
    args = build_parser().parse_args(["serve", "--port", "0", "--ttft-ms", "5", "--itl-us", "100",
                                      "--fault", "429:p=0.1", "--fault", "stall:every=5,seconds=2",
                                      "--itl-replay-us", "100,200"])
    assert (args.port, args.ttft_ms, args.itl_us) == (0, 5.0, 100.0)
    assert args.fault == ["429:p=0.1", "stall:every=5,seconds=2"]
    assert args.itl_replay_us == [100.0, 200.0]


def test_serve_runs_until_ctrl_c(tmp_path):
    log = tmp_path / "truth.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "pytps", "serve", "--port", "0", "--ttft-ms", "1",
                             "--itl-us", "50", "--default-output-tokens", "4", "--truth-log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "pytps emulator serving on http://127.0.0.1:" in line
        port = int(line.split("http://127.0.0.1:")[1].split(" ")[0])
        r = call(port, "POST", "/v1/chat/completions", {"messages": [], "stream": True})
        assert r.status == 200 and r.sse()[-1] == (None, "[DONE]")
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped: 1 generation requests, 4 events" in out
    assert '"id":"chatcmpl-1"' in log.read_text()


def test_serve_reports_bad_options():
    out = subprocess.run([sys.executable, "-m", "pytps", "serve", "--port", "0", "--fault", "nope:p=1"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "unknown fault kind" in out.stderr


def test_realtime_is_granted_or_refused_clearly():
    emu = pytps.Emulator(realtime=True, spin_us=10, ttft_ms=0, itl_us=10, default_output_tokens=2)
    try:
        emu.start()
    except ValueError as e:
        assert "SCHED_FIFO" in str(e) and "CAP_SYS_NICE" in str(e)
        return
    try:
        r = call(emu.port, "POST", "/v1/completions", {"prompt": "x", "stream": True})
        assert r.sse()[-1] == (None, "[DONE]")
    finally:
        emu.stop()
