"""Sustained agents (docs/agents.md): the most concurrent agents whose turns meet the run-level
targets, found by pytps.sweep.search's CapacitySearch on the concurrency axis, each probe a run
of N agents; with server metrics giving power, agents per kilowatt at that capacity. The one code
path of `pytps agents --search` and `pytps sweep --search agents`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.results.files import AGENT_SEARCH, SCRAPES
from pytps.runner.agents import AgentSettings, agent_work, run_agents
from pytps.sweep.verdict import MIN_REQUESTS, ProbeRun

if TYPE_CHECKING:
    from pytps.app.search_plan import SearchPlan
    from pytps.runner.scrape_settings import ServerMetrics


_SECONDS = re.compile(r" for [0-9.e+]+ s:")  # a probe runs its trajectories through, not for a time


def agent_capacity(
    s: AgentSettings,
    work: Sequence[Any],
    slo_run: dict[str, float],
    plan: SearchPlan,
    *,
    folder: Path | None = None,
    server_metrics: ServerMetrics | None = None,
    insecure: bool = False,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """The capacity search's answer (its probes and bracket [highest pass, lowest fail]) over N
    concurrent agents: each probe max(len(work), 2N) trajectories (the set cycled), N at once, its
    turns' TTFT and E2E checked against slo_run. With server_metrics, the search is scraped into
    folder/server_metrics.jsonl, each probe's power read inside its time window, and the answer
    gains `power` (agents per kilowatt at the highest passing probe: docs/metrics.md, "Agents")."""
    if not slo_run:
        raise ConfigError("--search needs targets: --slo-run ttft:p90=SECONDS (and/or e2e:p99=...)")
    if not work:
        raise ConfigError("the agents' search has no trajectories: give --agents (or --search-agents) a workload")
    windows: list[tuple[float, int, int]] = []  # (N, start, end) of each probe run, monotonic ns
    with ExitStack() as stack:
        scrapes = None
        if server_metrics is not None:
            # One scraper for the whole search, started before the warm-up (its start costs CPU):
            # each probe's power is read from the scrapes inside its own time window.
            from pytps.measure.redact import Redactor
            from pytps.runner.scrape_process import ScraperProcess

            if folder is None:
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pytps-agents-")))
            folder.mkdir(parents=True, exist_ok=True)
            scraper = ScraperProcess.for_run(server_metrics, folder, insecure=insecure, redactor=Redactor([s.api_key]))
            scraper.start()
            stack.callback(scraper.stop)
            scrapes = folder / SCRAPES

        def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
            n = max(1, int(load))
            t0 = _core.now_ns()
            result = asyncio.run(run_agents(dataclasses.replace(s, agents=n, rate=None), probe_work(work, n)))
            windows.append((float(n), t0, _core.now_ns()))
            turns = result.turn_rows()
            ok = [t for t in turns if t.ok]
            ends = [t.t_end_ns or t.t_send_ns for t in turns]
            span = (max(ends) - min(t.t_send_ns for t in turns)) / 1e9 if turns else 0.0
            return ProbeRun(
                values={
                    "ttft_s": [t.ttft_s for t in ok if t.ttft_s is not None],
                    "e2e_s": [t.e2e_s for t in ok if t.e2e_s],
                },
                ok=[t.ok for t in turns],
                saturation=None,
                completion_rps=len(ok) / span if span > 0 else None,
                dir=name.replace("concurrency", "agents"),
            )

        search = plan.capacity_search(
            run_probe,
            slo_run,
            axis="concurrency",
            progress=lambda line: say(_SECONDS.sub(":", line.replace("concurrency", "agents"))),
        )
        # One agent through one trajectory first, not measured: the connections are opened and the
        # server warmed, so the first probe is not slower than its recheck (which would read as unstable).
        asyncio.run(run_agents(dataclasses.replace(s, agents=1, rate=None), list(work[:1])))
        answer = search.run()
        if scrapes is not None:
            stack.close()  # the scraper's last scrapes; then the file is read, before a temporary folder goes
            power_by_load: dict[float, list[float]] = {}
            for n, t0, t1 in windows:
                watts = window_power_w(scrapes, t0, t1)
                if watts is not None:
                    power_by_load.setdefault(n, []).append(watts)
            # An unstable server has no capacity, so no agents per kilowatt either.
            answer["power"] = agents_per_kw(
                None if answer.get("unstable") else answer["capacity"]["low"], power_by_load
            )
    answer["unit"] = "agents"
    return answer


def probe_work(work: Sequence[Any], n: int) -> list[Any]:
    """A probe's trajectories: the set cycled to at least 2N of them (each agent works through
    two or more, so the probe's load is steady), and to at least the turns a pass needs."""
    items: list[Any] = []
    turns = 0
    while len(items) < max(len(work), 2 * n) or turns < MIN_REQUESTS:
        item = work[len(items) % len(work)]
        items.append(item)
        turns += len(getattr(item, "turns", None) or [None])  # a live task: one turn at least
    return items


def window_power_w(scrapes: Path, t0_ns: int, t1_ns: int) -> float | None:
    """The mean power (W) over [t0, t1]: an energy counter's increase over the time between the
    window's first and last scrape, else the mean of the power gauge at the scrapes inside it
    (docs/metrics.md, "energy", its steady window); None with fewer than two scrapes inside."""
    from pytps.measure.server_metrics.derived import energy_figures
    from pytps.measure.server_metrics.series import build
    from pytps.measure.server_metrics.summary import read_scrapes

    if not scrapes.is_file():
        return None
    energy = energy_figures(list(build(read_scrapes(scrapes)).values()), [(t0_ns, t1_ns)])
    if energy is None or energy["steady_power_w"] is None:
        return None
    return float(energy["steady_power_w"])


def agents_per_kw(capacity: float | None, power_by_load: dict[float, list[float]]) -> dict[str, Any]:
    """Agents per kilowatt at the sustained capacity: the highest passing N ÷ the mean power (kW)
    of that N's probe runs; None when no probe passed or the server reported no power."""
    by_load = {f"{k:g}": sum(v) / len(v) for k, v in sorted(power_by_load.items())}
    watts = power_by_load.get(float(capacity)) if capacity is not None else None
    mean_w = sum(watts) / len(watts) if watts else None
    return {
        "power_w_by_agents": by_load,
        "power_w": mean_w,
        "agents_per_kw": capacity / (mean_w / 1000.0) if capacity is not None and mean_w else None,
    }


def agents_line(answer: dict[str, Any]) -> str:
    """The answer in one line, in agents (with agents per kilowatt when power was scraped)."""
    from pytps.sweep.search import capacity_line

    line = capacity_line(answer).replace("concurrent requests", "concurrent agents")
    power = answer.get("power")
    if power is not None:
        if power["agents_per_kw"] is not None:
            line += f"; {power['agents_per_kw']:.3g} agents per kW ({power['power_w']:.4g} W at capacity)"
        else:
            line += "; agents per kW: unknown (no capacity, or the server reported no power)"
    return line


def sweep_agents(
    base_url: str, base: dict[str, Any], settings: dict[str, Any], plan: SearchPlan, folder: Path,
    say: Callable[[str], None],
) -> dict[str, Any]:  # fmt: skip
    """`pytps sweep --search agents` against base_url, once pytps.app.search has opened it: the run
    settings (api, model, stream, transport, seed, slo_run, server_metrics, store; `base`, those
    every probe shares) and plan.agents (the trajectories, default the shipped set) into `folder`:
    agents_search.json, and a row of kind "agents_search" in the store. Returns sweep.json's
    index ({"search": the answer})."""
    from pytps.measure.slo import parse_slo_run
    from pytps.runner.config import make_config

    cfg = make_config(base_url, **base, concurrency=1)  # every setting checked first
    transport = settings.get("transport") or "native"
    s = AgentSettings(
        base_url.rstrip("/"),
        api=settings.get("api") or "openai-chat",
        model=settings.get("model") or "pytps-emulator",
        stream=settings.get("stream", True) is not False,
        api_key=settings.get("api_key"),
        seed=int(settings.get("seed") or 0),
        transport="native" if transport == "auto" else transport,
    )
    work = list(agent_work(plan.agents or "example", None, None, None))
    answer = agent_capacity(
        s,
        work,
        parse_slo_run(settings.get("slo_run")),
        plan,
        folder=folder,
        server_metrics=cfg.server_metrics,
        insecure=bool(settings.get("insecure")),
        say=say,
    )
    answer["workload"] = plan.agents or "example"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / AGENT_SEARCH).write_text(json.dumps(answer, indent=1, default=str) + "\n")
    if cfg.store_as is not None:
        record_search(settings.get("store"), s, answer, folder)
    return {"search": answer}


def record_search(store: str | None, s: AgentSettings, answer: dict[str, Any], folder: Path) -> None:
    """The search in the results store (kind "agents_search"): its bracket and, with power,
    agents per kilowatt; its fingerprint made of the API, model, workload and targets."""
    cap = answer["capacity"]
    power = answer.get("power") or {}
    record_agent_row(
        store,
        s,
        folder,
        {"capacity": cap, "power": answer.get("power")},
        {
            "agents_capacity_low": cap["low"],
            "agents_capacity_high": cap["high"],
            "agents_per_kw": power.get("agents_per_kw"),
            "agents_power_w": power.get("power_w"),
        },
        kind="agents_search",
        workload={"kind": "agents_search", "agents": answer.get("workload"), "slo_run": answer["slo_run"]},
    )


def record_agent_row(
    store: str | None,
    s: AgentSettings,
    folder: Path,
    summary: dict[str, Any],
    figures: dict[str, Any],
    *,
    kind: str,
    **metadata: Any,
) -> None:
    """An agent run or search in the results store: its metadata the endpoint, model, API and
    transport of `s`, then `metadata` (the workload, ...: with them, its fingerprint); the figures
    given, those that are None left out."""
    from datetime import datetime, timezone
    from urllib.parse import urlsplit

    from pytps.store.run_entry import record_in_store

    url = urlsplit(s.base_url)
    meta = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endpoint": {"scheme": url.scheme, "host": url.hostname, "port": url.port, "path": url.path},
        "model": s.model,
        "api": s.api,
        "transport": s.transport,
        **metadata,
    }
    kept = {k: float(v) for k, v in figures.items() if v is not None}
    record_in_store(store, {"metadata": meta, "summary": summary}, folder, kind=kind, figures=kept)
