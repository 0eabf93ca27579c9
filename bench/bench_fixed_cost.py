"""The fixed cost of a run: process CPU and wall time of `pytps run --requests 1 --output-tokens 1`
against a running `pytps serve` (start-up, configuration, one request, the results folder), for
this tree and, with --tree, another checkout's pytps, interleaved run by run so that both see
the same machine. Prints the median and range of each, and the ratio after/before.

The runs see compiled bytecode, as an installed pytps does (pip compiles it at install): the
children get a bytecode cache of their own (PYTHONPYCACHEPREFIX, in a temporary directory) even
where PYTHONDONTWRITEBYTECODE is set, and each tree runs once unmeasured to fill it. Without it
every run would compile pytps's sources again, about 0.4 s of CPU that no user pays.

    python bench/bench_fixed_cost.py --tree /tmp/main-tree --rounds 9
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RUN_FROM_TREE = (
    "import sys, runpy; tree = sys.argv.pop(1);"
    "sys.meta_path[:] = [f for f in sys.meta_path if 'Redirecting' not in type(f).__name__];"
    "sys.path.insert(0, tree); runpy.run_module('pytps', run_name='__main__')"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one(tree: Path | None, url: str, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """(process CPU s, wall s) of one run."""
    args = ["run", "--base-url", url, "--requests", "1", "--output-tokens", "1", "--no-store", "--out", str(out)]
    argv = [sys.executable, "-c", _RUN_FROM_TREE, str(tree), *args] if tree else [sys.executable, "-m", "pytps", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _line(name: str, values: list[float]) -> str:
    ms = [v * 1e3 for v in values]
    return f"{name}: median {statistics.median(ms):.0f} ms (range {min(ms):.0f}–{max(ms):.0f}, n={len(ms)})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, help="the directory holding the 'before' pytps package")
    p.add_argument("--rounds", type=int, default=9)
    a = p.parse_args()
    port = _free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        trees = {"before": a.tree, "after": None} if a.tree else {"this tree": None}
        cpu: dict[str, list[float]] = {k: [] for k in trees}
        wall: dict[str, list[float]] = {k: [] for k in trees}
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            for name, tree in trees.items():  # unmeasured: fills the bytecode cache
                _one(tree, url, Path(tmp) / f"warm-{name.replace(' ', '_')}", env)
            for r in range(a.rounds):
                for name, tree in trees.items():  # interleaved: before, after, before, after, ...
                    c, w = _one(tree, url, Path(tmp) / f"{name.replace(' ', '_')}-{r}", env)
                    cpu[name].append(c)
                    wall[name].append(w)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (a loaded machine: read the ranges)")
        for name in trees:
            print(_line(f"{name} process CPU", cpu[name]) + " · " + _line("wall", wall[name]))
        if a.tree:
            ratio = statistics.median(cpu["after"]) / statistics.median(cpu["before"])
            print(f"after / before, process CPU: {ratio:.2f}")
    finally:
        serve.terminate()
        serve.wait(timeout=10)


if __name__ == "__main__":
    main()
