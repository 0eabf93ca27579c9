"""Ctrl-C in the windows where it once went wrong, each injected deterministically (the random
sweep is tests/cli/test_sigint_stress.py): every case exits 130 (or 0 when the run was over) with
one line and no traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time

import pytps

# The console script's own lines, with a SIGINT raised at a chosen point.
CHILD = """
import os, signal, sys
from pytps.cli import main
when = sys.argv.pop(1)
sys.argv[0] = "pytps"
if when == "start-up":
    # A SIGINT 2 ms into main(): while the command starts (its parser, imports, configuration).
    signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, 0.002)
rc = main()
if when == "after-main":
    signal.raise_signal(signal.SIGINT)  # the run is over; the process is on its way out
sys.exit(rc)
"""


def run_child(when: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, when, *args], capture_output=True, text=True,
                          timeout=timeout)


def test_ctrl_c_at_start_up_is_one_line_and_130(tmp_path):
    out = run_child("start-up", "run", "--requests", "2", "--out", str(tmp_path / "r"))
    assert out.returncode == 130, out.stderr
    assert out.stderr.strip() == "pytps: interrupted"
    assert not (tmp_path / "r").exists()


def test_ctrl_c_after_the_run_is_over_changes_nothing(tmp_path):
    # It once turned a finished run into a process killed by SIGINT (exit status -2).
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        out = run_child("after-main", "run", "--base-url", emu.base_url, "--requests", "2", "--output-tokens", "2",
                        "--out", str(tmp_path / "r"), "--json")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and (tmp_path / "r" / "events.npz").exists()


def test_ctrl_c_while_the_server_is_silent_exits_at_once(tmp_path):
    # A server that accepts and never answers: the run waits in the model listing. A Ctrl-C there
    # must not wait out the listing's timeout (a thread the event loop would join at close).
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        proc = subprocess.Popen([sys.executable, "-m", "pytps", "run", "--base-url", url, "--requests", "2",
                                 "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 30
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert accepted, "pytps never connected"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        waited = time.monotonic() - t0
    finally:
        silent.close()
        for s in accepted:
            s.close()
    assert proc.returncode == 130, stderr
    assert waited < 5, f"exited {waited:.1f} s after SIGINT"
    assert "Traceback" not in stderr and stderr.strip().startswith("pytps: interrupted")


def test_ctrl_c_wrapped_by_an_import_is_still_one_line_and_130(monkeypatch, capsys):
    # A Ctrl-C inside a class body at import time reaches main() as dataclasses' RuntimeError
    # ("Error calling __set_name__ ...") raised from the KeyboardInterrupt (a CI stress run hit it).
    from pytps import cli

    def interrupted_import(argv):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from exc

    monkeypatch.setattr(cli, "_dispatch", interrupted_import)
    assert cli.main([]) == 130
    assert capsys.readouterr().err == "pytps: interrupted\n"


def test_a_real_error_is_not_taken_for_ctrl_c(monkeypatch):
    from pytps import cli

    def broken(argv):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_dispatch", broken)
    try:
        cli.main([])
    except RuntimeError as exc:
        assert str(exc) == "a bug"
    else:
        raise AssertionError("a RuntimeError with no Ctrl-C behind it was swallowed")
