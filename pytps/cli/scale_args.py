"""`pytps run`'s flags for scaling out (docs/scale.md): --workers, --backend, --ray-address,
--on-worker-failure, and the ScaleOptions they make (None: one process, the plain Runner)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytps.app.runs import ScaleOptions


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    sc = p.add_argument_group("scale-out (docs/scale.md)")
    sc.add_argument(
        "--workers",
        default="1",
        metavar="N|auto",
        help="N worker processes, each with its own transport and engine thread, sharing one schedule "
        "and merged exactly (default 1: this process); auto: from the client CPU measured during --warmup",
    )
    sc.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="where workers run: local processes, or Ray actors (pip install ray)",
    )
    sc.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="--backend ray: the cluster to join, e.g. ray://head:10001 or auto (default: start a local "
        "one on 127.0.0.1)",
    )
    sc.add_argument(
        "--on-worker-failure",
        choices=("continue", "stop"),
        default="continue",
        help="when a worker dies: go on with the rest (default) or stop the run; either way its finished "
        "requests are kept and the failure is reported",
    )


def scale_options(args: argparse.Namespace) -> ScaleOptions | None:
    """The run's ScaleOptions, or None for a run in this process alone."""
    from pytps.app.runs import scale_options as options

    return options(args.workers, args.backend, args.ray_address, args.on_worker_failure)
