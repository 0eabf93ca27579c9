"""--server-metrics against a real llama.cpp `llama-server --metrics` (docs/server-metrics.md), on
every transport: the delta of `llamacpp:tokens_predicted_total` over a run is pytps's output
tokens exactly, `llamacpp:requests_processing` never exceeds the run's concurrency, and the
scrapes are in the results folder. With a draft model (`-md`), the speculative-decoding figures
are the server's own counters' deltas. Tier `real_server` (.ci/steps/45-llama-server.sh)."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytps
from pytps.measure.server_metrics import parse_exposition
from pytps.transport import TRANSPORT_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_llama_server import build
from conftest import serve
from tiny_model import make_model

pytestmark = pytest.mark.real_server

TRANSPORTS = [t for t in TRANSPORT_NAMES if t != "auto"]
CONCURRENCY = 4


def counters(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        _, samples = parse_exposition(r.read().decode())
    return {name: value for name, labels, value in samples if not labels}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_generation_token_delta_is_pytps_output_tokens(llama_server, transport, tmp_path):
    result = pytps.run(
        llama_server, api="openai-chat", input_tokens=32, output_tokens=48, requests=12,
        concurrency=CONCURRENCY, transport=transport, out=tmp_path / "r", progress=None, store=False,
        server_metrics=True, server_metrics_interval=0.1,
    )  # fmt: skip
    assert result.summary["errors"] == {}
    sm = result.summary["server_metrics"]
    (src,) = sm["sources"]
    assert src["engines"] == ["llama.cpp"] and src["failed"] == 0 and src["scrapes"] >= 2
    cross = sm["token_cross_check"]
    print(f"\n[{transport}] server tokens_predicted delta {cross['server_generation_tokens']:.0f}, "
          f"pytps output tokens {cross['client_output_tokens']}, scrapes {src['scrapes']}, "
          f"uncertainty p50 {src['uncertainty_ms']['p50']:.3f} ms")  # fmt: skip
    assert cross["equal"], cross
    assert cross["client_output_tokens"] == result.summary["output_tokens_total"] == 12 * 48
    running = src["common"]["requests_running"]
    assert running["metric"] == "llamacpp:requests_processing"
    assert 0 < running["run"]["max"] <= CONCURRENCY
    with open(result.out_dir / "server_metrics.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert all(line["error"] is None for line in lines)
    assert all(line["samples"][0][2] >= 0 for line in lines)
    assert max(v for line in lines for n, _, v in line["samples"] if n == "llamacpp:requests_processing") <= CONCURRENCY


@pytest.fixture(scope="module")
def speculative_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server with a draft model: the tiny model again (same vocabulary, same weights), so that
    at temperature 0 the drafts are accepted and the acceptance figures are not all zeros."""
    binary, vocab = build()
    work = tmp_path_factory.mktemp("llama-spec")
    model = make_model(vocab, work / "tiny.gguf")
    draft = make_model(vocab, work / "draft.gguf")
    spec = ["-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", "4", "--spec-draft-n-min", "1"]
    yield from serve(binary, model, work, *spec)


def test_speculative_decoding_figures_are_the_servers_counters(speculative_server, tmp_path):
    before = counters(speculative_server)
    result = pytps.run(
        speculative_server, api="openai-chat", input_tokens=32, output_tokens=64, requests=4, concurrency=1,
        out=tmp_path / "r", progress=None, store=False, server_metrics=True, server_metrics_interval=0.2,
        extra_body={"temperature": 0},
    )  # fmt: skip
    after = counters(speculative_server)
    spec = result.summary["server_metrics"]["spec_decode"]
    delta = {k: after[k] - before[k] for k in after if k.startswith("llamacpp:spec_decode")}
    print(f"\nspeculative decoding: {spec}")
    assert spec is not None, f"the server counted no drafts: {delta}"
    assert spec["draft_tokens"] == delta["llamacpp:spec_decode_num_draft_tokens_total"] > 0
    assert spec["accepted_tokens"] == delta["llamacpp:spec_decode_num_accepted_tokens_total"]
    assert spec["acceptance_rate"] == pytest.approx(spec["accepted_tokens"] / spec["draft_tokens"])
    assert spec["drafts"] == delta["llamacpp:spec_decode_num_drafts_total"]
    assert spec["mean_accepted_length"] == pytest.approx(spec["accepted_tokens"] / spec["drafts"])
    assert spec["acceptance_rate"] > 0.5  # the draft is the model itself
    assert result.summary["server_metrics"]["token_cross_check"]["equal"]
