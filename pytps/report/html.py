"""`pytps report DIR --html [FILE]` (and `run`/`sweep --html`, `compare --html FILE`): one
self-contained HTML file, Bokeh's JavaScript inlined from the installed package, no CDN, so it
opens offline (docs/report.md). Read from the saved files only, as every report.

The entry points; each page is a module of its own (html_run, html_sweep, html_compare) around
the shared writer (html_page)."""

from __future__ import annotations

import json
from pathlib import Path

from pytps.errors import ConfigError
from pytps.report.html_compare import write_compare
from pytps.report.html_page import bokeh_module, write_page
from pytps.report.html_run import run_page
from pytps.report.html_sweep import sweep_page
from pytps.report.saved_run import load_saved_run
from pytps.results.files import RESULTS, SWEEP_INDEX

__all__ = ["DEFAULT_NAME", "write_compare", "write_report"]

#: Written inside the results folder when --html is given no file.
DEFAULT_NAME = "report.html"


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """The HTML report of a run's folder, or of a sweep's (sweep.json), to `out` (default:
    report.html inside the folder)."""
    bokeh_module()  # the friendly error before any work
    d = Path(directory)
    target = Path(out) if out else d / DEFAULT_NAME
    if (d / SWEEP_INDEX).is_file() and not (d / RESULTS).is_file():
        try:
            index = json.loads((d / SWEEP_INDEX).read_text())
        except ValueError as exc:
            raise ConfigError(f"{d}/sweep.json is not valid JSON: {exc}") from exc
        return write_page(sweep_page(d, index), target)
    return write_page(run_page(load_saved_run(d)), target)
