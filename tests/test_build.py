"""The compiled module is the one this package was built with, and a missing one says how to build it."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytps
from pytps import _core


def test_compiled_version_matches_package():
    # A stale build (package metadata updated, extension not rebuilt) fails here.
    from importlib.metadata import version

    assert _core.__version__ == pytps.__version__ == version("pytps")


def test_missing_extension_says_how_to_build(tmp_path):
    # Copy the pure-Python files without the extension and import from there.
    import shutil
    from pathlib import Path

    src = Path(pytps.__file__).parent
    dst = tmp_path / "pytps"
    dst.mkdir()
    for f in src.glob("*.py"):
        shutil.copy(f, dst / f.name)
    code = textwrap.dedent(
        """
        import sys
        # An editable install maps pytps to the source tree through a meta-path finder: drop it,
        # so that only the copy without the extension can be found.
        sys.meta_path = [f for f in sys.meta_path if "editable" not in type(f).__module__]
        sys.path.insert(0, sys.argv[1])
        import pytps  # loads nothing compiled: every name is loaded on first use

        try:
            pytps.now_ns()
        except ImportError as e:
            print(type(e).__name__ + ": " + str(e))
        else:
            print("imported")
        """
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert "BuildError" in out.stdout
    assert "Did you build it?" in out.stdout
    assert "pip install" in out.stdout


STUBS = Path(__file__).resolve().parents[1] / "pytps" / "_core"
BINDINGS = Path(__file__).resolve().parents[1] / "csrc" / "bindings"


def _stub_names(path: Path) -> set[str]:
    """The top-level names a .pyi file declares (classes, functions, annotated constants)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_stub_folder_does_not_shadow_the_compiled_module():
    # pytps/_core/ holds .pyi files only (no __init__.py): the import system prefers the .so beside it.
    import importlib.machinery

    assert not (STUBS / "__init__.py").exists()
    assert _core.__file__ is not None and _core.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert not hasattr(_core, "__path__")  # a module, not a (namespace) package


def test_the_stubs_mirror_the_bindings():
    # One .pyi per register_* concept of csrc/bindings, each re-exported by __init__.pyi ...
    concepts = {p.stem.removeprefix("register_") for p in BINDINGS.glob("register_*.cpp")}
    files = {p.stem for p in STUBS.glob("*.pyi")} - {"__init__"}
    assert files == concepts
    init = ast.parse((STUBS / "__init__.pyi").read_text())
    exported = {
        (node.module, alias.name)
        for node in init.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }
    declared = {(f"pytps._core.{f}", name) for f in files for name in _stub_names(STUBS / f"{f}.pyi")}
    assert exported == declared
    # ... and together they declare exactly the compiled module's names.
    public = {n for n in dir(_core) if not (n.startswith("__") and n.endswith("__"))}
    assert {name for _, name in declared} == public
