"""Loads the compiled module, or says how to build it."""

from __future__ import annotations

from pytps.errors import BuildError

try:
    from pytps import _core
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
        # A Ctrl-C while the module initialised (pybind11 reports it as a failed import).
        raise KeyboardInterrupt from None
    raise BuildError(
        "pytps's compiled module pytps._core could not be imported "
        f"({exc}). Did you build it? From the source tree run:\n"
        "    pip install --no-build-isolation -Cbuild-dir=build -ve .\n"
        "(or `pip install .`), which compiles the C++ core with CMake and pybind11."
    ) from exc

__all__ = ["_core"]
