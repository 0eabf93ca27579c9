"""Start-up follows the arrows: the CLI's parser (`pytps --version`, `pytps run --help`) loads no
numpy and none of the run's machinery; a command imports what it uses when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Loaded by a command that runs, never by the parser alone.
HEAVY = ("numpy", "rich", "pytps.runner.loop", "pytps.scale", "pytps.results.folder", "pytps.measure.summary")

PROBE = """
import contextlib, io, json, sys
from pytps.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps({"printed": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def loaded_by(*argv: str) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    found = json.loads(proc.stdout)
    return found["printed"], set(found["modules"])


@pytest.mark.parametrize("argv", [("--version",), ("run", "--help"), ("sweep", "--help"), ("--help",)])
def test_the_parser_imports_no_numpy(argv):
    printed, modules = loaded_by(*argv)
    assert printed  # the command did its job
    assert [m for m in HEAVY if m in modules] == []


def test_a_single_process_run_imports_no_scale_or_sessions(tmp_path):
    # `pytps run` without --workers or sessions: pytps.scale and the session driver stay unloaded.
    # (The run asks the server's facts: the in-process emulator answers them.) No --json: the run
    # prints its table, as a plain run does.
    code = f"""
import sys
import pytps
from pytps.cli import main
with pytps.Emulator(ttft_ms=1, itl_us=100, keep_truth=False) as emu:
    rc = main(["run", "--base-url", emu.base_url, "--requests", "2", "--output-tokens", "2",
               "--out", {str(tmp_path / "out")!r}])
assert rc == 0
unused = ("pytps.scale", "pytps.runner.sessions", "pytps.workload.sessions", "numpy.ma")
# Nor what only some runs use (issue 42's fixed cost): an HTTP stack (the server's facts are asked
# with http.client), a server's launcher and hooks, the /metrics parser, the capacity search's watch.
unused += ("httpx", "httpcore", "h11", "anyio", "trio", "pytps.serve_process.process", "pytps.serve_process.grid")
unused += ("pytps.serve_process.hooks", "pytps.measure.server_metrics", "pytps.measure.saturation", "scipy")
# Rich's table of emoji codes: pytps's consoles replace none (pytps.report.terminal.SafeConsole).
unused += ("rich._emoji_codes",)
print(sorted(m for m in sys.modules if m in unused or m.startswith(tuple(u + "." for u in unused))))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
