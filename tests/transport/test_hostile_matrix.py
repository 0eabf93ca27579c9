"""The hostile-server matrix (issue 27): every mode of tests/hostile.py on every transport, each a
whole `pytps run` in a child process with a bound on its time and peak RSS, asserting the error
class and that no traceback appears. `pytest -m hostile -s` prints the table of mode x transport:
error class, seconds, peak RSS (.ci/steps/55-hostile.sh)."""

from __future__ import annotations

import json
import time

import pytest
from fault_servers import FaultServer
from hostile import MODES, run_pytps

pytestmark = pytest.mark.hostile

TRANSPORTS = ("native", "asyncio", "httpx")
TIME_LIMIT_S = 30.0
RSS_LIMIT_BYTES = 200 << 20
READ_TIMEOUT_S = 2.0

ROWS: list[tuple[str, str, str, float, float]] = []


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", list(MODES))
def test_hostile_mode(mode, transport, tmp_path):
    handler, expected = MODES[mode]
    out = tmp_path / "run"
    with FaultServer(handler) as srv:
        t0 = time.monotonic()
        code, _, stderr, rss = run_pytps(
            ["run", "--base-url", srv.url, "--model", "m", "--requests", "1", "--output-tokens", "4",
             "--input-tokens", "8", "--transport", transport, "--timeout", str(READ_TIMEOUT_S), "--out", str(out),
             "--json"],
            timeout_s=TIME_LIMIT_S * 2,
        )
        took_s = time.monotonic() - t0
    assert "Traceback" not in stderr, stderr
    summary = json.loads((out / "results.json").read_text())["summary"]
    errors = summary["errors"]
    got = next(iter(errors)) if errors else None
    ROWS.append((mode, transport, got or "ok", took_s, rss / 2**20))
    assert got == expected, (errors, stderr)
    assert code == (0 if expected is None else 3), stderr
    assert took_s < TIME_LIMIT_S and rss < RSS_LIMIT_BYTES, (took_s, rss)


def test_print_the_table():
    """The closing note's table (run last, with -s)."""
    if not ROWS:
        pytest.skip("no rows: run the whole module")
    print("\n| mode | transport | error class | s | peak RSS MB |\n|---|---|---|---:|---:|")
    for mode, transport, got, took_s, rss_mb in ROWS:
        print(f"| {mode} | {transport} | {got} | {took_s:.1f} | {rss_mb:.0f} |")
