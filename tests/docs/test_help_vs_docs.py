"""Every flag in a `pytps --help` appears in the docs, and every flag the docs give pytps exists."""

from __future__ import annotations

from help_flags import doc_flags, doc_texts, help_flags

from pytps.settings.table import TABLE, Table

# Flags a doc names that are not pytps's own, or not in any --help on purpose.
NOT_IN_HELP = {
    "--no-build-isolation": "pip's (README.md, the incremental build)",
    "--pin": "a bench flag that was removed (design.md tells that history)",
    "--test-read-delay-us": "calibrate's hidden test hook (argparse.SUPPRESS), documented as hidden",
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


def table_flags(table: Table) -> dict[str, set[str] | list[str]]:
    """The flags the table of settings gives `pytps run` and `pytps sweep`."""
    return {cmd: table.flags(cmd) for cmd in ("run", "sweep")}


def test_every_help_flag_is_in_the_docs() -> None:
    missing = undocumented(dict(help_flags()))
    assert not missing, "flags in --help that no doc mentions: " + ", ".join(missing)


def test_every_flag_of_the_table_of_settings_is_in_the_docs() -> None:
    missing = undocumented(table_flags(TABLE))
    assert not missing, "settings whose flag no doc mentions: " + ", ".join(missing)


def test_every_flag_the_docs_give_exists() -> None:
    known = set().union(*help_flags().values()) | {"--help"}
    unknown = {flag: sorted(docs) for flag, docs in doc_flags().items() if flag not in known and flag not in NOT_IN_HELP}
    assert not unknown, f"flags in the docs that no `pytps --help` has: {unknown}"
