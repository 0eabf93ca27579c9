"""Issue 29 (1): without --output-tokens a dataset's own output lengths are sent; results.json says
where they came from; a record with no max_tokens (and no length given) uses the documented default."""

from __future__ import annotations

import json
import subprocess
import sys

from pytps.workload.synthetic import DEFAULT_OUTPUT_TOKENS, DatasetWorkload


def _dataset(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        json.dumps({"prompt": "Say hello.", "max_tokens": 23}) + "\n" + json.dumps({"prompt": "Count.", "max_tokens": 11}) + "\n"
    )
    return path


def test_pytps_run_sends_each_record_s_own_max_tokens(tmp_path):
    out = tmp_path / "r"
    done = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--dataset", str(_dataset(tmp_path)), "--requests", "4",
         "--emu-ttft-ms", "1", "--emu-itl-us", "100", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert sorted({line["output_tokens"] for line in lines}) == [11, 23]
    workload = json.loads((out / "results.json").read_text())["metadata"]["workload"]
    assert workload["output_tokens"] is None and workload["output_tokens_source"] == "records"
    assert workload["output_tokens_defaulted"] == 0


def test_the_library_does_the_same(tmp_path):
    import pytps

    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        result = pytps.run(emu.base_url, dataset=str(_dataset(tmp_path)), requests=4, out=tmp_path / "r")
    assert sorted({r.output_tokens for r in result.requests}) == [11, 23]


def test_a_given_output_length_still_wins(tmp_path):
    w = DatasetWorkload.from_file(_dataset(tmp_path), output_tokens="7")
    assert {w.prompt(i).max_tokens for i in range(4)} == {7}
    assert w.describe()["output_tokens_source"] == "given"


def test_a_record_without_max_tokens_uses_the_default(tmp_path):
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps({"prompt": "hi"}) + "\n")
    w = DatasetWorkload.from_file(path, output_tokens=None)
    assert w.prompt(0).max_tokens == DEFAULT_OUTPUT_TOKENS == 128
    assert w.describe()["output_tokens_defaulted"] == 1
