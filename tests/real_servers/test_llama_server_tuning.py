"""`pytps sweep --serve llama-server … --serve-grid np=1,4 --search rate`: a real llama-server
launched per configuration (docs/tuning.md). Tier `real_server` (.ci/steps/45-llama-server.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from build_llama_server import build
from tiny_model import make_model

pytestmark = pytest.mark.real_server


def test_np_grid_is_bracketed_ranked_and_kept(tmp_path: Path) -> None:
    binary, vocab = build()
    model = make_model(vocab, tmp_path / "tiny.gguf")
    serve = f"{binary} -m {model} -c 4096 -t 2 -np {{np}} --no-webui --host 127.0.0.1 --port {{port}}"
    out = tmp_path / "tuning"
    r = subprocess.run(
        [sys.executable, "-m", "pytps", "sweep", "--serve", serve, "--serve-grid", "np=1,4",
         "--search", "rate", "--slo-run", "ttft:p90=0.5", "--input-tokens", "32", "--output-tokens", "32",
         "--search-probe-s", "8", "--search-budget-s", "480", "--search-max-probes", "6", "--serve-starts", "5", "--out", str(out), "--no-store"],
        capture_output=True, text=True, timeout=2400, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    index = json.loads((out / "tuning.json").read_text())
    assert [c["status"] for c in index["configurations"]] == ["done", "done"]
    for entry in index["configurations"]:
        cap = entry["capacity"]
        assert cap["low"] is not None and cap["high"] is not None and cap["low"] < cap["high"], entry
        folder = out / entry["dir"]
        assert "llama" in (folder / "server.log").read_text().lower()
        facts = json.loads((folder / "server.json").read_text())
        assert facts["facts"]["llama_server_props"]["total_slots"] == int(entry["values"]["np"])
        assert facts["startup"]["warm"]["n"] == 5
        print(entry["name"], cap["low"], cap["high"], facts["startup"]["warm"]["ready_s"]["p50"])
    assert sorted(r["rank"] for r in index["ranking"]) == [1, 2]
    assert "rank  configuration" in r.stdout


@pytest.mark.parametrize("save_path", [True, False])
def test_slot_erase_preset(tmp_path: Path, save_path: bool) -> None:
    """reset:llama-server erases every slot of /props' total_slots; without --slot-save-path
    llama-server refuses (501) and the configuration fails with the hint."""
    binary, vocab = build()
    model = make_model(vocab, tmp_path / "tiny.gguf")
    extra = f"--slot-save-path {tmp_path}" if save_path else ""
    serve = f"{binary} -m {model} -c 2048 -t 2 -np 2 --no-webui {extra} --host 127.0.0.1 --port {{port}}"
    r = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--serve", serve, "--before-cell", "reset:llama-server",
         "--requests", "2", "--input-tokens", "16", "--output-tokens", "4", "--out", str(tmp_path / "o"), "--no-store"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if save_path:
        assert r.returncode == 0, r.stderr[-3000:]
        assert "reset:llama-server: 2 slot(s) erased" in r.stderr
    else:
        assert r.returncode == 3
        assert "answered 501 (llama-server erases slots only when started with --slot-save-path)" in r.stderr
