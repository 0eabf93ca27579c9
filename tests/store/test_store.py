"""pytps.store.store: the results store on SQLite and, when PYTPS_TEST_POSTGRES_URL is set, on a real
PostgreSQL (.ci/steps/55-postgres.sh): records, fingerprints, the schema's version, concurrent writers,
SIGKILL mid-write, and no secrets."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from store_specs import store_spec  # noqa: F401 - the fixture

import pytps
from pytps.errors import StoreError
from pytps.store.fingerprint import fingerprint
from pytps.results.folder import load_results
from pytps.store.store import STORE_SCHEMA_VERSION, Store, default_store_path, figures_of, resolve_store

CANARY = "sk-test-DO-NOT-LEAK-1234567890"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One real run against the emulator: a genuine results.json to record."""
    out = tmp_path_factory.mktemp("run") / "r"
    with pytps.Emulator(ttft_ms=5, itl_us=200) as emu:
        pytps.run(emu.base_url, requests=12, concurrency=4, output_tokens=8, input_tokens=16, out=out, store=False)
    return out, load_results(out)


def test_a_run_is_recorded_with_its_figures_and_read_back(store_spec: str, real_run: Any) -> None:
    folder, results = real_run
    when = datetime(2026, 11, 3, 2, 0, tzinfo=timezone.utc)
    with Store(store_spec, clock=lambda: when) as store:
        run_id = store.record(results, folder)
        assert run_id is not None
        assert store.record(results, folder) is None  # the same folder's run once, however often
        (row,) = store.runs()
    meta = results["metadata"]
    assert row.id == run_id and row.when_utc == when and row.kind == "run" and row.status == "complete"
    assert row.endpoint == f"http://127.0.0.1:{meta['endpoint']['port']}"
    assert (row.model, row.api, row.transport) == (meta["model"], meta["api"], meta["transport"])
    assert row.pytps_version == pytps.__version__ and row.host == meta["client"]["host"]
    assert row.fingerprint == fingerprint(meta) and row.folder == str(folder.resolve())
    assert row.figures == figures_of(results["summary"])
    assert row.figures["ttft_p50"] == results["summary"]["ttft_s"]["p50"]
    assert row.figures["requests_ok"] == 12


def test_fingerprints_match_exactly_when_runs_are_comparable(real_run: Any) -> None:
    meta = real_run[1]["metadata"]
    rerun = copy.deepcopy(meta)
    rerun["workload"]["seed"] = 7  # another seed and salt: the same workload, rerun
    rerun["workload"]["salt"] = "other"
    rerun["date_utc"] = "2027-01-01T00:00:00+00:00"
    rerun["transport"] = "httpx"
    assert fingerprint(rerun) == fingerprint(meta)
    for change in (
        lambda m: m["workload"].__setitem__("input_tokens", "17"),
        lambda m: m["workload"].__setitem__("output_tokens", "9"),
        lambda m: m["load"].__setitem__("concurrency", 5),
        lambda m: m["slo"].__setitem__("per_request_s", {"ttft": 0.5}),
        lambda m: m["slo"].__setitem__("validation", {"regex": "x", "json": False, "json_keys": []}),
        lambda m: m.__setitem__("api", "openai-completions"),
    ):
        other = copy.deepcopy(meta)
        change(other)
        assert fingerprint(other) != fingerprint(meta)


def test_a_dataset_is_fingerprinted_by_its_content(tmp_path: Path, real_run: Any) -> None:
    meta = copy.deepcopy(real_run[1]["metadata"])
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"prompt": "a"}\n')
    meta["workload"] = {"kind": "dataset", "source": str(data), "records": 1, "skipped": 0, "output_tokens": None}
    before = fingerprint(meta)
    data.write_text('{"prompt": "b"}\n')
    assert fingerprint(meta) != before


def test_the_schema_is_versioned_and_a_newer_one_is_refused_in_one_line(store_spec: str, real_run: Any) -> None:
    with Store(store_spec) as store:
        assert store.schema_version() == STORE_SCHEMA_VERSION
        store.record(*reversed(real_run))
        with store.db.transaction():
            store.db.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (str(STORE_SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError) as err:
        Store(store_spec)
    msg = str(err.value)
    assert "\n" not in msg and f"schema version {STORE_SCHEMA_VERSION + 1}" in msg and "upgrade pytps" in msg


def test_an_older_store_migrates_forward(tmp_path: Path) -> None:
    # Version 0 is a database without the store's tables (an empty file, or one an older pytps never made).
    path = tmp_path / "old.sqlite"
    sqlite3.connect(path).close()
    with Store(str(path)) as store:
        assert store.schema_version() == STORE_SCHEMA_VERSION and store.count() == 0


def test_the_store_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PYTPS_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "pytps" / "history.sqlite"
    assert resolve_store() == str(tmp_path / "pytps" / "history.sqlite")
    monkeypatch.setenv("PYTPS_STORE", "/x/y.sqlite")
    assert resolve_store() == "/x/y.sqlite" and resolve_store("postgresql://h/db") == "postgresql://h/db"
    with pytest.raises(StoreError, match="unknown backend 'mysql'"):
        Store("mysql://h/db")
    sq = tmp_path / "u.sqlite"
    with Store(f"sqlite:///{sq}") as store:
        assert store.where == str(sq)


def test_every_test_has_a_store_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    # tests/conftest.py: no test writes to the user's data directory.
    assert str(tmp_path_factory.getbasetemp()) in os.environ["PYTPS_STORE"]


# ---- concurrency and faults ------------------------------------------------------------------


def _writer(spec: str, results: dict[str, Any], worker: int, n: int) -> None:
    with Store(spec) as store:
        for i in range(n):
            store.record(results, f"/runs/w{worker}/r{i}")


def test_8_writers_of_50_runs_each_lose_nothing(store_spec: str, real_run: Any) -> None:
    results = real_run[1]
    Store(store_spec).close()  # created first; creation under contention is the next test's
    ctx = multiprocessing.get_context("fork")  # each child opens its own connection
    procs = [ctx.Process(target=_writer, args=(store_spec, results, w, 50)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store(store_spec) as store:
        runs = store.runs()
        assert len(runs) == 400 and store.integrity() == "ok"
        assert {r.folder for r in runs} == {f"/runs/w{w}/r{i}" for w in range(8) for i in range(50)}
        assert all(r.figures == figures_of(results["summary"]) for r in runs)


def test_writers_that_create_the_store_together_all_land(store_spec: str, real_run: Any) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(store_spec, real_run[1], w, 3)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store(store_spec) as store:
        assert store.count() == 18


KILLED_WRITER = """
import json, sys
from pytps.store.store import Store
spec, results = sys.argv[1], json.load(open(sys.argv[2]))
with Store(spec) as store:
    print("ready", flush=True)
    i = 0
    while True:
        store.record(results, f"/runs/killed/{sys.argv[3]}/{i}")
        i += 1
"""


def test_sigkill_at_random_moments_leaves_a_store_that_opens_and_checks_clean(
    store_spec: str, real_run: Any, tmp_path: Path
) -> None:
    results_file = tmp_path / "results.json"
    results_file.write_text(json.dumps(real_run[1]))
    Store(store_spec).close()
    rng = random.Random(26)
    expected = len(figures_of(real_run[1]["summary"]))
    for k in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, store_spec, str(results_file), str(k)], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with Store(store_spec) as store:
            assert store.integrity() == "ok"
            # A transaction lands whole or not at all: every run has every figure.
            assert all(len(r.figures) == expected for r in store.runs())
    with Store(store_spec) as store:
        assert store.count() > 0


def test_a_store_locked_past_its_timeout_costs_the_run_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = str(tmp_path / "locked.sqlite")
    Store(spec).close()
    holder = sqlite3.connect(spec, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setenv("PYTPS_STORE_TIMEOUT_S", "0.3")
    try:
        with pytps.Emulator(ttft_ms=2, itl_us=100) as emu:
            result = pytps.run(emu.base_url, requests=4, concurrency=2, output_tokens=4, out=tmp_path / "r", store=spec)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (result.out_dir / "results.json").exists() and result.summary["requests_ok"] == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "was not recorded in the results store" in err[0] and "is complete" in err[0]


@pytest.mark.parametrize("how", ["unopenable", "newer schema"])
def test_a_store_that_cannot_be_used_warns_once_and_the_folder_is_written(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if how == "unopenable":
        (tmp_path / "a-file").write_text("")
        spec = str(tmp_path / "a-file" / "history.sqlite")  # its parent is a file
    else:
        spec = str(tmp_path / "new.sqlite")
        with Store(spec) as store, store.db.transaction():
            store.db.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    with pytps.Emulator(ttft_ms=2, itl_us=100) as emu:
        result = pytps.run(emu.base_url, requests=3, concurrency=1, output_tokens=4, out=tmp_path / "r", store=spec)
    assert load_results(result.out_dir)["summary"]["requests_ok"] == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pytps: warning: results store") and "not recorded" in err[0]


def test_no_secret_reaches_the_store(store_spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The URL's userinfo is the credential here (Basic auth): with an API key too, the run is
    # refused (issue 40), so the key's own canary is checked by tests/cli/test_secret_canary.py.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytps.Emulator(ttft_ms=2, itl_us=100) as emu:
        port = emu.base_url.rsplit(":", 1)[1]
        url = f"http://user:{CANARY}@127.0.0.1:{port}/v1?key={CANARY}"
        pytps.run(
            url, requests=3, concurrency=1, output_tokens=4, out=tmp_path / "r", store=store_spec,
            headers={"X-Secret": CANARY},
        )  # fmt: skip
    with Store(store_spec) as store:
        (run,) = store.runs()
        assert run.endpoint == f"http://127.0.0.1:{port}"
        dump = json.dumps([r.as_dict() for r in store.runs()], default=str)
        if store.db.name == "sqlite":
            raw = sqlite3.connect(store.where)
            dump += "\n".join(raw.iterdump())
            raw.close()
        else:
            dump += json.dumps(store.db.execute("SELECT * FROM runs"), default=str)
            dump += json.dumps(store.db.execute("SELECT * FROM store_meta"), default=str)
    assert CANARY not in dump and "X-Secret" not in dump
    assert CANARY not in store.where


def test_a_postgres_url_is_printed_without_its_password() -> None:
    from pytps.store.backends import safe_url

    assert safe_url(f"postgresql://bench:{CANARY}@db.example:5432/runs?password={CANARY}") == (
        "postgresql://db.example:5432/runs"
    )


def test_the_clock_is_the_stores(store_spec: str, real_run: Any) -> None:
    start = datetime(2026, 10, 1, tzinfo=timezone.utc)
    days = iter(range(30))
    with Store(store_spec, clock=lambda: start + timedelta(days=next(days))) as store:
        for i in range(30):
            store.record(real_run[1], f"/runs/month/{i}")
        runs = store.runs()
    assert [r.when_utc for r in runs] == [start + timedelta(days=i) for i in range(30)]
