"""`--serve CMD`: each configuration of the server grid launched, waited on, measured (a run, a
sweep or a capacity search, given as `body`), and stopped; its log, facts, start-up figures and
/proc usage kept in its folder (server.log, server.json), and <out>/tuning.json indexing them.
pytps.serve_process runs the processes; this drives them around the jobs."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.app.serve_plan import ServeOptions, server_redactor
from pytps.errors import PytpsError, ServerStartError, read_json_if_any
from pytps.results.files import RESULTS
from pytps.results.files import SERVER_FACTS as FACTS
from pytps.results.files import SERVER_LOG as LOG
from pytps.results.files import TUNING_INDEX as INDEX
from pytps.serve_process.grid import Configuration, command_line, configurations
from pytps.serve_process.hooks import Hook, run_hook
from pytps.serve_process.process import ServerProcess, free_port
from pytps.serve_process.ready import parse_readiness


def folder_name(config: Configuration) -> str:
    return re.sub(r"[^A-Za-z0-9_.,=+-]", "_", config.name)


def start_server(
    opts: ServeOptions, config: Configuration, folder: Path, facts: dict[str, Any] | None = None
) -> ServerProcess:
    """One start, waited on until ready and timed to its first token; stopped again if it fails.
    `facts` (server.json) gets its pid and command line as soon as it runs, and is written then."""
    port = free_port()
    server = ServerProcess(
        argv=command_line(opts.template, config, port),
        port=port,
        log_path=folder / LOG,
        readiness=opts.readiness,
        redact=opts.redact,
        ready_timeout_s=opts.timeout_s,
        grace_s=opts.grace_s,
    )
    try:
        server.start()
        if facts is not None:
            facts.update(
                pid=server.pid, port=port, command_line=[opts.redact(w) for w in server.argv], status="starting"
            )
            (folder / FACTS).write_text(json.dumps(facts, indent=2, default=str))
        server.wait_ready(opts.model)
        server.time_first_token(opts.model)
    except BaseException:
        server.stop()
        raise
    return server


def serve_configurations(
    opts: ServeOptions,
    out: Path,
    body: Callable[[Configuration, str, Path], dict[str, Any]],
    *,
    single: bool = False,
) -> dict[str, Any]:
    """Each configuration: launch, `body(config, base_url, folder)`, stop, warm starts; tuning.json
    after each (a Ctrl-C keeps those finished). `single`: one configuration, its folder `out` itself."""
    from pytps.serve_process.facts import server_facts
    from pytps.serve_process.startup import startup_line, summarize_starts
    from pytps.serve_process.usage import UsageWatch

    out.mkdir(parents=True, exist_ok=True)
    previous = _previous(out) if opts.resume else {}
    entries: list[dict[str, Any]] = []
    index: dict[str, Any] = {
        "kind": "tuning",
        "serve": opts.redact(opts.template),
        "grid": {},
        "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "configurations": entries,
    }
    for c in opts.configs:
        for k, v in c.values:
            index["grid"].setdefault(k, [])
            if v not in index["grid"][k]:
                index["grid"][k].append(v)
    try:
        for config in opts.configs:
            done = previous.get(config.name)
            if done is not None and done.get("status") == "done":
                opts.say(f"{config.name}: finished before (--resume), kept")
                entries.append(done)
                continue
            folder = out if single else out / "configs" / folder_name(config)
            folder.mkdir(parents=True, exist_ok=True)
            if (folder / LOG).exists():
                (folder / LOG).unlink()  # a resumed configuration starts its log anew
            entry: dict[str, Any] = {"name": config.name, "values": config.as_dict(), "dir": _rel(folder, out)}
            facts: dict[str, Any] = {"configuration": config.as_dict(), "readiness": opts.readiness.describe()}
            entries.append(entry)
            opts.say(f"{config.name}: starting the server")
            server: ServerProcess | None = None
            try:
                server = start_server(opts, config, folder, facts)
                cold = server.stamps.figures()
                facts["startup"] = {"cold": cold}
                facts["facts"] = server_facts(server.port, opts.info, opts.redact)
                opts.say(f"{config.name}: ready ({cold['ready_by']}) at {server.base_url}")
                with UsageWatch(server.pid) as usage:
                    result = body(config, server.base_url, folder)
                facts["usage"] = usage.result()
                entry.update(result)
                facts["stopped_by"] = server.stop()
                facts["exit_status"] = server.exit_status
                if facts["stopped_by"].startswith("SIGKILL"):
                    raise ServerStartError(f"the server ignored SIGTERM and was killed after {opts.grace_s:g} s")
                warm = []
                for i in range(opts.starts):
                    again = start_server(opts, config, folder)
                    warm.append(again.stamps.figures())
                    again.stop()
                    opts.say(f"{config.name}: warm start {i + 1}/{opts.starts}: ready {warm[-1]['ready_s']:.4f} s")
                facts["startup"]["warm"] = summarize_starts(warm) if warm else None
                facts["startup"]["warm_starts"] = warm
                entry["startup"] = {"cold": cold, "warm": facts["startup"]["warm"]}
                entry["status"] = "done"
                opts.say(startup_line(config.name, cold, facts["startup"]["warm"]))
                opts.say(f"{config.name}: {usage_line(facts['usage'])}")
            except ServerStartError as exc:
                line = opts.redact(str(exc))
                entry.update(status="failed", reason=line, log_tail=exc.log_tail)
                opts.say(f"{config.name}: failed: {line}")
            except PytpsError as exc:  # a hook that failed, an endpoint refusing: this configuration's
                entry.update(status="failed", reason=opts.redact(str(exc)))
                opts.say(f"{config.name}: failed: {entry['reason']}")
            finally:
                if server is not None:
                    how = server.stop()
                    facts.setdefault("stopped_by", how or facts.get("stopped_by"))
                    facts.setdefault("exit_status", server.exit_status)
                facts["status"] = entry.get("status", "interrupted")
                if entry.get("reason"):
                    facts["reason"] = entry["reason"]
                (folder / FACTS).write_text(json.dumps(facts, indent=2, default=str))
                _write_index(out, index)
    finally:
        _write_index(out, index)
    return index


def _rel(folder: Path, out: Path) -> str:
    return "." if folder == out else str(folder.relative_to(out))


def _previous(out: Path) -> dict[str, dict[str, Any]]:
    data = read_json_if_any(out / INDEX)
    if not isinstance(data, dict):
        return {}
    return {e["name"]: e for e in data.get("configurations", []) if isinstance(e, dict) and "name" in e}


def _write_index(out: Path, index: dict[str, Any]) -> None:
    from pytps.sweep.tuning import rank

    index["ranking"] = rank(index["configurations"])
    tmp = out / (INDEX + ".tmp")
    tmp.write_text(json.dumps(index, indent=2, default=str))
    tmp.replace(out / INDEX)


class CellHooks:
    """--before-cell / --after-cell around each cell (or each probe of a search)."""

    def __init__(
        self, before: Hook | None, after: Hook | None, redact: Callable[[str], str], say: Callable[[str], None]
    ):
        self.before, self.after, self.redact, self.say = before, after, redact, say
        self._pending_after: str | None = None

    def start(self, base_url: str) -> None:
        self.finish()
        if self.before is not None:
            self.say(run_hook(self.before, base_url, self.redact))
        self._pending_after = base_url

    def finish(self) -> None:
        if self._pending_after is not None and self.after is not None:
            self.say(run_hook(self.after, self._pending_after, self.redact))
        self._pending_after = None


@contextlib.contextmanager
def served_cell(template: str, folder: Path, serve: Mapping[str, Any], settings: Mapping[str, Any]) -> Iterator[str]:
    """A matrix cell's `serve = "…"`: the server launched into `folder` (server.log, server.json)
    for as long as the block lasts, with the command line's --serve-ready / -timeout / -grace;
    yields its base URL. A server that fails to start is a ServerStartError (stopped already)."""
    from pytps.serve_process.facts import server_facts
    from pytps.serve_process.usage import UsageWatch

    opts = ServeOptions(
        template=template,
        configs=configurations(template, []),
        readiness=parse_readiness(serve.get("serve_ready")),
        timeout_s=float(serve.get("serve_timeout") or 300.0),
        grace_s=float(serve.get("serve_grace", 10.0) or 0.0),
        starts=0,
        info=list(serve.get("serve_info") or []),
        before=None,
        after=None,
        model=settings.get("model"),
        redact=server_redactor(settings, template),
    )
    folder.mkdir(parents=True, exist_ok=True)
    facts: dict[str, Any] = {"readiness": opts.readiness.describe()}
    try:
        server = start_server(opts, opts.configs[0], folder, facts)
    except ServerStartError as exc:
        facts.update(status="failed", reason=opts.redact(str(exc)))
        (folder / FACTS).write_text(json.dumps(facts, indent=2, default=str))
        raise
    facts["startup"] = {"cold": server.stamps.figures()}
    facts["facts"] = server_facts(server.port, opts.info, opts.redact)
    try:
        with UsageWatch(server.pid) as usage:
            yield server.base_url
        facts["usage"] = usage.result()
        facts["status"] = "done"
    finally:
        facts["stopped_by"] = server.stop()
        facts["exit_status"] = server.exit_status
        facts.setdefault("status", "interrupted")
        (folder / FACTS).write_text(json.dumps(facts, indent=2, default=str))


def usage_line(usage: dict[str, Any]) -> str:
    """The server's CPU and memory over the cell, beside the client's (one console line)."""
    mib = 1024 * 1024
    client = usage["client"]
    text = f"client CPU {client['cpu_s']:.2f} s, peak RSS {client['peak_rss_bytes'] / mib:.0f} MiB"
    server = usage.get("server")
    if not server:
        return f"server CPU and memory not read (not on this host's /proc); {text}"
    return (
        f"server CPU {server['cpu_s']:.2f} s ({(server['cpu_share'] or 0) * 100:.0f}% of a core over "
        f"{usage['elapsed_s']:.1f} s), RSS mean {server['mean_rss_bytes'] / mib:.0f} MiB, peak "
        f"{server['peak_rss_bytes'] / mib:.0f} MiB; {text}"
    )


@dataclass
class StoreLater:
    """A run to record in the results store once its server has stopped (its start-up known)."""

    spec: str | None
    kind: str
    config: str
    folder: Path


def store_later(cfg: Any, config: Configuration, folder: Path, later: list[StoreLater], kind: str = "run") -> None:
    """The Runner of `cfg` records nothing itself; the run goes on `later` instead."""
    if cfg.store_as:
        later.append(StoreLater(cfg.store, kind, config.name, folder))
    cfg.store_as = None


def record_with_startup(later: list[StoreLater], index: dict[str, Any]) -> None:
    """Each run in the results store, its figures with its server's start-up beside them
    (server_ready_s, server_ready_warm_p50_s, …: docs/tuning.md)."""
    from pytps.results.folder import load_results
    from pytps.serve_process.startup import store_figures
    from pytps.store.run_entry import record_in_store
    from pytps.store.store import figures_of

    startups = {e["name"]: e.get("startup") for e in index["configurations"]}
    for run in later:
        if not (run.folder / RESULTS).is_file():
            continue
        results = load_results(run.folder)
        figures = {**figures_of(results.get("summary")), **store_figures(startups.get(run.config))}
        kept = {"metadata": results["metadata"], "summary": results["summary"]}
        record_in_store(run.spec, kept, run.folder, run.kind, figures=figures)
