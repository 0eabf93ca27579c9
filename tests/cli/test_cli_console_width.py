"""`pytps run > out.txt`: with stdout a file, rich lays the summary out for 80 columns. Every row's
label must stand whole on its own line there (they once wrapped over two or three lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytps.measure import catalogue


def test_run_to_a_file_prints_no_wrapped_label(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out_txt = tmp_path / "out.txt"
    # Rate mode with kernel stamps: every row the table has (the emulator reports server timings too).
    args = ["run", "--requests", "20", "--output-tokens", "8", "--rate", "200", "--kernel-timestamps"]
    with out_txt.open("w") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "pytps", *args, "--out", str(tmp_path / "run")],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    lines = out_txt.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("metric"))
    # The table: from its header to the first line that is not a row (the prose after it).
    summary = json.loads((tmp_path / "run" / "results.json").read_text())["summary"]
    # TTFB's row is for runs of whole bodies (--no-stream, embeddings, rerank), not streams.
    streamed = [m for m in catalogue.DISTRIBUTIONS if m.key != "ttfb_s"]
    expected = [m.heading for m in streamed if (summary.get(m.key) or {}).get("count")]
    expected += [m.heading for m in catalogue.SERVER if (summary["server_timings"].get(m.key) or {}).get("count")]
    assert len(expected) == len(streamed) + len(catalogue.SERVER), "every row, for the test"
    # A row's numbers may wrap (a wide min … max, as a stream whose events came coalesced gives
    # decode TPS of 100,000+): their continuation lines start blank. The labels never do.
    # The table ends at the first line of prose (single-spaced, unlike a row's columns); a blank
    # line inside it is a section break.
    table = lines[head + 2 :]
    table = table[: next((i for i, ln in enumerate(table) if ln.strip() and "  " not in ln), len(table))]
    rows = [line for line in table if line.strip() and not line.startswith(" ")]
    assert [row.split("  ")[0] for row in rows] == expected, "\n".join(lines)
    assert all(len(line) <= 80 for line in lines[head : head + 3 + len(expected)])
