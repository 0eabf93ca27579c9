"""The Python package keeps its rooms apart, as tests/test_layout.py keeps the C++ rooms: what each
room may import is the architecture (docs/architecture.md), so an upward arrow or an import
circle fails here rather than in a reader's head.

Every import statement counts: at module level, inside functions, and under `if TYPE_CHECKING:`
(a type that two rooms need belongs in a lower room, or in a Protocol there). Importing
pytps.a.b also runs the package pytps.a, so that arrow counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "pytps"

# room -> the rooms its modules may import (besides its own). A room is a package under pytps/,
# or a module at the root; arrows point down: cli -> library / runner -> transport, workload,
# measure -> _native. report/ and sweep/ read saved results; calibrate/, scale/ and embed/ use the
# run, and the run never imports them.
BASE = {"errors", "_native", "_version"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_version": set(),
    "_native": {"errors"},
    # The emulator's answers are a dataset's records (workload) that each grader (measure) must
    # tell right from wrong; neither room imports the emulator.
    "emulator": BASE | {"grading", "measure", "workload"},
    "grading": BASE,
    # Realtime transcription's emulator (a WebSocket server): run as its own process, imported by none.
    "realtime_emulator": BASE,
    "measure": BASE | {"grading"},
    "workload": BASE,
    "transport": BASE | {"measure", "workload"},
    "results": BASE | {"measure"},
    "store": BASE | {"results"},
    # The table of settings: flag choices come from the APIs, transports and the emulator's defaults.
    "settings": BASE | {"emulator", "transport", "workload"},
    "runner": BASE | {"grading", "measure", "workload", "transport", "results", "settings", "store"},
    "sweep": BASE | {"measure", "results", "settings"},
    "report": BASE | {"measure", "results", "store", "sweep"},
    "embed": BASE | {"measure", "results", "transport", "workload"},
    "calibrate": BASE | {"measure", "results", "transport", "workload", "runner", "emulator"},
    "scale": BASE | {"measure", "results", "store", "transport", "workload", "runner", "calibrate"},
    # Launching the server under test (--serve): its processes, readiness, facts and hooks.
    "serve_process": BASE,
    # The application layer: every job the CLI and the library run, with typed settings.
    # (workload: the voice jobs make their utterances and texts, pytps.app.voice)
    "app": BASE
    | {"measure", "results", "runner", "settings", "store", "sweep", "scale", "calibrate", "emulator", "workload"}
    | {"serve_process"},
    "library": BASE | {"app", "runner", "scale", "calibrate", "emulator", "results"},
    "cli": BASE
    | {"measure", "results", "transport", "workload", "runner", "sweep", "report"}
    | {"embed", "calibrate", "scale", "library", "emulator", "store", "grading", "settings", "app"},
    "__main__": {"cli"},
}
MAX_ROOT_MODULES = 10


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every pytps module that importing `name` can import, type-only and function-level included."""
    here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def add(dotted: str) -> None:
        parts = dotted.split(".")
        for i in range(2, len(parts) + 1):
            m = ".".join(parts[:i])
            own_package = name.startswith(m + ".")  # already running when name is imported
            if m in MODULES and (i == len(parts) or not own_package):
                found.add(m)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pytps."):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "pytps" or module.startswith("pytps."):
                add(module)
                for alias in node.names:
                    if f"{module}.{alias.name}" in MODULES:
                        found.add(f"{module}.{alias.name}")
    found.discard(name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_room_is_known():
    rooms = {room(m) for m in MODULES} - {"__init__", "_version"}  # _version: written by the build
    assert rooms == set(ALLOWED) - {"_version"}, rooms ^ (set(ALLOWED) - {"_version"})


def test_rooms_import_only_what_they_may():
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if room(m) != "__init__"
        for t in targets
        if room(t) != room(m) and room(t) not in ALLOWED[room(m)]
    )
    assert not wrong, "\n".join(wrong)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circle():
    assert _circles(GRAPH) == []


def test_the_circle_finder_finds_circles():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_root_keeps_the_public_face_only():
    root = sorted(p.name for p in PKG.glob("*.py") if p.name != "__init__.py")
    assert len(root) <= MAX_ROOT_MODULES, root
