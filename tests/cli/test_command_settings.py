"""`pytps serve`, `rank` and `agents` take their flags from the table of settings
(pytps.settings.commands): serve's defaults are the Emulator's own, and each command's settings
come back from its parsed flags under their names."""

from __future__ import annotations

import inspect

from pytps.cli import build_parser
from pytps.emulator import Emulator
from pytps.settings.table import TABLE

# Where `pytps serve` differs from Emulator() on purpose.
SERVE_OWN = {"port": 8000}  # a server at a known port; Emulator() picks a free one (0)


def test_serve_defaults_are_the_emulators() -> None:
    params = inspect.signature(Emulator).parameters
    for s in TABLE.target("server"):
        assert s.name in params, f"{s.name}: not an Emulator keyword"
        expected = SERVE_OWN.get(s.name, params[s.name].default)
        assert s.default == expected, f"--{s.name}: {s.default!r} in the table, {expected!r} expected"


def test_each_commands_settings_come_from_its_flags() -> None:
    args = build_parser("serve").parse_args(["serve", "--seed", "7", "--fault", "429:p=0.1", "--itl-replay-us", "1,2"])
    server = TABLE.from_flags(args, "server")
    assert (server["seed"], server["faults"], server["itl_replay_us"]) == (7, ["429:p=0.1"], [1.0, 2.0])
    args = build_parser("agents").parse_args(["agents", "http://127.0.0.1:9", "--agents", "3", "--agents", "example",
                                              "--no-store", "--agent-rate", "2"])  # fmt: skip
    agents = TABLE.from_flags(args, "agents")
    assert (agents["agents"], agents["trajectories"], agents["record"], agents["rate"]) == (3, "example", False, 2.0)
    args = build_parser("rank").parse_args(["rank", "--endpoint", "a=http://127.0.0.1:9", "--for", "1h"])
    rank = TABLE.from_flags(args, "rank")
    assert (rank["endpoint"], rank["for_"], rank["blocks"]) == (["a=http://127.0.0.1:9"], "1h", 8)
