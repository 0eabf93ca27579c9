"""pytps rank on one host (docs/rank.md): two real llama-server processes on the same tiny model,
one with a single slot (-np 1) and one with four (-np 4), ranked in ABBA blocks, the default when
the endpoints share a host, so they never compete for its two cores: the turns never overlap, and
no request is lost on either. Which one wins is the host's to say (a quiet machine: -np 4; on a
loaded 2-core one, four decoding slots can lose to one), so it is printed, not asserted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from build_llama_server import build
from conftest import serve
from tiny_model import make_model

import pytps
from pytps.results.folder import load_journal

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


def test_blocks_rank_two_servers_on_one_host_with_no_request_lost(two_servers: tuple[str, str], tmp_path: Path) -> None:
    np1, np4 = two_servers
    requests, blocks = 48, 4
    result = pytps.rank(
        {"np1": np1, "np4": np4}, out=tmp_path / "rank", store=False, input_tokens=32, output_tokens=16,
        requests=requests, concurrency=4, blocks=blocks, objective="e2e_p50",
    )  # fmt: skip
    data, v = result.data, result.verdict
    print("\n" + "\n".join(v["lines"]))
    assert data["interleave"] == "blocks"  # one host: blocks by default
    by = {e["name"]: e for e in v["endpoints"]}
    for e in by.values():  # 0 requests lost: every request sent was answered whole, and ranked
        assert e["requests"] == requests and e["errors"] == 0 and e["rank"] is not None, e
    assert v["items"] == requests
    # The turns never overlap: in each block one server has finished before the other starts, so
    # the two never compete for the host's cores.
    size = requests // blocks
    spans: dict[str, dict[int, tuple[int, int]]] = {}
    for name in ("np1", "np4"):
        lines = load_journal(tmp_path / "rank" / name)
        assert len(lines) == requests and all(line["ok"] and line["output_tokens"] == 16 for line in lines)
        for k in range(blocks):
            mine = [line for line in lines if line["index"] // size == k]
            spans.setdefault(name, {})[k] = (min(x["t_send_ns"] for x in mine), max(x["t_done_ns"] for x in mine))
    for k in range(blocks):
        (a0, a1), (b0, b1) = spans["np1"][k], spans["np4"][k]
        assert a1 <= b0 or b1 <= a0, f"block {k}: the two servers' turns overlap"
    first = "np1" if spans["np1"][0][0] < spans["np4"][0][0] else "np4"
    second = "np4" if first == "np1" else "np1"
    order = [first if spans[first][k][0] < spans[second][k][0] else second for k in range(blocks)]
    assert order == [first, second, first, second], order  # AB BA AB BA: who opens each block alternates
