"""The server grid and its command lines, readiness specs, hooks' forms, and the ranking of
configurations by capacity bracket."""

from __future__ import annotations

import pytest

from pytps.errors import ConfigError
from pytps.serve_process.grid import command_line, configurations, parse_grid
from pytps.serve_process.hooks import parse_hook
from pytps.serve_process.ready import parse_readiness
from pytps.serve_process.startup import summarize_starts
from pytps.sweep.tuning import rank


def test_grid_expands_first_name_slowest_and_fills_the_template() -> None:
    template = "llama-server -np {np} -c {ctx} --port {port} --alias 'my model'"
    configs = configurations(template, parse_grid(["np=1,4", "ctx=4096,8192"]))
    assert [c.name for c in configs] == ["np=1,ctx=4096", "np=1,ctx=8192", "np=4,ctx=4096", "np=4,ctx=8192"]
    argv = command_line(template, configs[2], 8123)
    assert argv == ["llama-server", "-np", "4", "-c", "4096", "--port", "8123", "--alias", "my model"]


@pytest.mark.parametrize(
    ("template", "grid", "says"),
    [
        ("srv --port {port} -np {np}", [], "no --serve-grid gives it"),
        ("srv --port {port}", ["np=1,2"], "is not used by --serve"),
        ("srv -np {np}", ["np=1"], "needs {port}"),
        ("srv --port {port}", ["np"], "is not NAME=V1,V2"),
        ("srv --port {port} {np}", ["np=1", "np=2"], "given twice"),
    ],
)
def test_bad_grids_are_one_line(template: str, grid: list[str], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        configurations(template, parse_grid(grid))


def test_readiness_and_hook_forms() -> None:
    assert parse_readiness(None).kind == "auto"
    assert parse_readiness("/ping").target == "/ping"
    assert parse_readiness("http://127.0.0.1:9/ready?x=1").target == "/ready?x=1"
    assert parse_readiness("log:Uvicorn running").kind == "log"
    assert parse_readiness("request").kind == "request"
    for bad in ("http://example.com/health", "log:(", "soon"):
        with pytest.raises(ConfigError):
            parse_readiness(bad)
    assert parse_hook("reset:vllm", "--before-cell").kind == "preset"  # type: ignore[union-attr]
    assert parse_hook("http://127.0.0.1:8000/x", "--before-cell").kind == "url"  # type: ignore[union-attr]
    assert parse_hook("sync && echo", "--before-cell").kind == "command"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="the presets are"):
        parse_hook("reset:tgi", "--after-cell")


def test_ranking_by_low_edge_with_overlaps_noted() -> None:
    entries = [
        {"name": "a", "status": "done", "capacity": {"low": 10.0, "high": 12.0}},
        {"name": "b", "status": "done", "capacity": {"low": 11.0, "high": 13.0}},
        {"name": "c", "status": "done", "capacity": {"low": 20.0, "high": None}},
        {"name": "d", "status": "failed", "reason": "exited"},
    ]
    ranked = rank(entries)
    assert [(r["rank"], r["name"]) for r in ranked] == [(1, "c"), (2, "b"), (3, "a"), (None, "d")]
    assert ranked[1]["overlaps"] == ["a"] and ranked[2]["overlaps"] == ["b"] and ranked[0]["overlaps"] == []


def test_warm_start_percentiles() -> None:
    starts = [{"listening_s": v, "ready_s": v + 0.1, "first_token_s": None} for v in (0.1, 0.2, 0.3, 0.4, 0.5)]
    s = summarize_starts(starts)
    assert s["n"] == 5 and s["first_token_s"] is None
    assert s["listening_s"]["p50"] == pytest.approx(0.3) and s["ready_s"]["max"] == pytest.approx(0.6)
    assert s["listening_s"]["p90"] == pytest.approx(0.46)


def test_store_figures_of_the_startup() -> None:
    from pytps.serve_process.startup import store_figures

    warm = summarize_starts([{"listening_s": 0.1, "ready_s": 0.2, "first_token_s": 0.25}] * 3)
    figures = store_figures({"cold": {"listening_s": 0.5, "ready_s": 0.6, "first_token_s": None}, "warm": warm})
    assert figures["server_ready_s"] == 0.6 and "server_first_token_s" not in figures
    assert figures["server_ready_warm_p90_s"] == pytest.approx(0.2)
    assert figures["server_first_token_warm_p50_s"] == pytest.approx(0.25)


def test_the_tuning_page_draws_each_bracket(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    pytest.importorskip("bokeh")
    from pytps.report.html_tuning import write_tuning_page

    entries = [
        {"name": "np=1", "status": "done", "axis": "rate", "capacity": {"low": 2.4, "high": 3.2}, "dir": "configs/np=1"},
        {"name": "np=4", "status": "failed", "reason": "the server exited with status 1 before it was ready"},
    ]
    index = {"serve": "srv -np {np} --port {port}", "grid": {"np": ["1", "4"]}, "configurations": entries,
             "ranking": rank(entries)}  # fmt: skip
    (tmp_path / "tuning.json").write_text(json.dumps(index))
    page = write_tuning_page(tmp_path, None).read_text()
    assert "Capacity per configuration (req/s)" in page and "2.4 – 3.2" in page
    assert "exited with status 1" in page


def test_facts_ask_the_known_routes_and_each_serve_info_url() -> None:
    import pytps
    from pytps.serve_process.facts import server_facts

    with pytps.Emulator(ttft_ms=1, model="m-one") as served, pytps.Emulator(ttft_ms=1, model="m-two") as other:
        facts = server_facts(served.port, ["/health", f"http://127.0.0.1:{other.port}/v1/models"], lambda t: t)
    assert facts["info /health"] == {"status": "ok"}
    assert facts[f"info http://127.0.0.1:{other.port}/v1/models"]["data"][0]["id"] == "m-two"
    assert "llama_server_props" not in facts and "vllm_version" not in facts  # the emulator has neither
