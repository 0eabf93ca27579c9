"""The CLI is thin: each command parses, makes one call of the application layer (pytps.app) and
prints. Measured from cli/'s imports, read by the layer test's own reader: no CLI module imports
the run (`runner`), the sweep's planning (`sweep`) or scale-out (`scale`) itself."""

from __future__ import annotations

from pathlib import Path

from test_layers import GRAPH, MODULES, _imports

#: The rooms whose jobs the CLI reaches only through pytps.app.
NOT_FROM_THE_CLI = {"runner", "sweep", "scale"}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _orchestration(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if _room(m) == "cli"
        for t in targets
        if _room(t) in NOT_FROM_THE_CLI
    )


def test_no_cli_module_imports_the_run_the_sweep_or_scale() -> None:
    assert _orchestration(GRAPH) == []


def test_the_cli_calls_the_application_layer() -> None:
    assert any(_room(t) == "app" for m, targets in GRAPH.items() if _room(m) == "cli" for t in targets)


def test_a_planted_import_fails(tmp_path: Path) -> None:
    """Each of the three rooms, imported by a CLI module (at module level, in a function, or
    under TYPE_CHECKING), is found: the check can fail."""
    plants = {
        "runner": "from pytps.runner.loop import Runner\n",
        "sweep": "def f():\n    from pytps.sweep.cells import Sweep\n",
        "scale": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pytps.scale.driver\n",
    }
    for room, text in plants.items():
        path = tmp_path / f"{room}.py"
        path.write_text(text)
        graph = {**GRAPH, "pytps.cli.planted": _imports("pytps.cli.planted", path)}
        found = _orchestration(graph)
        assert found and all(line.startswith("pytps.cli.planted imports pytps." + room) for line in found), found
    assert "pytps.cli.run" in MODULES
