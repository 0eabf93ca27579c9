"""Every flag in a `pytps --help` appears in the docs, and every flag the docs give pytps exists."""

from __future__ import annotations

from help_flags import doc_flags, doc_texts, help_flags

# Flags a doc names that are not pytps's own, or not in any --help on purpose.
NOT_IN_HELP = {
    "--no-build-isolation": "pip's (README.md, the incremental build)",
    "--pin": "a bench flag that was removed (design.md tells that history)",
    "--test-read-delay-us": "calibrate's hidden test hook (argparse.SUPPRESS), documented as hidden",
    "--host": "llama-server's, in a --serve command (tuning.md)",
    "--api-key": "a served command's own option, masked in its log (tuning.md)",
    "--slot-save-path": "llama-server's, which its slot-erase preset needs (tuning.md)",
}


def test_every_help_flag_is_in_the_docs() -> None:
    docs = "\n".join(doc_texts().values())
    missing = sorted(
        f"pytps {cmd} {flag}".replace("pytps  ", "pytps ")
        for cmd, flags in help_flags().items()
        for flag in flags
        if f"`{flag}" not in docs and f" {flag}" not in docs
    )
    assert not missing, "flags in --help that no doc mentions: " + ", ".join(missing)


def test_every_flag_the_docs_give_exists() -> None:
    known = set().union(*help_flags().values()) | {"--help"}
    unknown = {flag: sorted(docs) for flag, docs in doc_flags().items() if flag not in known and flag not in NOT_IN_HELP}
    assert not unknown, f"flags in the docs that no `pytps --help` has: {unknown}"
