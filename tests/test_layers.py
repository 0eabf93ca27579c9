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

# room -> the rooms its modules import (besides its own): exactly the arrows the code uses, each
# allowed on purpose (an arrow listed here that no import uses fails too). A room is a package
# under pytps/, or a module at the root; arrows point down: cli -> app -> runner, sweep, scale,
# calibrate -> transport, workload, store, results -> measure -> grading -> _native.
# docs/architecture.md draws the same map.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_version": set(),
    "_native": {"errors"},
    "grading": {"errors"},
    "measure": {"errors", "_native", "grading"},
    "workload": {"errors", "_native"},
    # The emulator's answers are a dataset's records (workload) that each grader must tell right
    # from wrong; neither room imports the emulator.
    "emulator": {"errors", "_native", "grading", "workload"},
    "transport": {"errors", "_native", "measure"},
    "results": {"errors", "_version", "measure"},  # (_version: the OTLP export names its instrument's version)
    "store": {"errors"},
    # The table of settings: flag choices come from the APIs, the transports and the emulator's defaults
    # (grading: the grader timeout's default, from the room's package module).
    "settings": {"errors", "emulator", "grading", "transport", "workload"},
    "runner": {"errors", "_native", "_version", "grading", "measure", "results", "settings", "store"}
    | {"transport", "workload"}
    | {"serve_process"},  # (a run's metadata.server is asked as a launched server's facts are)
    "sweep": {"errors", "measure", "results", "settings"},
    "report": {"errors", "_version", "measure", "results", "store", "sweep"},
    "embed": {"errors", "_native", "measure", "results", "transport", "workload"},
    "calibrate": {"errors", "_native", "_version", "measure", "runner", "transport", "workload"},
    "scale": {"errors", "_native", "calibrate", "measure", "results", "runner", "store"},
    # The application layer: every job the CLI and the library run, with typed settings.
    # (settings, workload: the voice jobs make their utterances from the table's settings; report:
    # pytps rank's verdict of a round is computed from its saved folders, like every report;
    # serve_process: --serve launches the server per configuration; store: each job records its runs.)
    "app": {"errors", "calibrate", "emulator", "measure", "results", "runner", "scale", "sweep"}
    | {"report", "serve_process", "settings", "store", "workload"}
    | {"_native"},  # (the agents search stamps each probe's span on the core's clock)
    "library": {"app"},
    # The CLI parses, calls the app and prints; the commands not yet in app (calibrate, report,
    # serve, clock) still read their rooms, never runner, sweep or scale (test_thin_cli).
    "cli": {"errors", "_native", "_version", "app", "calibrate", "emulator", "report", "results", "settings"}
    | {"store", "transport", "workload"},
    # Realtime transcription's emulator (a WebSocket server): run as its own process, imported by none.
    "realtime_emulator": {"_native"},
    # Launching the server under test (--serve): its processes, readiness, facts and hooks.
    "serve_process": {"errors"},
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
BUILT = {"pytps._version"}  # written by the build, so not in the source tree


def _public_names() -> dict[str, str]:
    """`from pytps import X`: X -> the module that defines it (the root loads each name from its
    module on first use: pytps/__init__.py's _LAZY; its errors; __version__ from _version)."""
    import pytps
    import pytps.errors

    names = {name: f"pytps.{module}" for name, (module, _attr) in pytps._LAZY.items()}
    names.update({n: "pytps.errors" for n, v in vars(pytps.errors).items() if isinstance(v, type)})
    names["__version__"] = "pytps._version"
    names["_core"] = "pytps._native"  # the compiled module, loaded by _native
    return names


PUBLIC = _public_names()


def _imports(name: str, path: Path) -> set[str]:
    """Every pytps module that importing `name` can import, type-only and function-level included."""
    here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def add(dotted: str) -> None:
        parts = dotted.split(".")
        for i in range(2, len(parts) + 1):
            m = ".".join(parts[:i])
            own_package = name.startswith(m + ".")  # already running when name is imported
            if (m in MODULES or m in BUILT) and (i == len(parts) or not own_package):
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
                    elif module == "pytps":
                        # `from pytps import X` is an arrow to the module defining X; one the
                        # root does not know is an arrow to the root itself.
                        found.add(PUBLIC.get(alias.name, "pytps"))
    found.discard(name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_room_is_known():
    rooms = {room(m) for m in MODULES} - {"__init__", "_version"}  # _version: written by the build
    assert rooms == set(ALLOWED) - {"_version"}, rooms ^ (set(ALLOWED) - {"_version"})


def wrong_arrows(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    """Every import of a room the importer's room may not import."""
    return sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if room(m) != "__init__"
        for t in targets
        if room(t) != room(m) and room(t) not in allowed[room(m)]
    )


def unused_arrows(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    """Every arrow of the table that no import uses."""
    used = {(room(m), room(t)) for m, targets in graph.items() for t in targets}
    return sorted(f"{r} -> {t}" for r, targets in allowed.items() for t in targets if (r, t) not in used)


def test_rooms_import_only_what_they_may():
    wrong = wrong_arrows(GRAPH, ALLOWED)
    assert not wrong, "\n".join(wrong)


def test_the_table_lists_only_arrows_the_code_uses():
    unused = unused_arrows(GRAPH, ALLOWED)
    assert not unused, "arrows no import uses (remove them from ALLOWED): " + ", ".join(unused)


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


def test_from_pytps_import_is_an_arrow_to_the_defining_module():
    assert PUBLIC["Emulator"] == "pytps.emulator" and PUBLIC["RunConfig"] == "pytps.runner.config"
    assert "pytps._version" in GRAPH["pytps.report.html_page"]  # from pytps._version import __version__


def _plant(tmp_path: Path, name: str, text: str) -> dict[str, set[str]]:
    path = tmp_path / (name.rsplit(".", 1)[1] + ".py")
    path.write_text(text, encoding="utf-8")
    return {**GRAPH, name: _imports(name, path)}


def test_a_planted_upward_import_fails(tmp_path: Path):
    for text in (
        "from pytps.runner.loop import Runner\n",  # at module level
        "def f():\n    import pytps.runner.loop\n",  # in a function
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pytps.runner import loop\n",  # type-only
        "from pytps import RunConfig\n",  # through the root's public face
    ):
        graph = _plant(tmp_path, "pytps.measure.planted", text)
        assert [w for w in wrong_arrows(graph, ALLOWED) if w.startswith("pytps.measure.planted imports pytps.runner")]


def test_a_planted_import_of_the_root_counts(tmp_path: Path):
    graph = _plant(tmp_path, "pytps.measure.planted", "from pytps import __version__, Emulator\n")
    assert graph["pytps.measure.planted"] == {"pytps._version", "pytps.emulator"}
    assert "pytps.measure.planted imports pytps.emulator" in wrong_arrows(graph, ALLOWED)


def test_a_planted_circle_fails(tmp_path: Path):
    graph = _plant(tmp_path, "pytps.errors_planted", "from pytps.cli import main\n")
    graph["pytps.errors"] = {*graph["pytps.errors"], "pytps.errors_planted"}
    assert any("pytps.errors_planted" in circle for circle in _circles(graph))


def test_an_unused_arrow_fails():
    assert unused_arrows(GRAPH, {**ALLOWED, "store": ALLOWED["store"] | {"results"}}) == ["store -> results"]
