"""Every flag in a `pytps --help` appears in the docs, and every flag the docs give pytps exists."""

from __future__ import annotations

from help_flags import COMMANDS, doc_flags, doc_texts, help_flags

from pytps.settings.table import TABLE, Table

# Flags a doc names that are not pytps's own, or not in any --help on purpose.
NOT_IN_HELP = {
    "--jinja": "llama-server's (real-servers.md, the live tool loop runs on it)",
    "--chat-template-file": "llama-server's (real-servers.md, the live tool loop runs on it)",
    "--no-build-isolation": "pip's (README.md, the incremental build)",
    "--pin": "a bench flag that was removed (design.md tells that history)",
    "--repeat": "bench/bench_server_metrics.py's, which the docs harness caps (docs-tests.md, server-metrics.md)",
    "--test-read-delay-us": "calibrate's hidden test hook (argparse.SUPPRESS), documented as hidden",
    "--host": "llama-server's, in a --serve command (tuning.md)",
    "--api-key": "a served command's own option, masked in its log (tuning.md)",
    "--slot-save-path": "llama-server's, which its slot-erase preset needs (tuning.md)",
    "--slot-prompt-similarity": "llama-server's (real-servers.md: tried for the live tool loop, and why not)",
    "--pacing": "bench/bench_realtime_precision.py's (voice.md: the sender thread against the loop's pacing)",
    "--tree": "bench/bench_fixed_cost.py's (design.md: issue 42's fixed cost, before and after)",
}


def undocumented(flags_by_command: dict[str, set[str] | list[str]]) -> list[str]:
    """`pytps CMD --flag` for each flag no doc mentions (the flags tables included)."""
    docs = "\n".join(doc_texts().values())
    return sorted(
        f"pytps {cmd} {flag}".replace("pytps  ", "pytps ")
        for cmd, flags in flags_by_command.items()
        for flag in flags
        if f"`{flag}" not in docs and f" {flag}" not in docs
    )


# The commands whose flags are the table's entries: every command (help_flags.COMMANDS).
TABLE_COMMANDS = ("run", "sweep", "serve", "rank", "agents", "clock", "compare", "import", "report", "calibrate",
                  "history", "history add", "history check")


def table_flags(table: Table) -> dict[str, set[str] | list[str]]:
    """The flags the table of settings gives each command."""
    return {cmd: table.flags(cmd) for cmd in TABLE_COMMANDS}


# The flags a command adds by hand, and why: --html [FILE] is add_html_argument's (run, sweep, rank
# and report, each naming what it writes); the scale-out flags are the run's alone, and rank takes
# the run's table flags ("run") without them.
HAND_WRITTEN = {
    "run": {"--html", "--workers", "--backend", "--ray-address", "--on-worker-failure"},
    "sweep": {"--html"},
    "rank": {"--html"},
    "report": {"--html"},
}


def test_every_commands_flags_are_the_tables_but_the_few_written_by_hand() -> None:
    import argparse

    from pytps.cli import build_parser

    assert sorted(TABLE_COMMANDS) == sorted(COMMANDS)
    parser = build_parser()
    for name, sub in next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices.items():
        subs = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for command, p in [(name, sub)] + [(f"{name} {n}", sp) for a in subs for n, sp in a.choices.items()]:
            flags = {o for a in p._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
            table = set(TABLE.flags(command)) | (set(TABLE.flags("run")) if command == "rank" else set())
            assert flags - table == HAND_WRITTEN.get(command, set()), command


def test_every_help_flag_is_in_the_docs() -> None:
    missing = undocumented(dict(help_flags()))
    assert not missing, "flags in --help that no doc mentions: " + ", ".join(missing)


def test_every_flag_of_the_table_of_settings_is_in_the_docs() -> None:
    missing = undocumented(table_flags(TABLE))
    assert not missing, "settings whose flag no doc mentions: " + ", ".join(missing)


def test_every_flag_the_docs_give_exists() -> None:
    known = set().union(*help_flags().values()) | {"--help"}
    unknown = {
        flag: sorted(docs) for flag, docs in doc_flags().items() if flag not in known and flag not in NOT_IN_HELP
    }
    assert not unknown, f"flags in the docs that no `pytps --help` has: {unknown}"


def test_every_pytps_line_in_any_block_has_its_commands_flags() -> None:
    """Every `pytps CMD ...` line of any fenced block (sh, toml, crontab, a systemd unit) gives only
    flags CMD's own --help has, not merely some command's."""
    from help_flags import unknown_flags

    assert unknown_flags(doc_texts()) == []


def test_a_planted_unknown_flag_is_caught_in_every_kind_of_block() -> None:
    from help_flags import unknown_flags

    doc = (
        "```sh\npytps run --base-url http://127.0.0.1:8000 --no-such-flag\n```\n"
        '```toml\n[job]\ncommand = "pytps sweep --concurrency 1,2 --typo-flag"\n```\n'
        "```crontab\n0 2 * * * cd /srv && pytps history check --limits l.toml --max-chnage 5%\n```\n"
        "```ini\n[Service]\nExecStart=/usr/local/bin/pytps history add --prune --purge\n```\n"
        # A flag of another command: it exists, but not on this one.
        "```sh\npytps report results/x --concurrency 4\n```\n"
    )
    found = unknown_flags({"planted.md": doc})
    assert found == [
        "planted.md:2: (sh) pytps run --no-such-flag",
        "planted.md:6: (toml) pytps sweep --typo-flag",
        "planted.md:9: (crontab) pytps history check --max-chnage",
        "planted.md:13: (ini) pytps history add --purge",
        "planted.md:16: (sh) pytps report --concurrency",
    ], found
