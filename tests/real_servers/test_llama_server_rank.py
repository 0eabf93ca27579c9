"""pytps rank on one host (docs/rank.md): two real llama-server processes on the same tiny model,
one with a single slot (-np 1) and one with four (-np 4), ranked in ABBA blocks, the default when
the endpoints share a host, so they never compete for its two cores. At a concurrency of 4 the
single slot queues what the four slots serve at once, and no request is lost on either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from build_llama_server import build
from conftest import serve
from tiny_model import make_model

import pytps

pytestmark = pytest.mark.real_server


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    binary, vocab = build()
    work = tmp_path_factory.mktemp("rank")
    model = make_model(vocab, work / "tiny.gguf")
    (work / "np1").mkdir()
    (work / "np4").mkdir()
    one = serve(binary, model, work / "np1", "-np", "1")
    four = serve(binary, model, work / "np4", "-np", "4")
    try:
        yield next(one), next(four)
    finally:
        one.close()
        four.close()


def test_blocks_rank_np4_over_np1_with_no_request_lost(two_servers: tuple[str, str], tmp_path: Path) -> None:
    np1, np4 = two_servers
    requests = 32
    result = pytps.rank(
        {"np1": np1, "np4": np4}, out=tmp_path / "rank", store=False, input_tokens=32, output_tokens=16,
        requests=requests, concurrency=4, blocks=4, objective="e2e_p50",
    )  # fmt: skip
    data = result.data
    v = result.verdict
    print("\n" + "\n".join(v["lines"]))
    assert data["interleave"] == "blocks"  # one host: blocks by default
    by = {e["name"]: e for e in v["endpoints"]}
    for e in by.values():  # 0 requests lost: every request sent was answered whole
        assert e["requests"] == requests and e["errors"] == 0, e
    assert v["items"] == requests
    assert by["np4"]["rank"] == 1 and by["np1"]["rank"] == 2, v["lines"]
    assert by["np4"]["e2e_p50_s"] < by["np1"]["e2e_p50_s"]
