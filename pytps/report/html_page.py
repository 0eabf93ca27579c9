"""The HTML pages' shared writer: one self-contained file, Bokeh's JavaScript inlined from the
installed package, no CDN, so it opens offline (docs/report.md). The pages themselves are
html_run, html_sweep and html_compare; html.py holds the entry points."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from pytps._version import __version__
from pytps.errors import ConfigError
from pytps.report import verdicts
from pytps.report.numbers import fmt

_TABLE = re.compile(r"(<table\b.*?</table>)", re.S)

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: 2px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: .6em 0; }
dl.meta dt { color: #666; } dl.meta dd { margin: 0; }
.warn { background: #fff8e1; border-left: 4px solid #f0ad4e; padding: 4px 10px; margin: 4px 0; }
.note { color: #555; } .sig { font-weight: bold; }
.plots2 { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.plots3 { display: grid; grid-template-columns: 1fr 1fr 1fr; gap: 10px; }
@media (max-width: 900px) { .plots2, .plots3 { grid-template-columns: 1fr; } }
footer { margin-top: 2em; color: #777; font-size: 12px; }
div.tablebox { max-width: 100%; overflow-x: auto; }
td.path { word-break: break-all; min-width: 12em; }
pre.json { white-space: pre-wrap; word-break: break-all; background: #f8f8f8; padding: 6px; }
details { margin: .4em 0; }
"""


def bokeh_module() -> Any:
    try:
        import bokeh.embed
        import bokeh.resources
    except ImportError:
        raise ConfigError("--html needs the bokeh package: pip install bokeh") from None
    return bokeh


def e(value: Any) -> str:
    return html.escape(str(value))


class Page:
    """HTML sections and Bokeh figures, in order; each figure becomes a <div> where its
    placeholder stands."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.figures: dict[str, Any] = {}

    def add(self, text: str) -> None:
        self.parts.append(text)

    def plot(self, fig: Any) -> str:
        """A placeholder for the figure, to put where it is to be drawn."""
        name = f"plot{len(self.figures)}"
        self.figures[name] = fig
        return f"@@{name}@@"

    def render(self) -> str:
        bokeh = bokeh_module()
        # Only BokehJS's core: the report uses no widgets, tables or WebGL (1.3 MB rather than 4 MB).
        resources = bokeh.resources.Resources(mode="inline", components=["bokeh"])
        script, divs = bokeh.embed.components(self.figures) if self.figures else ("", {})
        # Every table in a box of its own that scrolls sideways: a wide one never widens the page.
        body = _TABLE.sub(r'<div class="tablebox">\1</div>', "\n".join(self.parts))
        for name, div in divs.items():
            body = body.replace(f"@@{name}@@", f'<div class="plot" data-plot="{name}">{div}</div>')
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{e(self.title)}</title>\n<style>{CSS}{verdicts.css()}</style>\n"
            f"{resources.render_js()}\n</head>\n<body>\n{body}\n"
            f"<footer>pytps {e(__version__)} · plots by Bokeh {e(bokeh.__version__)}, its JavaScript inlined: "
            "this file needs no network.</footer>\n"
            f"{script}\n</body>\n</html>\n"
        )


def write_page(page: Page, out: str | Path) -> Path:
    path = Path(out)
    text = page.render()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the HTML report to {path}: {exc.strerror}") from exc
    return path


def meta_list(items: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items if v is not None and v != "")
    return f'<dl class="meta">{rows}</dl>'


def ms(value: float | None) -> str:
    return e(fmt(None if value is None else value * 1e3, "ms"))


def num(value: float | None) -> str:
    return e(fmt(value))
