"""Ctrl-C (and SIGTERM, every fourth run: docker stop, kubectl, `timeout`) at random moments,
under a CPU hog: every `pytps run` exits 130 (143 for SIGTERM) within 5 s of the signal, prints
no traceback, and leaves either no results folder (interrupted before it was
made) or a consistent one (results.json, the journal and events.npz agree on the requests).

The SIGINT lands from the moment the command's main() is entered: the child runs exactly what
the `pytps` console script runs, and says when it is about to call main(). Before that are the
interpreter's own start-up (~25 ms, where CPython itself reports "Fatal Python error:
init_import_site" on a SIGINT, as it does for `python -c pass`) and the import of pytps.cli,
kept to ~3 ms with nothing but module loading in it.

Slow (a few minutes): `pytest -m stress`, run by .ci/steps/50-stress.sh. PYTPS_SIGINT_RUNS
sets the number of runs (default 200)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from folder_checks import check_results_folder

pytestmark = pytest.mark.stress

RUNS = int(os.environ.get("PYTPS_SIGINT_RUNS", "200"))
EXIT_WITHIN_S = 5.0
# SIGINT lands uniformly in [0, this) after the process starts: start-up (imports, the model
# listing), the run (about 1.5 s of requests), finalising, and past the end.
LATEST_S = 2.5


# What the `pytps` console script runs, plus one byte to say main() is next. The signals are
# blocked from just before that byte until main() unblocks them inside its handlers: one sent in
# the few bytecodes between the byte and main()'s first line (a preempted child under the CPU hog)
# then waits for main() instead of surfacing before it.
ENTRY = (
    "import os, signal, sys\n"
    "from pytps.cli import main\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})\n"
    "fd = int(sys.argv.pop(1)); os.write(fd, b'r'); os.close(fd)\n"
    "sys.argv[0] = 'pytps'\n"
    "sys.exit(main())\n"
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", "0", "--ttft-ms", "5", "--itl-us", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "pytps emulator serving on http://127.0.0.1:PORT ..."
    url = line.split("serving on ")[1].split()[0]
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cpu_hog() -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_sigint_at_random_moments(server: str, cpu_hog: None, tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("PYTPS_SIGINT_SEED", "0")))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    outcomes = {"interrupted": 0, "finished first": 0, "no folder": 0}
    for i in range(RUNS):
        out = tmp_path / f"run{i}"
        delay = rng.uniform(0, LATEST_S)
        args = ["run", "--base-url", server, "--requests", "160", "--concurrency", "4", "--output-tokens", "32",
                "--input-tokens", "16", "--out", str(out), "--json"]
        ready_r, ready_w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-c", ENTRY, str(ready_w), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, pass_fds=(ready_w,),
        )
        os.close(ready_w)
        os.read(ready_r, 1)  # main() is about to run (or the child died: then b"")
        os.close(ready_r)
        time.sleep(delay)
        signalled = proc.poll() is None
        signum, code = (signal.SIGTERM, 143) if i % 4 == 3 else (signal.SIGINT, 130)
        if signalled:
            proc.send_signal(signum)
        t0 = time.monotonic()
        try:
            _, stderr = proc.communicate(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
            pytest.fail(f"run {i}: still running {EXIT_WITHIN_S} s after SIGINT at {delay:.3f} s\n{stderr}")
        waited = time.monotonic() - t0
        where = f"run {i} ({signum.name} at {delay:.3f} s, exit after {waited:.2f} s, code {proc.returncode})"
        assert "Traceback" not in stderr, f"{where}:\n{stderr}"
        if signalled and proc.returncode != 0:
            assert proc.returncode == code, f"{where}:\n{stderr}"
            assert "interrupted" in stderr, f"{where}:\n{stderr}"
            outcomes["interrupted"] += 1
        else:
            assert proc.returncode == 0, f"{where}:\n{stderr}"
            outcomes["finished first"] += 1
        if not out.exists():
            outcomes["no folder"] += 1
            # Interrupted before the first request: one line, nothing else.
            lines = [x for x in stderr.splitlines() if x.strip() and "built-in emulator" not in x]
            assert len(lines) == 1, f"{where}:\n{stderr}"
        check_results_folder(out)
    print(f"{RUNS} runs: {outcomes}")
    assert outcomes["interrupted"] >= RUNS // 2
