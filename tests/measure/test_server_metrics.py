"""Server metrics from scrapes: the parser, the engine tables, Prometheus's histogram_quantile,
counters across a reset, the steady window and the derived figures, on hand-made scrapes whose
answers are known."""

from __future__ import annotations

import json
import math

import pytest

from pytps.measure.server_metrics import ParseError, Scrape, parse_exposition
from pytps.measure.server_metrics.derived import integrate_power
from pytps.measure.server_metrics.engines import ENGINES, lookup
from pytps.measure.server_metrics.histogram import histogram_quantile
from pytps.measure.server_metrics.series import increase
from pytps.measure.server_metrics.summary import summarize

VLLM = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{model_name="m"}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name="m"}} {waiting}
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{model_name="m"}} {gen}
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{model_name="m"}} {drafts}
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{model_name="m"}} {draft_tokens}
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{model_name="m"}} {accepted}
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{le="0.1",model_name="m"}} {b1}
vllm:time_to_first_token_seconds_bucket{{le="0.5",model_name="m"}} {b2}
vllm:time_to_first_token_seconds_bucket{{le="+Inf",model_name="m"}} {b3}
vllm:time_to_first_token_seconds_count{{model_name="m"}} {b3}
vllm:time_to_first_token_seconds_sum{{model_name="m"}} {tsum}
# TYPE my_own_thing gauge
my_own_thing{{shard="a"}} 2
my_own_thing{{shard="b"}} 3
"""


def _vllm(**kw: float) -> str:
    base = dict(running=0, waiting=0, gen=0, drafts=0, draft_tokens=0, accepted=0, b1=0, b2=0, b3=0, tsum=0.0)
    base.update(kw)
    return VLLM.format(**base)


def test_parse_keeps_every_family_label_and_sample():
    types, samples = parse_exposition(_vllm(running=3, gen=7))
    assert types["vllm:num_requests_running"] == "gauge"
    assert types["vllm:generation_tokens"] == "counter"  # the parser names counters without _total
    assert types["vllm:time_to_first_token_seconds"] == "histogram"
    assert ("vllm:generation_tokens_total", {"model_name": "m"}, 7.0) in samples
    assert ("my_own_thing", {"shard": "b"}, 3.0) in samples


def test_openmetrics_is_parsed_when_the_server_says_so():
    text = "# TYPE x counter\nx_total 5\n# EOF\n"
    types, samples = parse_exposition(text, "application/openmetrics-text; version=1.0.0")
    assert types == {"x": "counter"} and samples == [("x_total", {}, 5.0)]


@pytest.mark.parametrize("body", ["<html><body>Not found</body></html>", '{"status": "ok"}'])
def test_what_is_not_prometheus_text_is_a_parse_error(body):
    with pytest.raises(ParseError, match="not Prometheus text"):
        parse_exposition(body)


def test_every_engine_table_names_a_known_common_name():
    from pytps.measure.server_metrics.engines import COMMON

    for table in ENGINES.values():
        for entry in table.values():
            assert entry.common in COMMON
    assert lookup("llamacpp:tokens_predicted_total", {})[1].common == "generation_tokens"
    assert lookup("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", {"gpu": "0"})[1].scale == 1e-3
    # Triton's TensorRT-LLM backend: one family, told apart by a label
    assert lookup("nv_trt_llm_request_metrics", {"request_type": "waiting"})[1].common == "requests_waiting"
    assert lookup("nv_trt_llm_request_metrics", {"request_type": "max"}) is None


def test_histogram_quantile_is_prometheus_s():
    # 10 observations: 4 in (0, 0.1], 4 in (0.1, 0.5], 2 above.
    b = {0.1: 4.0, 0.5: 8.0, math.inf: 10.0}
    assert histogram_quantile(0.2, b) == pytest.approx(0.05)  # rank 2 of 4 in the first bucket
    assert histogram_quantile(0.6, b) == pytest.approx(0.1 + 0.4 * 2 / 4)
    assert histogram_quantile(0.99, b) == 0.5  # in +Inf: the largest finite bound
    assert histogram_quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None
    assert histogram_quantile(0.5, {0.1: 1.0}) is None  # no +Inf bucket


def test_counter_increase_counts_through_a_reset():
    assert increase([10, 15, 20]) == 10
    assert increase([10, 15, 3, 8]) == 5 + 3 + 5  # a restart: counted from zero again
    assert increase([math.nan, 4, math.nan, 6]) == 2


def test_trapezoid_energy_and_its_bound():
    t = [0, 1_000_000_000, 2_000_000_000]
    energy, bound = integrate_power(t, [100.0, 200.0, 200.0])
    assert energy == pytest.approx(150 + 200)
    assert bound == pytest.approx(50)  # h |dP| / 2 over the one step that moved


def _write(tmp_path, scrapes):
    path = tmp_path / "server_metrics.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for s in scrapes:
            f.write(json.dumps(s.as_json()) + "\n")
        f.write('{"torn": ')  # a torn last line is skipped
    return path


def _scrape(t_s: float, text: str, url: str = "http://x/metrics", width_ns: int = 2000) -> Scrape:
    t = int(t_s * 1e9)
    types, samples = parse_exposition(text)
    return Scrape(url, t - width_ns // 2, t + width_ns // 2, types, samples)


def test_summary_figures(tmp_path):
    scrapes = [
        _scrape(0, _vllm(running=0, gen=100, b1=1, b2=1, b3=1, tsum=0.05)),
        _scrape(1, _vllm(running=4, waiting=1, gen=200, drafts=10, draft_tokens=40, accepted=20)),
        _scrape(2, _vllm(running=4, waiting=3, gen=400, drafts=20, draft_tokens=80, accepted=50)),
        _scrape(3, _vllm(running=0, gen=500, drafts=30, draft_tokens=120, accepted=60, b1=5, b2=9, b3=11, tsum=3.0)),
        Scrape("http://x/metrics", 4, 4, error="HTTP 404"),
    ]
    path = _write(tmp_path, scrapes)
    steady = [(int(0.5e9), int(2.5e9))]
    client = {"output_tokens": 400, "steady_output_throughput_tps": 200.0, "tokens_per_event": 1.0}
    sm = summarize(path, steady, client)
    (src,) = sm["sources"]
    assert src["engines"] == ["vllm"] and src["scrapes"] == 4 and src["failed"] == 1
    assert src["uncertainty_ms"]["max"] == pytest.approx(0.001)
    running = src["common"]["requests_running"]
    assert running["steady"] == {"mean": 4.0, "p50": 4.0, "max": 4.0, "scrapes": 2}
    assert running["run"]["mean"] == 2.0
    gen = src["common"]["generation_tokens"]
    assert gen["run"]["delta"] == 400 and gen["run"]["rate_per_s"] == pytest.approx(400 / 3)
    assert gen["steady"]["delta"] == 200 and gen["steady"]["span_s"] == pytest.approx(1.0)
    ttft = src["common"]["ttft_s"]
    assert ttft["count"] == 10 and ttft["mean"] == pytest.approx(2.95 / 10)
    assert ttft["p50"] == pytest.approx(histogram_quantile(0.5, {0.1: 4, 0.5: 8, math.inf: 10}))
    assert src["raw"]["my_own_thing"]["run"]["mean"] == 5.0  # label sets added up, kept raw
    spec = sm["spec_decode"]
    assert spec["acceptance_rate"] == 0.5 and spec["mean_accepted_length"] == 2.0
    cross = sm["token_cross_check"]
    assert cross["equal"] and cross["difference"] == 0
    assert sm["queueing"]["requests_waiting"]["mean"] == 2.0
    assert sm["joules_per_output_token"] is None  # no power, no energy


def test_energy_counter_wins_over_power(tmp_path):
    def dcgm(mj: float, w: float) -> str:
        return (
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0"}} {mj}\n'
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="1"}} {mj}\n'
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
            f'DCGM_FI_DEV_POWER_USAGE{{gpu="0"}} {w}\n'
        )

    url = "http://x:9400/metrics"
    path = _write(tmp_path, [_scrape(i, dcgm(1e6 + i * 150e3, 150), url) for i in range(5)])
    sm = summarize(path, [(int(0.5e9), int(3.5e9))], {"output_tokens": 100, "steady_output_throughput_tps": 25.0})
    assert sm["energy"]["source"] == "energy counter"
    assert sm["energy"]["energy_j"] == pytest.approx(2 * 4 * 150)  # two GPUs, mJ -> J
    assert sm["joules_per_output_token"] == pytest.approx(12.0)
    assert sm["output_tokens_per_joule"] == pytest.approx(1 / 12)
    assert sm["steady_joules_per_output_token"] == pytest.approx(300 / 25)
