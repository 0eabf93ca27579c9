"""Every command takes its flags from the table of settings (pytps.settings.commands and
pytps.settings.tools): serve's defaults are the Emulator's own, each command's settings come back
from its parsed flags under their names, a subcommand's copy of its command's flag does not
overwrite the value given before it, and report's output forms exclude each other."""

from __future__ import annotations

import inspect

import pytest

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


def test_the_tools_settings_come_from_their_flags() -> None:
    args = build_parser("clock").parse_args(["clock", "--no-read-floor", "--gap-us", "250"])
    assert TABLE.from_flags(args, "clock") == {"read_floor": False, "connections": 32, "gap_us": 250.0}
    args = build_parser("calibrate").parse_args(["calibrate", "--rates", "100,200", "--client", "openai", "--no-save"])
    calibrate = TABLE.from_flags(args, "calibrate")
    assert (calibrate["rates"], calibrate["client"], calibrate["save"]) == ((100.0, 200.0), ["openai"], False)
    assert (calibrate["realtime_concurrency"], calibrate["test_read_delay_us"]) == ((1, 8), 0.0)
    args = build_parser("import").parse_args(["import", "f.json", "--from", "vllm", "--no-store"])
    assert (args.file, args.fmt, args.no_store, args.out) == ("f.json", "vllm", True, None)
    args = build_parser("compare").parse_args(["compare", "a/", "b/", "--max-days", "2"])
    assert (args.runs, TABLE.from_flags(args, "compare")["max_days"]) == (["a/", "b/"], 2.0)


def test_a_subcommands_copy_of_its_commands_flag_keeps_the_value_given_before_it() -> None:
    parse = build_parser("history").parse_args
    args = parse(["history", "--store", "a.sqlite", "--model", "m", "check", "--metric", "ttft_p50"])
    assert (args.store, args.model, args.endpoint, args.check_metric, args.max_change) == (
        "a.sqlite", "m", None, "ttft_p50", "10%")  # fmt: skip
    args = parse(["history", "check", "--store", "b.sqlite", "--json"])
    assert (args.store, args.check_json, args.json) == ("b.sqlite", True, False)
    args = parse(["history", "--store", "a.sqlite", "add", "--prune", "x/"])
    assert (args.store, args.prune, args.dirs, args.func.__name__) == ("a.sqlite", True, ["x/"], "cmd_add")
    args = parse(["history", "--max-change", "5%"])
    assert (args.band_max_change, args.func.__name__, args.history_action) == ("5%", "run", None)


def test_reports_output_forms_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    parse = build_parser("report").parse_args
    assert parse(["report", "d/", "--csv", "--trace", "t.json"]).csv
    with pytest.raises(SystemExit) as exc:
        parse(["report", "d/", "--json", "--format", "llmd-report"])
    assert exc.value.code == 2
    assert "not allowed with argument --json" in capsys.readouterr().err
