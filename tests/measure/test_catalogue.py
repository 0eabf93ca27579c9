"""The metric catalogue (pytps/measure/catalogue.py) is the one place a metric's label and unit are
written: every table takes them from it. Read from the package's source, so a table that spells
"TTFT" with "[ms]" again fails here; and the console's labels fit 80 columns."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

from rich.console import Console

from pytps.measure import catalogue
from pytps.report.console import render

PKG = Path(catalogue.__file__).resolve().parents[1]
# The docs sit beside the tests (an installed package has none beside it).
DOCS = Path(__file__).resolve().parents[2] / "docs"
EVERY = (*catalogue.DISTRIBUTIONS, *catalogue.SERVER, *catalogue.RUN, *catalogue.VOICE, *catalogue.VOICE_RUN)
# Units as tables write them, in brackets after a label; counts ("[tokens]") are not metrics' units.
BRACKETED = re.compile(r"\[(ms|µs|us|s|tok/s|req/s|%)\]")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant of a module (f-strings' literal parts included), docstrings left out:
    they may quote a heading as an example."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _pairs(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, label, unit) where one tuple, list or call holds a metric's label and its unit as two
    literals side by side: ("ttft_s", "TTFT", 1e3, "ms")."""
    out = []
    for node in ast.walk(tree):
        items = node.elts if isinstance(node, (ast.Tuple, ast.List)) else node.args if isinstance(node, ast.Call) else []
        literals = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
        out += [(node.lineno, m.label, m.unit) for m in EVERY if m.label in literals and m.unit in literals]
    return out


def test_labels_and_units_are_written_only_in_the_catalogue() -> None:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "catalogue.py" and path.parent.name == "measure":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PKG.parent)
        for line, text in _strings(tree):
            if BRACKETED.search(text):
                found.append(f"{where}:{line}: a unit in brackets {text!r}")
            found += [f"{where}:{line}: {m.heading!r} in {text!r}" for m in EVERY if m.heading in text]
        found += [f"{where}:{line}: {label!r} with {unit!r}" for line, label, unit in _pairs(tree)]
    assert not found, "take labels and units from pytps.measure.catalogue:\n" + "\n".join(found)


def test_the_check_would_catch_a_table_of_its_own() -> None:
    """The check's own control: the tables this catalogue replaced are caught."""
    old_console = ast.parse('ROWS = (("ttft_s", "TTFT", 1e3, "ms"),)')
    old_sweep = ast.parse('cols = [("p50 TTFT [ms]", "ttft_p50_s", 1e3, ".1f")]')
    assert _pairs(old_console) == [(1, "TTFT", "ms")]
    assert any(BRACKETED.search(text) for _, text in _strings(old_sweep))


def test_keys_are_unique_and_every_entry_is_complete() -> None:
    for group in (catalogue.DISTRIBUTIONS, catalogue.SERVER, catalogue.RUN, catalogue.VOICE, catalogue.VOICE_RUN):
        assert len({m.key for m in group}) == len(group)
    for m in EVERY:
        assert m.label and m.unit and m.scale > 0 and m.description
        assert m.better in ("lower", "higher", None)
    assert catalogue.metric("ttft_s").heading == "TTFT [ms]"
    assert catalogue.metric("ttft_s").stat_heading("median") == "TTFT p50 [ms]"
    assert catalogue.metric("ttft_s").shown(0.0502) == 50.2
    assert catalogue.server_metric("tpot_s").label == "server TPOT"


def test_console_labels_fit_the_first_column() -> None:
    for m in (*catalogue.DISTRIBUTIONS, *catalogue.SERVER):
        assert len(m.heading) <= catalogue.LABEL_MAX, m.heading


def _wide(mean: float, n: int) -> dict[str, float | int | None]:
    """A distribution with wide numbers: thousands, a tiny minimum, a large count."""
    return {"count": n, "mean": mean, "stddev": mean * 3, "min": 1e-9, "p50": mean, "p90": mean * 9,
            "p99": mean * 19, "max": mean * 99, "p95": mean, "p999": mean}


def test_every_console_row_keeps_its_label_on_one_line_at_80_columns() -> None:
    """Every row the table can have, at once, with wide numbers, on an 80-column console (what rich
    picks when stdout is a file): each label stands whole at the start of its line."""
    summary: dict[str, object] = {m.key: _wide(12.345, 123_456) for m in catalogue.DISTRIBUTIONS}
    summary["server_timings"] = {
        **{m.key: _wide(12.345, 123_456) for m in catalogue.SERVER},
        "requests": 5,
        "source": "llama.cpp",
    }
    # streamed False: the TTFB row is shown for runs of whole bodies only.
    summary.update(requests_total=10, requests_ok=10, output_tokens_total=10, token_source="usage", streamed=False)
    out = io.StringIO()
    render({"metadata": {}, "summary": summary}, Console(file=out, width=80, color_system=None))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    headings = [m.heading for m in (*catalogue.DISTRIBUTIONS, *catalogue.SERVER)]
    starts = [line.split("  ")[0].strip() for line in lines]
    assert [s for s in starts if s in headings] == headings  # every row, whole, in order


def test_docs_list_every_label() -> None:
    """docs/metrics.md, "Labels in reports", names each entry with its label and unit."""
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    groups = ((catalogue.DISTRIBUTIONS, ""), (catalogue.SERVER, "server_timings."), (catalogue.RUN, ""))
    for group, prefix in (*groups, (catalogue.VOICE, ""), (catalogue.VOICE_RUN, "")):
        for m in group:
            assert f"| `{prefix}{m.key}` | {m.heading} | {m.better or '-'} |" in text, m.key


def test_voice_figures_have_their_entries() -> None:
    """Every figure a voice run stores in the results store has its catalogue entry (history's
    headings and its better direction come from there)."""
    from pytps.store.voice_entry import VOICE_FIGURE_NAMES

    assert [n for n in VOICE_FIGURE_NAMES if catalogue.of_figure(n) is None] == []
    assert catalogue.figure_heading("ttfa_p50") == "TTFA p50 [ms]"
    assert catalogue.figure_heading("eos_final_p99") == "speech end → final p99 [ms]"
    assert catalogue.figure_heading("stall_rate") == "stalled requests [%]"
    assert catalogue.of_figure("rtfx_p50").better == "higher"  # type: ignore[union-attr]
    assert catalogue.of_figure("rtf_p50").better == "lower"  # type: ignore[union-attr]
