"""A sweep as a job: one full run per cell of one axis or a grid of two (pytps.sweep.cells plans
the cells and reads them; this runs them), into one folder indexed by sweep.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.app.endpoint import Endpoint
from pytps.app.exit_codes import overall_exit_code
from pytps.app.runs import results_folder, run_cell
from pytps.errors import ConfigError

if TYPE_CHECKING:
    from pytps.app.served import CellHooks
    from pytps.runner.config import RunConfig

#: The settings a sweep may take as its axes, in the order of a grid.
AXIS_SETTINGS = ("concurrency", "rate", "input_tokens", "output_tokens")


@dataclass(frozen=True)
class SweepPlan:
    """How a sweep goes beyond its cells (the table's `sweep` settings): refine rounds around the
    knee, the SLO capacity's share of useful requests, and when it stops early."""

    refine: int = 0
    slo_target: float = 0.95
    stop_error_rate: float = 0.5
    stop_e2e_factor: float = 20.0

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> SweepPlan:
        """From the table's sweep settings (refine, slo_target, stop_error_rate, stop_e2e_factor)."""
        names = ("refine", "slo_target", "stop_error_rate", "stop_e2e_factor")
        return cls(**{k: settings[k] for k in names if settings.get(k) is not None})


@dataclass(frozen=True)
class SweepOutcome:
    """A finished (or interrupted) sweep, or a study of sweeps (a matrix: MatrixOutcome; a tuning:
    TuningOutcome): its folder, its index (sweep.json, matrix.json, tuning.json) and its exit status."""

    out_dir: Path
    index: dict[str, Any]
    exit_code: int


def sweep_axes(settings: Mapping[str, Any]) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """(the axes swept, the settings every cell shares) from the sweepable settings: each a list
    ([1, 2, 4]) or a flag's text (1,2,4 or 1..64); a single length is a setting of every cell."""
    from pytps.sweep.cells import parse_axis

    axes: dict[str, list[Any]] = {}
    fixed: dict[str, Any] = {}
    for name in AXIS_SETTINGS:
        value = settings.get(name)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            values = sorted(set(value))
        else:
            try:
                values = parse_axis(name, str(value))
            except ConfigError:
                if name in ("input_tokens", "output_tokens"):
                    fixed[name] = value  # a single length or distribution (512:64, 128-1024) for every cell
                    continue
                raise
        if len(values) > 1 or name in ("concurrency", "rate"):
            axes[name] = list(values)
        else:
            fixed[name] = values[0]
    if not axes:
        raise ConfigError(
            "nothing to sweep: give --concurrency or --rate (or a length) as a list, e.g. "
            "--concurrency 1,2,4,8 or --concurrency 1..64"
        )
    return axes, fixed


def sweep_folder(
    axes: dict[str, list[Any]],
    out: Path,
    make_cell: Callable[[dict[str, Any], Path], RunConfig],
    plan: SweepPlan,
    say: Callable[[str], None],
    codes: list[int],
) -> dict[str, Any]:
    """The sweep of `axes` into `out` (the one place a Sweep is built), each cell the run of
    make_cell(its values, its folder); each cell's exit status appended to codes. sweep.json's index."""
    from pytps.sweep.cells import StopRule, Sweep

    sweep = Sweep(
        axes=axes,
        out=out,
        run_cell=lambda values, cell_dir: run_cell(make_cell(values, cell_dir), codes),
        refine=plan.refine,
        slo_target=plan.slo_target,
        stop=StopRule(plan.stop_error_rate, plan.stop_e2e_factor),
        progress=say,
    )
    return sweep.run()


def sweep(
    endpoint: Endpoint,
    settings: dict[str, Any],
    *,
    plan: SweepPlan | None = None,
    out: str | Path | None = None,
    say: Callable[[str], None] = lambda line: None,
    say_endpoint: Callable[[str], None] | None = None,
    between: CellHooks | None = None,
) -> SweepOutcome:
    """A sweep of the run `settings` whose sweepable ones (concurrency, rate, input_tokens,
    output_tokens) are lists: one full run per cell into `out` (default results/<UTC time>-sweep/);
    `between`: hooks run around each cell (--before-cell, --after-cell)."""
    from pytps.runner.config import make_config

    axes, fixed = sweep_axes(settings)
    base = {k: v for k, v in settings.items() if k not in AXIS_SETTINGS and k != "out"}
    folder = results_folder(out, "sweep")
    codes: list[int] = []  # each cell's exit status (pytps.app.exit_codes)
    with ExitStack() as stack:
        base_url = endpoint.open(stack, say_endpoint)
        make_config(base_url, **base, **fixed, **{a: v[0] for a, v in axes.items()})  # every setting checked first

        def make_cell(values: dict[str, Any], cell_dir: Path) -> RunConfig:
            if between is not None:
                between.start(base_url)  # the previous cell's after-hook, then this one's before-hook
            return make_config(base_url, **base, **fixed, **values, out=cell_dir)

        try:
            index = sweep_folder(axes, folder, make_cell, plan or SweepPlan(), say, codes)
        finally:
            if between is not None:
                between.finish()
    return SweepOutcome(folder, index, overall_exit_code(codes))
