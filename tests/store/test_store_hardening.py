"""Issue 40, defects 14 and 15 (the store): one line, not a traceback, for a read-only store, a bad
PYTPS_STORE_TIMEOUT_S and too few --resamples; LIKE's wildcards in --fingerprint are literal; a
store in a read-only folder can be read; a missing store is an error for `history check`; --prune
forgets runs whose results are gone. Run as root, the permission tests drop the capabilities that
write through mode bits."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytps
from pytps.results.folder import load_results
from pytps.store.store import Store


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A folder every user can enter (pytest's own tmp folders are the owner's only)."""
    root = Path(tempfile.mkdtemp(prefix="pytps-store-hardening-"))
    root.chmod(0o755)
    yield root
    for p in root.rglob("*"):
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def one_run(shared: Path) -> Path:
    out = shared / "run0"
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        pytps.run(emu.base_url, model="m", out=out, requests=4, concurrency=2, output_tokens=4, store=False)
    return out


def copy_run(one_run: Path, where: Path) -> Path:
    shutil.copytree(one_run, where)
    for p in [where, *where.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return where


def pytps_cli(
    *args: str, unprivileged: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m pytps ARGS`; unprivileged: as root, without the capabilities that write through
    mode bits (setpriv drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set)."""
    prefix: list[str] = []
    if unprivileged and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv (util-linux): mode bits cannot be tested")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return subprocess.run([*prefix, sys.executable, "-m", "pytps", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})  # fmt: skip


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pytps: error:"), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_history_add_into_a_read_only_store_is_one_line(shared: Path, one_run: Path) -> None:
    folder = shared / "ro_file"
    folder.mkdir()
    folder.chmod(0o777)
    spec = folder / "s.sqlite"
    with Store(str(spec)):
        pass
    spec.chmod(0o444)
    run = copy_run(one_run, folder / "run")
    proc = pytps_cli("history", "add", "--store", str(spec), str(run), unprivileged=True)
    one_line_error(proc, "s.sqlite", "readonly")


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "-1", "ten"])
def test_a_bad_store_timeout_is_one_line(shared: Path, value: str) -> None:
    proc = pytps_cli("history", "--store", str(shared / "t.sqlite"), env={"PYTPS_STORE_TIMEOUT_S": value})
    one_line_error(proc, "PYTPS_STORE_TIMEOUT_S", repr(value))


@pytest.mark.parametrize("value", ["0", "-5", "1", "99"])
def test_too_few_resamples_are_refused(shared: Path, one_run: Path, value: str) -> None:
    spec = shared / "resamples.sqlite"
    with Store(str(spec)) as store:
        store.record(load_results(one_run), one_run)
    one_line_error(pytps_cli("history", "check", "--store", str(spec), "--resamples", value), "--resamples", "100")
    assert pytps_cli("history", "check", "--store", str(spec), "--resamples", "100").returncode == 0


def test_like_wildcards_in_a_fingerprint_match_nothing(shared: Path, one_run: Path) -> None:
    spec = str(shared / "like.sqlite")
    with Store(spec) as store:
        store.record(load_results(one_run), one_run)
        (run,) = store.runs()
        for typed in ("%", "_", "%%", "_" * 12, run.fingerprint[:2] + "%"):
            assert store.runs(fingerprint=typed) == [], typed
        assert [r.id for r in store.runs(fingerprint=run.fingerprint[:4])] == [run.id]


def test_a_store_in_a_read_only_folder_can_be_read(shared: Path, one_run: Path) -> None:
    folder = shared / "ro_folder"
    folder.mkdir()
    spec = folder / "s.sqlite"
    with Store(str(spec)) as store:
        store.record(load_results(one_run), one_run)
    folder.chmod(0o555)
    spec.chmod(0o644)
    try:
        listed = pytps_cli("history", "--store", str(spec), unprivileged=True)
        assert listed.returncode == 0 and str(one_run) in listed.stdout, listed.stderr
        checked = pytps_cli("history", "check", "--store", str(spec), unprivileged=True)
        assert checked.returncode == 0 and "no group has two" in checked.stderr, checked.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["s.sqlite"]  # nothing written beside it
    finally:
        folder.chmod(0o755)


def test_history_check_on_a_missing_store_is_an_error(shared: Path) -> None:
    typo = shared / "typo.sqlite"
    one_line_error(pytps_cli("history", "check", "--store", str(typo)), "does not exist")
    assert not typo.exists()
    one_line_error(pytps_cli("history", "check", "--store", f"sqlite:///{typo}"), "does not exist")
    assert not typo.exists()


def test_prune_forgets_runs_whose_results_are_gone(shared: Path, one_run: Path) -> None:
    spec = str(shared / "prune.sqlite")
    kept, emptied, removed = (copy_run(one_run, shared / f"prune_{n}") for n in ("kept", "emptied", "removed"))
    calib = shared / "calib.json"
    calib.write_text("{}")
    with Store(spec) as store:
        for folder in (kept, emptied, removed):
            store.record(load_results(folder), folder)
        store.record({"metadata": {"api": "calibrate", "endpoint": "x"}, "summary": None}, calib, kind="calibrate",
                     figures={"cpu_us_per_token": 1.0})  # fmt: skip
    (emptied / "results.json").unlink()
    shutil.rmtree(removed)
    calib.unlink()
    proc = pytps_cli("history", "add", "--store", spec, "--prune")
    assert proc.returncode == 0 and "3 forgotten" in proc.stdout, (proc.stdout, proc.stderr)
    with Store(spec) as store:
        assert [r.folder for r in store.runs()] == [str(kept.resolve())]
