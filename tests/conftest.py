"""Test tiers. The default run (`pytest`) leaves out two marks, each run by a CI step of its own:

- `timing`: asserts sub-millisecond lags, so it needs a quiet machine. Before each such test the
  machine is checked (CPU busy from other processes, measured over half a second); a busy one
  is waited for a little, then the test is skipped with a message that says why. The limits in
  the tests are never loosened for a busy machine. While one runs, Python's cyclic collector is
  paused (pytest_runtest_setup says why). Run: `pytest -m timing` (.ci/steps/40-timing.sh).
- `stress`: long randomized runs (SIGINT at random moments under a CPU hog; pytps rank's 20 seeded
  repeats). Run:
  `pytest -m stress` (.ci/steps/50-stress.sh).
- `browser`: the HTML report in real headless Chromium. Run: `pytest -m browser`
  (.ci/steps/60-browser.sh, which installs Debian's chromium when missing).
- `real_server`: against llama.cpp's `llama-server`, built from source on first use and cached
  (tests/real_servers/). Run: `pytest -m real_server` (.ci/steps/45-llama-server.sh).
- `hostile`: the hostile-server matrix (tests/hostile.py's modes x every transport, each a whole
  `pytps run` in a child process, bounded in time and peak RSS). Run: `pytest -m hostile -s`
  (.ci/steps/55-hostile.sh), which prints the table of modes x transports.
- `calibrate_full`: `pytps calibrate` as shipped (--quick, and the full ladder with --baseline).
  Run: `pytest -m calibrate_full` (.ci/steps/48-calibrate.sh).

Every test sees its own PYTPS_ENVELOPE_DIR, so no run reads the trust envelope saved by the
user's own `pytps calibrate`, and its own PYTPS_STORE (a SQLite file of its own), so no run is
recorded in the user's results store (pytps history).
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Iterator

import pytest

# CPU busy (all cores, every process but this idle one) above which sub-ms timing is not measured.
QUIET_BUSY_FRACTION = 0.25
QUIET_WAIT_S = 30.0


def _busy_fraction(interval_s: float = 0.5) -> float:
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields), idle

    total0, idle0 = sample()
    time.sleep(interval_s)
    total1, idle1 = sample()
    total = total1 - total0
    return 1.0 - (idle1 - idle0) / total if total > 0 else 0.0


_waited = False  # the first timing test waits for quiet; the others only look


def _quiet_or_why() -> str | None:
    global _waited
    if not os.path.exists("/proc/stat"):
        return "no /proc/stat to tell whether the machine is quiet"
    deadline = time.monotonic() + (0.0 if _waited else QUIET_WAIT_S)
    _waited = True
    while True:
        busy = _busy_fraction()
        if busy < QUIET_BUSY_FRACTION:
            return None
        if time.monotonic() >= deadline:
            return (f"the machine is not quiet enough to measure sub-millisecond lags: {busy:.0%} of its CPU "
                    f"was busy with other work (needs < {QUIET_BUSY_FRACTION:.0%}); "
                    "run `pytest -m timing` on an idle machine")
        time.sleep(1.0)


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts background commands with SIGINT ignored, and an ignored
    # signal is inherited through exec: the Ctrl-C tests' `pytps run` children would never see
    # their SIGINT. A handler (not SIG_IGN) is reset to the default on exec, so they get Python's.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Also registered here, for runs from a copy of tests/ without pyproject.toml (.ci/steps/30-*).
    config.addinivalue_line("markers", "timing: asserts sub-millisecond lags; needs a quiet machine")
    config.addinivalue_line("markers", "stress: long randomized runs under load")
    config.addinivalue_line("markers", "browser: the HTML report in real headless Chromium")
    config.addinivalue_line("markers", "real_server: against a real llama.cpp llama-server")
    config.addinivalue_line("markers", "calibrate_full: the full pytps calibrate ladder (minutes)")


@pytest.fixture(scope="session", autouse=True)
def _no_user_envelope(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Session-wide first, so that module fixtures (runs made once per module) see it too.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTPS_ENVELOPE_DIR", str(tmp_path_factory.mktemp("envelope-session")))
        mp.setenv("PYTPS_STORE", str(tmp_path_factory.mktemp("store-session") / "history.sqlite"))
        yield


@pytest.fixture(autouse=True)
def _own_envelope_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTPS_ENVELOPE_DIR", str(tmp_path_factory.mktemp("envelope")))
    monkeypatch.setenv("PYTPS_STORE", str(tmp_path_factory.mktemp("store") / "history.sqlite"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("timing") is not None:
        why = _quiet_or_why()
        if why is not None:
            pytest.skip(why)
        # The collector paused while a timing test measures, as timeit does: a collection walks
        # pytest's own heap (every collected test's objects) with the GIL held, so a read that
        # comes meanwhile is stamped late by the harness, not by what is measured (seen: gen-1
        # 0.8 ms and gen-2 160 ms medians under load). Frozen first, so what the test allocates
        # is all the collector would see if a test turned it back on.
        gc.collect()
        gc.freeze()
        gc.disable()


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if item.get_closest_marker("timing") is not None and not gc.isenabled():
        gc.unfreeze()
        gc.enable()
