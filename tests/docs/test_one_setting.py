"""A new setting is one entry in the table of settings (pytps.settings.table), and from that one
entry it is a `pytps run` / `pytps sweep` flag in --help, a key of a TOML matrix (its line named in
errors), a keyword of make_config that reaches RunConfig, and a flag the docs check asks for."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from test_help_vs_docs import table_flags, undocumented

from pytps.cli import main
from pytps.errors import ConfigError
from pytps.runner.config import make_config
from pytps.settings.table import LOAD, TABLE, Setting

KNOB = Setting("probe_knob", "int", 3, "a test's own knob (default 3)", LOAD, "requests", metavar="N", toml="workload")


@pytest.fixture
def one_more_setting(monkeypatch: pytest.MonkeyPatch) -> Setting:
    grown = TABLE.with_setting(KNOB)
    monkeypatch.setattr(TABLE, "settings", grown.settings)
    monkeypatch.setattr(TABLE, "by_name", grown.by_name)
    return KNOB


def _help(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"])
    return out.getvalue()


def test_it_is_a_flag_in_help(one_more_setting: Setting) -> None:
    for command in ("run", "sweep"):
        text = _help(command)
        assert "--probe-knob N" in text and "a test's own knob (default 3)" in text
        # In its group: after --timeout, the load group's last flag before it.
        assert text.index("--timeout") < text.index("--probe-knob") < text.index("goodput and cost")


def test_it_reaches_run_config(one_more_setting: Setting) -> None:
    assert make_config("http://127.0.0.1:9").settings["probe_knob"] == 3
    assert make_config("http://127.0.0.1:9", probe_knob=7).settings["probe_knob"] == 7
    with pytest.raises(ConfigError, match=r"^probe_knob \(--probe-knob\) must be an integer, got 'many'"):
        make_config("http://127.0.0.1:9", probe_knob="many")


def test_without_it_make_config_names_it_unknown() -> None:
    with pytest.raises(ConfigError, match="^probe_knob: not a setting of a run"):
        make_config("http://127.0.0.1:9", probe_knob=7)


def _matrix(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "bench.toml"
    path.write_text(
        '[[endpoint]]\nname = "local"\nurl = "http://127.0.0.1:9"\n\n'
        f'[[workload]]\nname = "w"\nrequests = 2\nprobe_knob = {value}\n',
        encoding="utf-8",
    )
    return path


def test_it_is_a_matrix_key_with_its_line_in_errors(one_more_setting: Setting, tmp_path: Path) -> None:
    from pytps.app.matrix import matrix
    from pytps.sweep.matrix import Matrix

    (cell,) = Matrix(_matrix(tmp_path, "5")).cells
    assert cell.settings["probe_knob"] == 5
    bad = _matrix(tmp_path, '"many"')
    with pytest.raises(ConfigError, match=rf"^{bad}:8: endpoint 'local' x workload 'w': probe_knob \(--probe-knob\)"):
        matrix(bad, "run", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()  # found before anything ran


def test_without_it_the_matrix_refuses_the_key_by_line(tmp_path: Path) -> None:
    from pytps.sweep.matrix import Matrix

    with pytest.raises(ConfigError, match=r"bench.toml:8: \[\[workload\]\] w: unknown key 'probe_knob'"):
        Matrix(_matrix(tmp_path, "5"))


def test_the_docs_check_asks_for_its_flag(one_more_setting: Setting) -> None:
    assert undocumented(table_flags(TABLE)) == ["pytps run --probe-knob", "pytps sweep --probe-knob"]
