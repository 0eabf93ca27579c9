"""How far `--concurrency` travels: from the flag to the first request of `pytps run`, which
modules handle the value, and how often each is entered (issue 34).

Measured with a profiler hook (sys.setprofile) over one real `pytps run --concurrency 2` against
the built-in emulator, from `pytps.cli.main` until the first call of a transport's `send`:

- a function *handles* the setting when its code names it: "concurrency", "--concurrency" or
  "max_in_flight" among its local names, the names it reads, or its string constants;
- a module is *entered* when such a function of it is called from another module (a call
  within the module is the same visit); a coroutine's or generator's resumptions are its one call;
- code run while a module is being imported (definitions, class bodies) is not on the path.

Prints the modules entered, each with its entries, and the two figures: the number of modules and
the most entries of one module (the target: at most 6 modules, none entered more than twice).

    python bench/bench_flag_path.py                 # this tree
    python bench/bench_flag_path.py --tree DIR      # another checkout's pytps/ (with its _core .so
                                                    # and _version.py copied in), e.g. main's
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

NAMES = frozenset({"concurrency", "--concurrency", "max_in_flight"})
_GEN_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR


def _handles(code: CodeType, cache: dict[CodeType, bool]) -> bool:
    found = cache.get(code)
    if found is None:
        consts = {c for c in code.co_consts if isinstance(c, str)}
        found = bool(NAMES & (set(code.co_varnames) | set(code.co_names) | consts))
        cache[code] = found
    return found


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False


def trace(argv: list[str]) -> tuple[Counter[str], list[str]]:
    """(entries per module, the calls in order) of `pytps <argv>` until the first send."""
    from pytps.cli import main

    entries: Counter[str] = Counter()
    calls: list[str] = []
    cache: dict[CodeType, bool] = {}
    started: set[int] = set()
    keep: list[FrameType] = []  # started coroutine frames, kept so their ids are not reused
    done = threading.Event()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or done.is_set():
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("pytps."):
            return
        code = frame.f_code
        if code.co_name == "send" and module.startswith("pytps.transport.") and module.endswith("_transport"):
            done.set()  # the first request is handed to the transport: the path ends here
            sys.setprofile(None)
            return
        if code.co_flags & _GEN_FLAGS:
            if id(frame) in started:
                return  # a resumption, not a call
            started.add(id(frame))
            keep.append(frame)
        if not _handles(code, cache) or _importing(frame.f_back):
            return
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back is not None else ""
        if caller != module:
            entries[module] += 1
            calls.append(f"{module}.{code.co_qualname}")

    with tempfile.TemporaryDirectory() as tmp:
        args = [*argv, "--out", str(Path(tmp) / "run"), "--no-store"]
        threading.setprofile(hook)
        sys.setprofile(hook)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(args)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    if not done.is_set():
        raise SystemExit("no request was sent: the path did not reach a transport's send")
    return entries, calls


def _use_tree(tree: Path) -> None:
    """Import pytps from `tree` instead of this environment's (editable) install."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Redirecting" not in type(f).__name__]
    sys.path.insert(0, str(tree))
    for name in [m for m in sys.modules if m == "pytps" or m.startswith("pytps.")]:
        del sys.modules[name]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, help="the directory holding the pytps package to measure")
    p.add_argument("--calls", action="store_true", help="also list each entry, in order")
    a = p.parse_args()
    if a.tree is not None:
        _use_tree(a.tree)
    import pytps

    argv = ["run", "--concurrency", "2", "--requests", "2", "--output-tokens", "2", "--transport", "native"]
    entries, calls = trace(argv)
    print(f"pytps from {Path(pytps.__file__).parent}")
    print(f"`pytps {' '.join(argv)}`: --concurrency from the flag to the first request")
    for module, n in sorted(entries.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:2d} × {module}")
    if a.calls:
        for call in calls:
            print(f"     {call}")
    most = max(entries.values(), default=0)
    print(f"modules entered: {len(entries)} (target ≤ 6); most entries of one module: {most} (target ≤ 2)")


if __name__ == "__main__":
    main()
