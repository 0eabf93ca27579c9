"""A capacity search's settings (`SearchPlan`) and the run settings its probes share, apart from
the job that runs them (pytps.app.search), so that the agents search (pytps.app.agent_search),
which that job calls, reads them without an import circle."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pytps.errors import ConfigError

if TYPE_CHECKING:
    from pytps.sweep.search import CapacitySearch
    from pytps.sweep.verdict import ProbeRun


@dataclass(frozen=True)
class SearchPlan:
    """A capacity search's settings (the table's `search` ones, less the "search_" prefix, made by
    `of`, which fills in the table's defaults): the axis it searches ("rate", "concurrency" or
    "agents"), its first probe's load (None: found), the bracket's precision, the probes' budget,
    the repeats of an undecided probe, the error rate a probe fails above, each probe's sending
    time and the whole search's time budget."""

    axis: str
    start: float | None
    precision: float
    max_probes: int
    repeats: int
    max_error_rate: float
    probe_s: float
    budget_s: float
    agents: str | None  # --search agents: the trajectories (None: the shipped set)

    @classmethod
    def of(cls, settings: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> SearchPlan:
        """From the table's search settings (search, search_start, ...): those given, else
        `defaults`', else the table's."""
        from pytps.settings.table import TABLE

        given = {**TABLE.resolve({}, "search"), **(defaults or {})}
        given.update((k, v) for k, v in settings.items() if v is not None)
        return cls(axis=given["search"], **{f.name: given["search_" + f.name] for f in fields(cls) if f.name != "axis"})

    def capacity_search(
        self, run_probe: Callable[[str, float, str, float], ProbeRun], slo_run: dict[str, float], *,
        axis: str | None = None, progress: Callable[[str], None],
    ) -> CapacitySearch:  # fmt: skip
        """The search these settings make, each probe run by run_probe(mode, load, name, seconds);
        axis: the load axis probed (default self.axis; the agents search probes concurrency)."""
        from pytps.sweep.search import CapacitySearch

        return CapacitySearch(
            axis=axis or self.axis, run_probe=run_probe, slo_run=slo_run, max_error_rate=self.max_error_rate,
            precision=self.precision, max_probes=self.max_probes, repeats=self.repeats, start=self.start,
            probe_s=self.probe_s, budget_s=self.budget_s, progress=progress,
        )  # fmt: skip


def probe_settings(
    settings: Mapping[str, Any], axis: str, *, start_hint: str = " (or use --search-start)"
) -> dict[str, Any]:
    """The run settings every probe of a search along `axis` shares: all but the load, the length
    and the folder, which the search sets per probe; a load or a length given is refused."""
    for name in ("concurrency", "rate"):
        if settings.get(name) is not None:
            raise ConfigError(f"--search {axis} places the load itself: leave out --{name}{start_hint}")
    for name in ("duration", "requests"):
        if settings.get(name) is not None:
            raise ConfigError(f"--search {axis} bounds each probe in time: leave out --{name} (use --search-probe-s)")
    return {k: v for k, v in settings.items() if k not in ("concurrency", "rate", "duration", "requests", "out")}
