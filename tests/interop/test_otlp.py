"""--otlp (issue 39): a finished run exported to a real OTLP/HTTP receiver (decoded with
opentelemetry-proto): one span per request, and the GenAI metrics equal to the run's figures."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.proto")

from otlp_receiver import OtlpReceiver

from pytps.results.folder import load_journal, load_results


def _attrs(kvs):
    out = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        value = getattr(kv.value, which)
        out[kv.key] = list(v.string_value for v in value.values) if which == "array_value" else value
    return out


def _run(tmp_path, *flags, env=None):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pytps", "run", "--requests", "12", "--warmup", "2", "--concurrency", "3",
           "--input-tokens", "16", "--output-tokens", "8", "--out", str(out), "--no-store", *flags]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def test_a_run_is_exported_span_per_request_and_its_ttft_metric_is_the_runs(tmp_path):
    with OtlpReceiver() as receiver:
        out, stderr = _run(tmp_path, "--otlp", receiver.url)
    journal = load_journal(out)
    summary = load_results(out)["summary"]
    assert "otlp: 14 spans" in stderr and "warning" not in stderr
    # One span per request (warm-up included, marked), named by the GenAI conventions, its phases as events.
    assert len(receiver.spans) == len(journal) == 14
    by_index = {_attrs(s.attributes)["pytps.request.index"]: s for s in receiver.spans}
    for line in journal:
        span = by_index[line["index"]]
        a = _attrs(span.attributes)
        assert span.name == f"chat {load_results(out)['metadata']['model']}"
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.response.id"] == line["response_id"] and a["pytps.request_id"] == line["request_id"]
        assert a["gen_ai.usage.output_tokens"] == line["output_tokens"] == 8
        assert a["gen_ai.request.max_tokens"] == 8 and a["pytps.warmup"] == line["warmup"]
        events = {e.name: e.time_unix_nano for e in span.events}
        assert {"pytps.sent", "pytps.headers", "gen_ai.first_token", "pytps.last_token", "pytps.end"} <= set(events)
        # TTFT is the first token's event minus the send's, to the nanosecond.
        assert events["gen_ai.first_token"] - events["pytps.sent"] == line["first_output_ns"] - line["t_send_ns"]
        assert span.end_time_unix_nano - span.start_time_unix_nano == line["end_ns"] - line["t_send_ns"]
    # The TTFT metric: count and sum exactly the run's (its measured, successful requests).
    ttft = receiver.metric("gen_ai.server.time_to_first_token")
    (point,) = ttft.histogram.data_points
    measured = [x["ttft_s"] for x in journal if not x["warmup"] and x["ok"]]
    assert point.count == summary["ttft_s"]["count"] == len(measured) == 12
    total = 0.0
    for v in measured:
        total += v
    assert point.sum == total
    assert ttft.unit == "s" and _attrs(point.attributes)["gen_ai.request.model"]
    usage = receiver.metric("gen_ai.client.token.usage")
    by_type = {_attrs(p.attributes)["gen_ai.token.type"]: p for p in usage.histogram.data_points}
    assert by_type["output"].count == 12 and by_type["output"].sum == 12 * 8
    assert receiver.metric("gen_ai.client.operation.duration").histogram.data_points[0].count == 12
    # TPOT needs two reads: a request whose tokens all arrived in one read (a loaded machine coalesces
    # them) has none, in the journal and the summary alike.
    timed = [x for x in journal if not x["warmup"] and x["ok"] and x["tpot_s"] is not None]
    tpot_point = receiver.metric("gen_ai.server.time_per_output_token").histogram.data_points[0]
    assert tpot_point.count == summary["tpot_s"]["count"] == len(timed) >= 1
    (rps,) = receiver.metric("pytps.run.requests").gauge.data_points
    assert rps.as_int == 12 or rps.as_double == 12
    (p50,) = receiver.metric("pytps.run.ttft.p50").gauge.data_points
    assert p50.as_double == summary["ttft_s"]["p50"]
    assert _attrs(receiver.resources[0].attributes)["service.name"] == "pytps"


def test_the_standard_variables_name_the_collector(tmp_path):
    import os

    with OtlpReceiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "bench-a"}
        _, stderr = _run(tmp_path, "--otlp", env=env)
    assert "otlp: 14 spans" in stderr
    assert len(receiver.spans) == 14
    assert _attrs(receiver.resources[0].attributes)["service.name"] == "bench-a"


def test_no_collector_gives_one_warning_and_the_results_intact(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    out, stderr = _run(tmp_path, "--otlp", f"http://127.0.0.1:{port}")
    took = time.monotonic() - t0
    warnings = [line for line in stderr.splitlines() if "OTLP" in line or "otlp" in line]
    assert len(warnings) == 1 and warnings[0].startswith("pytps: warning: OTLP export failed")
    assert f"127.0.0.1:{port}" in warnings[0] and "intact" in warnings[0]
    assert "Traceback" not in stderr
    results = load_results(out)
    assert results["summary"]["requests_ok"] == 12 and len(load_journal(out)) == 14
    assert json.loads((out / "results.json").read_text())["summary"] is not None
    assert took < 60
