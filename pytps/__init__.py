"""pytps: a token-timing engine for streaming LLM inference endpoints.

The hot path (clock, SSE parsing, stream recording, histograms) is the compiled module
pytps._core; this package re-exports it and adds the Python layer.

Every name here is loaded on first use (PEP 562), so `import pytps` does nothing that can take
time: a CLI command starts at once, and a Ctrl-C during start-up meets the command's own handler
rather than an import half done. A missing compiled module raises BuildError, saying how to build
it, at the first use of a compiled name (and at the import of any module that needs one).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from pytps.errors import BuildError, ConfigError, EndpointError, ProtocolError, PytpsError

if TYPE_CHECKING:
    from pytps._core import (
        DIALECTS,
        KIND_CONTENT,
        KIND_REASONING,
        KIND_TOOL,
        Histogram,
        HttpStreamRecorder,
        SSEEvent,
        SSEParser,
        StreamRecorder,
        clock_info,
        now_ns,
    )
    from pytps.app.rank import RankResult
    from pytps.embed.collector import BoundedCollector, Collector
    from pytps.embed.context import collecting, tag
    from pytps.embed.instrument import instrument
    from pytps.embed.timer import StreamTimer, time_stream
    from pytps.emulator import Emulator
    from pytps.library import arun, compare, history, matrix, rank, run, search
    from pytps.measure.metrics import RequestMetrics, request_metrics
    from pytps.measure.records import RequestRecord, ToolCall
    from pytps.measure.summary import summarize
    from pytps.results.output import RunResult
    from pytps.results.record import Record
    from pytps.runner.config import RunConfig
    from pytps.transport.base import Transport

    __version__: str

# name -> (module, attribute)
_LAZY = {
    "run": ("library", "run"),
    "arun": ("library", "arun"),
    "rank": ("library", "rank"),
    "RankResult": ("app.rank", "RankResult"),
    "search": ("library", "search"),
    "matrix": ("library", "matrix"),
    "compare": ("library", "compare"),
    "history": ("library", "history"),
    "Emulator": ("emulator", "Emulator"),
    "RunConfig": ("runner.config", "RunConfig"),
    "RunResult": ("results.output", "RunResult"),
    "RequestRecord": ("measure.records", "RequestRecord"),
    "ToolCall": ("measure.records", "ToolCall"),
    "RequestMetrics": ("measure.metrics", "RequestMetrics"),
    "request_metrics": ("measure.metrics", "request_metrics"),
    "summarize": ("measure.summary", "summarize"),
    "Transport": ("transport.base", "Transport"),
    # Embedding (docs/embedding.md).
    "instrument": ("embed.instrument", "instrument"),
    "Collector": ("embed.collector", "Collector"),
    "BoundedCollector": ("embed.collector", "BoundedCollector"),
    "Record": ("results.record", "Record"),
    "tag": ("embed.context", "tag"),
    "collecting": ("embed.context", "collecting"),
    "time_stream": ("embed.timer", "time_stream"),
    "StreamTimer": ("embed.timer", "StreamTimer"),
    **{
        name: ("_native", name)
        for name in (
            "now_ns",
            "Histogram",
            "clock_info",
            "SSEParser",
            "SSEEvent",
            "StreamRecorder",
            "HttpStreamRecorder",
            "DIALECTS",
            "KIND_CONTENT",
            "KIND_REASONING",
            "KIND_TOOL",
        )
    },
}


class _SweepPackage(ModuleType):
    """pytps.sweep is both the room of a sweep's planning (pytps.sweep.cells, .matrix, .search) and
    the library's pytps.sweep(...): the package, once imported, is set on pytps by the import
    system, so the package itself is what is called."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from pytps.library import sweep

        return sweep(*args, **kwargs)


def _callable_sweep_package() -> None:
    import importlib

    try:
        package = importlib.import_module(".sweep", __name__)  # its docstring alone: nothing else loads
    except ModuleNotFoundError:  # pragma: no cover - a partial copy of the package (tests/test_build.py)
        return
    package.__class__ = _SweepPackage


_callable_sweep_package()


def __getattr__(name: str) -> Any:
    import importlib

    if name == "__version__":
        try:  # written by the build (pyproject.toml): cheaper than importlib.metadata's search
            value: Any = importlib.import_module("._version", __name__).__version__
        except ImportError:  # pragma: no cover - a source tree that was never built
            value = "0+unknown"
    elif name == "_core":
        value = importlib.import_module("._native", __name__)._core
    elif name in _LAZY:
        module, attr = _LAZY[name]
        loaded = importlib.import_module(f".{module}", __name__)
        value = getattr(loaded._core, attr) if module == "_native" else getattr(loaded, attr)
    else:
        raise AttributeError(f"module 'pytps' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "DIALECTS",
    "KIND_CONTENT",
    "KIND_REASONING",
    "KIND_TOOL",
    "BoundedCollector",
    "BuildError",
    "Collector",
    "ConfigError",
    "Emulator",
    "EndpointError",
    "Histogram",
    "HttpStreamRecorder",
    "ProtocolError",
    "PytpsError",
    "RankResult",
    "Record",
    "RequestMetrics",
    "RequestRecord",
    "RunConfig",
    "RunResult",
    "SSEEvent",
    "SSEParser",
    "StreamRecorder",
    "StreamTimer",
    "ToolCall",
    "Transport",
    "__version__",
    "arun",
    "clock_info",
    "collecting",
    "compare",
    "history",
    "instrument",
    "matrix",
    "now_ns",
    "rank",
    "request_metrics",
    "run",
    "search",
    "summarize",
    "sweep",
    "tag",
    "time_stream",
]
