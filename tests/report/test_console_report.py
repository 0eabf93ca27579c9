"""The console summary, its Markdown and CSV forms, and the number formatting they share: rendered to
text, the way a user reads them."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console

from pytps.cli import main
from pytps.report import tables
from pytps.report.console import render, throughput_sparkline
from pytps.report.numbers import BLOCKS, fmt, sparkline


def stats(mean, lo=None, hi=None, n=30):
    lo = mean * 0.5 if lo is None else lo
    hi = mean * 2 if hi is None else hi
    return {"count": n, "mean": mean, "stddev": mean / 10, "min": lo, "p50": mean, "p90": mean * 1.2,
            "p95": mean * 1.3, "p99": mean * 1.5, "p999": hi, "max": hi, "mean_ci95": None, "p50_ci95": None}


def results(series=None):
    return {
        "metadata": {"model": "m[1]", "api": "openai-chat", "endpoint": {"host": "h", "port": 1},
                     "load": {"mode": "concurrency", "concurrency": 4}, "transport": "native",
                     "date_utc": "2026-12-01T00:00:00+00:00"},
        "summary": {
            "ttft_s": stats(0.0502),
            "itl_s": stats(0.0005, lo=1e-9),
            "decode_tps": stats(2059.3),
            "requests_total": 30, "requests_ok": 30, "output_tokens_total": 480, "token_source": "usage",
            "output_throughput_tps": 1234.5, "time_series": series or [],
        },
    }


def rendered(res, width=120):
    out = io.StringIO()
    render(res, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_units_survive_rich_markup():
    text = rendered(results())
    # "[ms]" was once read as a markup tag and dropped: the user saw "TTFT  50.2" with no unit.
    assert "TTFT [ms]" in text and "ITL [ms]" in text and "[tok/s]" in text
    assert "m[1]" in text  # a model name with brackets, kept too


def test_numbers_are_readable():
    text = rendered(results())
    assert "e-0" not in text and "e+0" not in text  # no scientific notation anywhere
    assert "50.2" in text and "2,059" in text
    assert "<0.001" in text  # a 1 ns ITL: tiny, not "1e-06"


def test_fmt_significant_digits_per_unit():
    assert fmt(0.000001, "ms") == "<0.001"
    assert fmt(0.494, "ms") == "0.494"
    assert fmt(0.0478, "ms") == "0.048"  # ms to the µs, no further
    assert fmt(5.1749, "ms") == "5.17"
    assert fmt(252.3, "ms") == "252"
    assert fmt(2059.4, "tok/s") == "2,059"
    assert fmt(12.34, "µs") == "12.3"
    assert fmt(None) == "-" and fmt(0.0, "ms") == "0"


def test_sparkline():
    assert sparkline([0, 100, 50]) == BLOCKS[0] + BLOCKS[-1] + BLOCKS[4]  # 0 to the max, 8 levels
    assert len(sparkline(list(range(500)), width=40)) == 40
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == BLOCKS[0] * 2


def test_throughput_sparkline_in_the_report():
    series = [{"t_s": i, "output_tokens": v, "requests_done": 1, "errors": 0} for i, v in enumerate([100, 800, 800, 400, 3])]
    line = throughput_sparkline(results(series)["summary"])
    # The last, partial second is left out: the line ends on the 400, not on the 3.
    assert line is not None and line.split()[4] == "▂██▅"
    assert "▂██▅" in rendered(results(series))
    assert throughput_sparkline(results([])["summary"]) is None


def test_markdown_and_csv_tables(tmp_path, capsys):
    res = results()
    md = tables.markdown(res).splitlines()
    assert md[0] == "| metric | unit | mean | stddev | p50 | p90 | p99 | min | max | n |"
    assert md[2].startswith("| TTFT [ms] | ms | 50.2 |")
    rows = list(csv.DictReader(io.StringIO(tables.csv_text(res))))
    assert [r["unit"] for r in rows] == ["ms", "ms", "tok/s"]
    assert float(rows[0]["mean"]) == 50.2 and rows[0]["n"] == "30"
    # Through the CLI, from a saved folder.
    (tmp_path / "results.json").write_text(json.dumps(res))
    assert main(["report", str(tmp_path), "--markdown"]) == 0
    assert "| ITL [ms] | ms |" in capsys.readouterr().out
    assert main(["report", str(tmp_path), "--csv"]) == 0
    assert capsys.readouterr().out.startswith("metric,unit,mean,stddev,p50,p90,p99,min,max,n\n")


def test_server_timings_beside_pytps_when_reported():
    res = results()
    assert "server" not in rendered(res)  # a server that reports none: nothing shown
    res["summary"]["server_timings"] = {
        "source": "llama.cpp", "sources": {"llama.cpp": 30}, "requests": 30,
        "prompt_s": stats(0.048), "decode_s": stats(0.127), "tpot_s": stats(0.0005),
        "ttft_minus_prompt_s": stats(0.0022), "tpot_minus_server_s": stats(-2e-7),
    }
    text = rendered(res)
    for label in ("server prompt [ms]", "TTFT − prompt [ms]", "server decode [ms]", "server TPOT [ms]",
                  "TPOT − server [µs]"):
        assert label in text
    assert "30 requests reported their own (llama.cpp)" in text
    assert "2.20" in text  # TTFT − prompt, 2.2 ms
