"""The compiled module is the one this package was built with, and a missing one says how to build it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
