"""`pytps sweep --search rate` from the command line: the flags' own arrival settings and a probe's
(a concurrency-1 start sets its arrival) meet in one make_config call, the probe's winning; and a
search whose probes ran out after its start run prints its (empty) curve."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_a_rate_search_from_the_command_line_runs_its_probes(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pytps", "sweep", "--search", "rate", "--slo-run", "ttft:p90=0.5",
         "--search-max-probes", "3", "--search-probe-s", "1", "--output-tokens", "8", "--out", str(tmp_path), "--no-store"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    search = json.loads((tmp_path / "sweep.json").read_text())["search"]
    assert search["runs"] == 3 and search["probes"]  # (runs counts the start run too)
