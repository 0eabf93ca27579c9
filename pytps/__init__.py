"""pytps: a token-timing engine for streaming LLM inference endpoints.

The hot path (clock, SSE parsing, stream recording, histograms) is the compiled module
pytps._core; this package re-exports it and adds the Python layer.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import TYPE_CHECKING, Any

from ._native import _core
from .errors import BuildError, ConfigError, EndpointError, ProtocolError, PytpsError

if TYPE_CHECKING:
    from .emulator import Emulator
    from .library import run

# Imported on first use: `import pytps` (and so every CLI command, and a Ctrl-C during start-up)
# stays cheap; the run machinery pulls in numpy and the rest only when a run is made.
_LAZY = {"run": ("library", "run"), "Emulator": ("emulator", "Emulator")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pytps' has no attribute {name!r}")


try:
    __version__: str = _dist_version("pytps")
except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
    __version__ = "0+unknown"

now_ns = _core.now_ns
Histogram = _core.Histogram
clock_info = _core.clock_info
SSEParser = _core.SSEParser
SSEEvent = _core.SSEEvent
StreamRecorder = _core.StreamRecorder
HttpStreamRecorder = _core.HttpStreamRecorder
DIALECTS = _core.DIALECTS
KIND_CONTENT = _core.KIND_CONTENT
KIND_REASONING = _core.KIND_REASONING
KIND_TOOL = _core.KIND_TOOL

__all__ = [
    "DIALECTS",
    "KIND_CONTENT",
    "KIND_REASONING",
    "KIND_TOOL",
    "BuildError",
    "ConfigError",
    "Emulator",
    "EndpointError",
    "Histogram",
    "HttpStreamRecorder",
    "ProtocolError",
    "PytpsError",
    "SSEEvent",
    "SSEParser",
    "StreamRecorder",
    "__version__",
    "clock_info",
    "now_ns",
    "run",
]
