"""Issue 29 (7): one emulator default ITL and TTFT, shown in every --help."""

from __future__ import annotations

import inspect
import subprocess
import sys

from pytps.emulator import DEFAULT_ITL_US, DEFAULT_TTFT_MS, Emulator


def _help(cmd: str) -> str:
    return subprocess.run([sys.executable, "-m", "pytps", cmd, "--help"], capture_output=True, text=True, check=True).stdout


def test_every_emulator_has_the_same_default_and_every_help_shows_it():
    params = inspect.signature(Emulator).parameters
    assert params["itl_us"].default == DEFAULT_ITL_US and params["ttft_ms"].default == DEFAULT_TTFT_MS
    flat = {cmd: " ".join(_help(cmd).split()) for cmd in ("run", "sweep", "serve")}
    assert f"--itl-us ITL_US gap between token events in µs (default {DEFAULT_ITL_US})" in flat["serve"]
    assert f"--ttft-ms TTFT_MS time to first token in ms (default {DEFAULT_TTFT_MS})" in flat["serve"]
    for cmd in ("run", "sweep"):
        assert f"--emu-itl-us US µs between tokens (default {DEFAULT_ITL_US})" in flat[cmd], cmd
        assert f"--emu-ttft-ms MS TTFT in ms (default {DEFAULT_TTFT_MS})" in flat[cmd], cmd


def test_run_s_built_in_emulator_uses_the_default():
    import argparse

    from pytps.cli.run_args import add_run_arguments

    p = argparse.ArgumentParser()
    add_run_arguments(p)
    args = p.parse_args([])
    assert (args.emu_itl_us, args.emu_ttft_ms) == (DEFAULT_ITL_US, DEFAULT_TTFT_MS)  # was 2,000 µs against 500
