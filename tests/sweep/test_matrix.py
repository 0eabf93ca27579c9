"""`pytps run -c` / `pytps sweep -c`: a TOML matrix of endpoints x workloads into one results
folder, flags overriding the file, and errors that name the key and its line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MATRIX = """
[defaults]
requests = 4
input_tokens = 16

[slo]
per_request = { ttft = 5 }

[[endpoint]]
name = "fast"
emulator = { ttft_ms = 1, itl_us = 200 }
prices = { input = 1.0, output = 2.0 }

[[endpoint]]
name = "slow"
emulator = { ttft_ms = 5, itl_us = 800 }

[[workload]]
name = "short"
output_tokens = 4
concurrency = 2

[[workload]]
name = "longer"
output_tokens = 12
concurrency = 1
"""


def pytps(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_run_matrix_runs_every_cell_into_one_folder(tmp_path):
    out = tmp_path / "out"
    proc = pytps("run", "-c", str(write(tmp_path, MATRIX)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((out / "matrix.json").read_text())
    assert [(c["endpoint"], c["workload"], c["status"]) for c in index["cells"]] == [
        ("fast", "short", "done"), ("fast", "longer", "done"), ("slow", "short", "done"), ("slow", "longer", "done")]
    for c in index["cells"]:
        results = json.loads((out / c["dir"] / "results.json").read_text())
        assert results["summary"]["requests_ok"] == 4
        assert results["metadata"]["slo"]["per_request_s"] == {"ttft": 5.0}
        assert (results["summary"].get("cost") is not None) == (c["endpoint"] == "fast")
    slow = json.loads((out / "cells/slow/longer/results.json").read_text())["summary"]
    assert slow["ttft_s"]["p50"] > 0.005 and slow["output_tokens_total"] == 4 * 12


def test_flags_override_the_file(tmp_path):
    out = tmp_path / "out"
    proc = pytps("run", "-c", str(write(tmp_path, MATRIX)), "--requests", "2", "--output-tokens", "3",
                 "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    for c in json.loads((out / "matrix.json").read_text())["cells"]:
        s = json.loads((out / c["dir"] / "results.json").read_text())["summary"]
        assert s["requests_ok"] == 2 and s["output_tokens_total"] == 2 * 3


def test_run_matrix_makes_one_run_per_value_of_a_list(tmp_path):
    out = tmp_path / "out"
    text = MATRIX.replace("concurrency = 2", "concurrency = [4, 1, 4]")
    proc = pytps("run", "-c", str(write(tmp_path, text)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((out / "matrix.json").read_text())
    assert index["schema_version"] == 2
    assert [(c["endpoint"], c["workload"], c["values"], c["dir"]) for c in index["cells"]] == [
        ("fast", "short", {"concurrency": 1}, "cells/fast/short/concurrency=1"),
        ("fast", "short", {"concurrency": 4}, "cells/fast/short/concurrency=4"),
        ("fast", "longer", {}, "cells/fast/longer"),
        ("slow", "short", {"concurrency": 1}, "cells/slow/short/concurrency=1"),
        ("slow", "short", {"concurrency": 4}, "cells/slow/short/concurrency=4"),
        ("slow", "longer", {}, "cells/slow/longer"),
    ]
    for c in index["cells"]:
        assert c["status"] == "done"
        results = json.loads((out / c["dir"] / "results.json").read_text())
        assert results["metadata"]["load"]["concurrency"] == c["values"].get("concurrency", 1)
    # A flag replaces the file's list: one run per cell again.
    proc = pytps("run", "-c", str(write(tmp_path, text)), "--concurrency", "2", "--out", str(tmp_path / "o2"))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((tmp_path / "o2" / "matrix.json").read_text())
    assert [c["values"] for c in index["cells"]] == [{}] * 4


def test_the_readme_matrix_runs_as_the_readme_says(tmp_path):
    # README: "(`pytps run -c bench.toml`, ...) This one runs against the built-in emulator:" and a TOML block.
    readme = (ROOT / "README.md").read_text()
    intro = readme.index("`pytps run -c bench.toml`")
    start = readme.index("```toml\n", intro) + len("```toml\n")
    text = readme[start : readme.index("```", start)]
    assert "concurrency = [1, 4, 16]" in text
    (tmp_path / "bench.toml").write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "pytps", "run", "-c", "bench.toml"], capture_output=True, text=True, timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = next(tmp_path.glob("results/*/matrix.json")).parent
    index = json.loads((out / "matrix.json").read_text())
    assert [(c["workload"], c["values"], c["status"]) for c in index["cells"]] == [
        ("chat", {"concurrency": n}, "done") for n in (1, 4, 16)]
    for c in index["cells"]:
        summary = json.loads((out / c["dir"] / "results.json").read_text())["summary"]
        assert summary["requests_ok"] == 32 and summary["output_tokens_total"] == 32 * 64
    assert "emulator-fast x chat concurrency=16: p50 TTFT" in proc.stdout


def test_sweep_matrix_sweeps_the_list_valued_keys(tmp_path):
    out = tmp_path / "out"
    text = MATRIX.replace("concurrency = 2", "concurrency = [1, 2]").replace("concurrency = 1\n", "concurrency = [1, 3]\n")
    proc = pytps("sweep", "-c", str(write(tmp_path, text)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((out / "matrix.json").read_text())
    assert index["kind"] == "sweep" and len(index["cells"]) == 4
    sweep = json.loads((out / "cells/slow/longer/sweep.json").read_text())
    assert sweep["axes"] == {"concurrency": [1, 3]} and [c["status"] for c in sweep["cells"]] == ["done", "done"]


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("[[endpoint]]\nname = 'e'\nmodle = 'x'\n[[workload]]\nname = 'w'\n", 3, "unknown key 'modle'"),
        ("[[endpoint]]\nname = 'e'\n[[workload]]\nname = 'w'\nrequests = 0\n", 5, "requests must be an integer >= 1"),
        ("[[endpoint]]\nname = 'e'\n[[workload]]\nname = 'w'\n\ninput_tokens = 'ten'\n", 6, "input_tokens"),
        ("[[endpoint]]\nname = 'e'\n[[workload]]\nname = 'w'\nconcurrency = [1, 0]\n", 5, "concurrency"),
        ("[defaults]\nrequestz = 3\n[[endpoint]]\n[[workload]]\n", 2, "unknown key 'requestz'"),
        ("[[endpoint]]\nname = 'e'\nprices = { input = 1, outptu = 2 }\n[[workload]]\n", 3, "unknown key 'outptu'"),
    ],
)
def test_errors_name_the_key_and_its_line(tmp_path, text, line, needle):
    path = write(tmp_path, text)
    proc = pytps("run", "-c", str(path), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith(f"pytps: error: {path}:{line}: ") and needle in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("# a matrix\n\nmodel = 'x'\n[[endpoint]]\n[[workload]]\n", 3, "unknown table or key 'model'"),
        ("[[endpoint]]\n[[workload]]\n[unknown]\nx = 1\n", 3, "unknown table or key 'unknown'"),
        ("\n\n  requests.count = 3\n[[endpoint]]\n[[workload]]\n", 3, "unknown table or key 'requests'"),
        ("\nendpoint = 'http://x'\n[[workload]]\n", 2, "endpoint must be written as [[endpoint]] tables"),
    ],
)
def test_a_top_level_key_is_reported_at_its_own_line(tmp_path, text, line, needle):
    from pytps.errors import ConfigError
    from pytps.sweep.matrix import Matrix

    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        Matrix(path)
    assert str(exc.value).startswith(f"{path}:{line}: ") and needle in str(exc.value), exc.value


def test_the_shipped_example_parses_and_names_its_cells():
    from pytps.sweep.matrix import Matrix

    m = Matrix(ROOT / "examples" / "bench.toml")
    assert [(c.endpoint, c.workload) for c in m.cells] == [
        ("emulator-fast", "chat"), ("emulator-fast", "long-prompt"),
        ("emulator-slow", "chat"), ("emulator-slow", "long-prompt")]
    assert all(c.base_url is None and c.emulator for c in m.cells)
