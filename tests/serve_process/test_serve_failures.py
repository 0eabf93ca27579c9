"""Servers that fail (exit at once, never become ready, ignore SIGTERM) fail their configuration
with one clear line, the run goes on, and no process of theirs is left: each case lists the
server's process group from /proc. And pytps itself ending (SIGINT, SIGTERM, an exception) stops
the server it launched."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytps.serve_process.process import group_members

HERE = Path(__file__).resolve().parent
PY = sys.executable
EMULATOR = f"{PY} -m pytps serve --port {{port}} --ttft-ms 1 --itl-us 200"


def pytps_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout, check=False)


def _server_json(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "server.json").read_text()))


def _gone(pid: int) -> None:
    """No process of the group pid leads is left (listed from /proc)."""
    deadline = time.monotonic() + 5
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(pid) == [], f"left behind: {group_members(pid)}"


def _failed_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": failed: " in line]


def test_a_server_that_exits_at_once(tmp_path: Path) -> None:
    cmd = f"{PY} -c \"import sys; print('error: model file not found: m.gguf'); sys.exit(3)\" {{port}}"
    r = pytps_cli("run", "--serve", cmd, "--requests", "4", "--out", str(tmp_path / "o"), "--no-store")
    assert r.returncode == 3, r.stderr
    (line,) = _failed_lines(r.stderr)
    assert "exited with status 3 before it was ready" in line and "model file not found" in line
    facts = _server_json(tmp_path / "o")
    assert facts["status"] == "failed"
    _gone(facts["pid"])
    assert "model file not found" in (tmp_path / "o" / "server.log").read_text()


def test_a_server_never_ready_and_the_next_configuration_goes_on(tmp_path: Path) -> None:
    # mode=hang never listens; mode=ok is the emulator: the grid's second configuration runs.
    cmd = f"{PY} {HERE / 'grid_server.py'} {{mode}} {{port}}"
    r = pytps_cli(
        "run", "--serve", cmd, "--serve-grid", "mode=hang,ok", "--serve-timeout", "2",
        "--requests", "4", "--out", str(tmp_path / "o"), "--no-store",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (line,) = _failed_lines(r.stderr)
    assert "mode=hang: failed: the server was not ready after 2 s (not listening on port" in line
    assert "its log ends: loading weights" in line
    index = json.loads((tmp_path / "o" / "tuning.json").read_text())
    assert [c["status"] for c in index["configurations"]] == ["failed", "done"]
    for name in ("mode=hang", "mode=ok"):
        _gone(_server_json(tmp_path / "o" / "configs" / name)["pid"])
    assert (tmp_path / "o" / "configs" / "mode=ok" / "results.json").is_file()


def test_a_server_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    cmd = f"{PY} {HERE / 'stubborn_server.py'} {{port}}"
    r = pytps_cli(
        "run", "--serve", cmd, "--serve-grace", "0.5", "--requests", "4", "--out", str(tmp_path / "o"), "--no-store"
    )
    (line,) = _failed_lines(r.stderr)
    assert "the server ignored SIGTERM and was killed after 0.5 s" in line
    facts = _server_json(tmp_path / "o")
    assert facts["stopped_by"] == "SIGKILL after 0.5 s (SIGTERM ignored)"
    _gone(facts["pid"])
    assert (tmp_path / "o" / "results.json").is_file()  # the measurement is kept


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_pytps_stopped_by_a_signal_stops_its_server(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "o"
    proc = subprocess.Popen(
        [PY, "-m", "pytps", "run", "--serve", EMULATOR, "--duration", "60", "--rate", "5",
         "--out", str(out), "--no-store"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (out / "requests.jsonl").is_file() or not (out / "requests.jsonl").stat().st_size:
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
        pid = _server_json(out)["pid"]
        assert group_members(pid), "the server is not running"
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if sig == signal.SIGINT else 143)
    _gone(pid)


def test_an_exception_in_pytps_stops_its_server(tmp_path: Path) -> None:
    from pytps.app.serve_plan import serve_options
    from pytps.app.served import serve_configurations

    opts = serve_options({"serve": EMULATOR, "serve_grace": 5.0}, {"out": str(tmp_path)})
    assert opts is not None
    seen: list[int] = []

    def body(config: Any, url: str, folder: Path) -> dict[str, Any]:
        seen.append(_server_json(folder)["pid"])
        assert group_members(seen[0])
        raise RuntimeError("a bug in the middle of a cell")

    with pytest.raises(RuntimeError, match="a bug"):
        serve_configurations(opts, tmp_path, body, single=True)
    _gone(seen[0])


def test_a_matrix_endpoint_serve_runs_and_a_broken_one_fails_its_cell(tmp_path: Path) -> None:
    toml = tmp_path / "m.toml"
    toml.write_text(
        f'[[endpoint]]\nname = "broken"\nserve = "{PY} -c \'import sys; sys.exit(4)\' {{port}}"\n\n'
        f'[[endpoint]]\nname = "ok"\nserve = "{EMULATOR}"\n\n'
        '[[workload]]\nname = "w"\nrequests = 6\noutput_tokens = 4\n'
    )
    r = pytps_cli("run", "-c", str(toml), "--out", str(tmp_path / "o"), "--no-store")
    assert r.returncode == 0, r.stderr
    assert "failed: the server exited with status 4 before it was ready" in r.stderr
    index = json.loads((tmp_path / "o" / "matrix.json").read_text())
    assert [c["status"] for c in index["cells"]] == ["failed", "done"]
    for name in ("broken", "ok"):
        facts = _server_json(tmp_path / "o" / "cells" / name / "w")
        _gone(facts["pid"])
    assert facts["status"] == "done" and facts["startup"]["cold"]["ready_s"] > 0


def test_secrets_never_reach_the_servers_log_or_command_line(tmp_path: Path) -> None:
    import os

    script = "import sys; print('loaded with key', sys.argv[2], 'and token', sys.argv[3]); sys.exit(1)"
    cmd = f'{PY} -c "{script}" --api-key sk-served-key-1234 hf_TOKENVALUE99 {{port}}'
    env = {**os.environ, "HF_TOKEN": "hf_TOKENVALUE99"}
    r = subprocess.run(
        [PY, "-m", "pytps", "run", "--serve", cmd, "--requests", "2", "--out", str(tmp_path), "--no-store"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert r.returncode == 3
    written = (tmp_path / "server.log").read_text() + (tmp_path / "server.json").read_text() + r.stderr
    assert "loaded with key *** and token ***" in written
    assert "sk-served-key-1234" not in written and "hf_TOKENVALUE99" not in written


def test_resume_keeps_finished_configurations(tmp_path: Path) -> None:
    import os

    ok_flag = tmp_path / "model-ready"
    cmd = f"{PY} {HERE / 'grid_server.py'} {{mode}} {{port}}"
    argv = [PY, "-m", "pytps", "sweep", "--serve", cmd, "--serve-grid", "mode=ok,exit", "--concurrency", "1,2",
            "--requests", "4", "--out", str(tmp_path / "o"), "--no-store"]  # fmt: skip
    env = {**os.environ, "GRID_SERVER_OK": str(ok_flag)}
    first = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    index = json.loads((tmp_path / "o" / "tuning.json").read_text())
    assert [c["status"] for c in index["configurations"]] == ["done", "failed"], first.stderr
    assert "mode=exit: failed: the server exited with status 1 before it was ready; its log ends: cannot open" in first.stderr
    kept = (tmp_path / "o" / "configs" / "mode=ok" / "server.json").read_text()
    ok_flag.touch()  # the model is there now
    again = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300, check=False, env=env)
    assert again.returncode == 0, again.stderr
    assert "mode=ok: finished before (--resume), kept" in again.stderr
    index = json.loads((tmp_path / "o" / "tuning.json").read_text())
    assert [c["status"] for c in index["configurations"]] == ["done", "done"]
    assert (tmp_path / "o" / "configs" / "mode=ok" / "server.json").read_text() == kept  # not run again
    assert "server CPU" in again.stderr and "client CPU" in again.stderr
