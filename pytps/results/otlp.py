"""A saved run exported over OTLP/HTTP to an OpenTelemetry collector (docs/interop.md): one span
per request with its phases as events, the GenAI semantic conventions' client metrics, and
pytps's own run figures under `pytps.run.*`.

It reads only the results folder (results.json and the journal), after the timing ended: nothing
here is ever on a run's hot path. It needs the `otlp` extra (opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-http), imported on use.

Endpoints and options: an explicit base URL (`--otlp URL`: its /v1/traces and /v1/metrics), else
the exporter's own standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
..._HEADERS, ..._TIMEOUT, ..._CERTIFICATE, ..._COMPRESSION), else http://localhost:4318.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pytps.results.folder import load_journal, load_results

#: The namespace of pytps's own figures, as metric and attribute names (docs/interop.md).
NAMESPACE = "pytps"
#: Spans sent per OTLP request.
SPAN_BATCH = 512
#: Seconds one export may take (with the exporter's retries) when OTEL_EXPORTER_OTLP_TIMEOUT is not set.
DEFAULT_TIMEOUT_S = 5.0

# The GenAI semantic conventions' histogram bucket advisories (semconv gen-ai metrics).
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
TOKEN_BUCKETS = tuple(float(4**i) for i in range(14))

#: The GenAI histograms recorded per request, in this order: name -> (unit, description, buckets).
HISTOGRAMS = {
    "gen_ai.client.operation.duration": ("s", "GenAI operation duration", DURATION_BUCKETS),
    "gen_ai.server.time_to_first_token": ("s", "Time to generate first token", TTFT_BUCKETS),
    "gen_ai.server.time_per_output_token": ("s", "Time per output token after the first", TPOT_BUCKETS),
    "gen_ai.client.token.usage": ("{token}", "Number of input and output tokens used", TOKEN_BUCKETS),
}

#: pytps's API dialect -> (gen_ai.operation.name, gen_ai.provider.name): the protocol spoken,
#: since pytps cannot know whose server answered it.
OPERATIONS = {
    "openai-chat": ("chat", "openai"),
    "openai-completions": ("text_completion", "openai"),
    "openai-responses": ("chat", "openai"),
    "openai-embeddings": ("embeddings", "openai"),
    "anthropic": ("chat", "anthropic"),
    "ollama-chat": ("chat", "ollama"),
    "ollama-generate": ("text_completion", "ollama"),
    "ollama-embed": ("embeddings", "ollama"),
    "rerank": ("rerank", "openai"),
}

#: Span events: a journal time -> the event's name (the request's phases, in order).
PHASE_EVENTS = (
    ("t_sched_ns", "pytps.scheduled"),
    ("t_send_ns", "pytps.sent"),
    ("t_headers_ns", "pytps.headers"),
    ("first_output_ns", "gen_ai.first_token"),
    ("first_answer_ns", "pytps.first_answer"),
    ("last_output_ns", "pytps.last_token"),
    ("end_ns", "pytps.end"),
)

#: pytps's run figures exported as gauges: metric name -> (summary key or (distribution, stat), unit).
RUN_GAUGES: dict[str, tuple[Any, str]] = {
    "pytps.run.requests": ("requests_total", "{request}"),
    "pytps.run.requests_ok": ("requests_ok", "{request}"),
    "pytps.run.error_rate": ("error_rate", "1"),
    "pytps.run.output_throughput": ("output_throughput_tps", "{token}/s"),
    "pytps.run.request_throughput": ("request_throughput_rps", "{request}/s"),
    "pytps.run.goodput": ("goodput_rps", "{request}/s"),
    "pytps.run.token_mismatches": ("token_mismatches", "{request}"),
    "pytps.run.ttft.p50": (("ttft_s", "p50"), "s"),
    "pytps.run.ttft.p99": (("ttft_s", "p99"), "s"),
    "pytps.run.tpot.p50": (("tpot_s", "p50"), "s"),
    "pytps.run.itl.p50": (("itl_s", "p50"), "s"),
    "pytps.run.itl.p99": (("itl_s", "p99"), "s"),
    "pytps.run.e2e.p50": (("e2e_s", "p50"), "s"),
    "pytps.run.user_tps.p50": (("user_tps", "p50"), "{token}/s"),
}


@dataclass(frozen=True)
class OtlpExport:
    """What an export delivered: spans and metric points sent, and the error (None: all delivered)."""

    spans: int
    metrics: int
    error: str | None = None


class OtlpUnavailable(ImportError):
    """The `otlp` extra is not installed."""


def _require() -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        raise OtlpUnavailable(
            "--otlp needs OpenTelemetry's SDK and OTLP/HTTP exporter: pip install 'pytps[otlp]'"
        ) from None


def _signal_url(base: str, signal: str) -> str:
    url = urlsplit(base)
    path = url.path.rstrip("/") + f"/v1/{signal}"
    return urlunsplit((url.scheme, url.netloc, path, "", ""))


def shown_url(base: str | None) -> str:
    """The collector's URL as a message may show it: no credentials or query."""
    if not base:
        return (
            os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") and shown_url(os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"])
        ) or "http://localhost:4318 (the OTLP default)"
    url = urlsplit(base)
    netloc = url.hostname or ""
    if url.port:
        netloc += f":{url.port}"
    return urlunsplit((url.scheme, netloc, url.path, "", ""))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters log each failed attempt; pytps says it once instead (OtlpExport.error)."""
    logger = logging.getLogger("opentelemetry")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.propagate = propagate


def _timeout_s() -> float:
    for name in ("OTEL_EXPORTER_OTLP_TIMEOUT",):
        if os.environ.get(name):
            return float(os.environ[name]) / 1000.0  # the variable is in milliseconds
    return DEFAULT_TIMEOUT_S


def _common(metadata: dict[str, Any]) -> dict[str, Any]:
    """The attributes every span and metric point carries (GenAI semantic conventions)."""
    operation, provider = OPERATIONS.get(str(metadata.get("api")), ("chat", "openai"))
    endpoint = metadata.get("endpoint") or {}
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": metadata.get("model") or "",
        "server.address": endpoint.get("host") or "",
    }
    if endpoint.get("port") is not None:
        attrs["server.port"] = int(endpoint["port"])
    return attrs


def _spans(tracer: Any, metadata: dict[str, Any], journal: list[dict[str, Any]]) -> int:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    offset = int((metadata.get("clock") or {}).get("wall_minus_monotonic_ns") or 0)
    common = _common(metadata)
    name = f"{common['gen_ai.operation.name']} {common['gen_ai.request.model']}".strip()
    n = 0
    for line in journal:
        start = line.get("t_send_ns")
        if start is None:
            continue
        end = line.get("end_ns") or line.get("t_done_ns") or start
        attrs = dict(common)
        attrs.update(_request_attributes(line))
        span = tracer.start_span(name, kind=SpanKind.CLIENT, start_time=start + offset, attributes=attrs)
        for key, event in PHASE_EVENTS:
            t = line.get(key)
            if t is not None:
                span.add_event(event, timestamp=int(t) + offset)
        if not line.get("ok"):
            span.set_status(Status(StatusCode.ERROR, line.get("error_detail") or line.get("error") or "error"))
        span.end(end_time=max(int(end), int(start)) + offset)
        n += 1
    return n


def _request_attributes(line: dict[str, Any]) -> dict[str, Any]:
    """A request's span attributes: the GenAI conventions' where they have a name, else pytps.*."""
    out: dict[str, Any] = {
        f"{NAMESPACE}.request.index": int(line["index"]),
        f"{NAMESPACE}.warmup": bool(line["warmup"]),
    }
    pairs = (
        ("gen_ai.response.id", line.get("response_id")),
        ("gen_ai.request.max_tokens", line.get("tokens_asked")),
        ("gen_ai.usage.input_tokens", line.get("prompt_tokens")),
        ("gen_ai.usage.output_tokens", line.get("output_tokens") if line.get("ok") else None),
        ("http.response.status_code", line.get("status")),
        ("error.type", line.get("error")),
        (f"{NAMESPACE}.request_id", line.get("request_id")),
        (f"{NAMESPACE}.sent_request_id", line.get("sent_request_id")),
        (f"{NAMESPACE}.token_source", line.get("token_source")),
        (f"{NAMESPACE}.tokens_streamed", line.get("tokens_streamed")),
        (f"{NAMESPACE}.tokens_billed", line.get("tokens_billed")),
    )
    out.update({k: v for k, v in pairs if v is not None})
    if line.get("finish_reason"):
        out["gen_ai.response.finish_reasons"] = [str(line["finish_reason"])]
    for key in ("ttft_s", "tpot_s", "e2e_s", "decode_tps", "user_tps"):
        if line.get(key) is not None:
            out[f"{NAMESPACE}.{key}"] = float(line[key])
    return out


def _metrics(meter: Any, metadata: dict[str, Any], summary: dict[str, Any], journal: list[dict[str, Any]]) -> None:
    common = _common(metadata)
    duration, ttft, tpot, usage = (
        meter.create_histogram(name, unit=unit, description=text, explicit_bucket_boundaries_advisory=buckets)
        for name, (unit, text, buckets) in HISTOGRAMS.items()
    )
    # The measured requests only (no warm-up), as the summary counts them; in journal order, so a
    # histogram's sum is the journal's values added in that order.
    for line in journal:
        if line.get("warmup"):
            continue
        attrs = dict(common)
        if not line.get("ok"):
            attrs["error.type"] = str(line.get("error") or "error")
            if line.get("e2e_s") is not None:
                duration.record(float(line["e2e_s"]), attrs)
            continue
        if line.get("e2e_s") is not None:
            duration.record(float(line["e2e_s"]), attrs)
        if line.get("ttft_s") is not None:
            ttft.record(float(line["ttft_s"]), attrs)
        if line.get("tpot_s") is not None:
            tpot.record(float(line["tpot_s"]), attrs)
        if line.get("prompt_tokens") is not None:
            usage.record(int(line["prompt_tokens"]), {**attrs, "gen_ai.token.type": "input"})
        usage.record(int(line.get("output_tokens") or 0), {**attrs, "gen_ai.token.type": "output"})
    for name, (key, unit) in RUN_GAUGES.items():
        value = summary.get(key[0], {}).get(key[1]) if isinstance(key, tuple) else summary.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            meter.create_gauge(name, unit=unit).set(value, common)


def export_folder(directory: str | Path, endpoint: str | None = None) -> OtlpExport:
    """Exports the run saved in `directory` (its results.json and journal) over OTLP/HTTP.
    endpoint: the collector's base URL (its /v1/traces and /v1/metrics), or None for the
    OTEL_EXPORTER_OTLP_* variables. Never raises for the collector's sake: a failed delivery is
    OtlpExport.error, one line; raises OtlpUnavailable without the `otlp` extra."""
    _require()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    from pytps import __version__

    directory = Path(directory)
    results = load_results(directory)
    metadata, summary = results["metadata"], results.get("summary") or {}
    journal = load_journal(directory)
    resource = Resource.create(
        {
            "service.name": os.environ.get("OTEL_SERVICE_NAME") or "pytps",
            "service.version": __version__,
            f"{NAMESPACE}.results_dir": directory.name,
            f"{NAMESPACE}.date_utc": str(metadata.get("date_utc") or ""),
            f"{NAMESPACE}.transport": str(metadata.get("transport") or ""),
        }
    )
    # Spans and points are built in memory first, then sent by the exporters directly, so each
    # delivery's result is known (a processor would swallow it).
    collected = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource, sampler=ALWAYS_ON)
    tracer_provider.add_span_processor(SimpleSpanProcessor(collected))
    spans = _spans(tracer_provider.get_tracer("pytps", __version__), metadata, journal)
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    _metrics(meter_provider.get_meter("pytps", __version__), metadata, summary, journal)
    data = reader.get_metrics_data()
    points = sum(
        len(m.data.data_points) for rm in (data.resource_metrics if data else []) for sm in rm.scope_metrics
        for m in sm.metrics
    )  # fmt: skip
    timeout = _timeout_s()
    where = shown_url(endpoint)
    error: str | None = None
    with _quiet():
        span_exporter = OTLPSpanExporter(
            endpoint=_signal_url(endpoint, "traces") if endpoint else None, timeout=timeout
        )
        metric_exporter = OTLPMetricExporter(
            endpoint=_signal_url(endpoint, "metrics") if endpoint else None, timeout=timeout
        )
        try:
            finished = list(collected.get_finished_spans())
            for i in range(0, len(finished), SPAN_BATCH):
                if span_exporter.export(finished[i : i + SPAN_BATCH]) is not SpanExportResult.SUCCESS:
                    error = f"the collector at {where} did not take the spans"
                    break
            sent = error is None and data is not None and metric_exporter.export(data, timeout_millis=timeout * 1000)
            if error is None and data is not None and sent is not MetricExportResult.SUCCESS:
                error = f"the collector at {where} did not take the metrics"
        finally:
            # Typed as plain callables: some exporters' shutdown is untyped in opentelemetry, and
            # mypy's verdict on calling it then depends on its cache (a cold CI run flagged it).
            closers: list[Callable[[], object]] = [
                span_exporter.shutdown,
                metric_exporter.shutdown,
                tracer_provider.shutdown,
                meter_provider.shutdown,
            ]
            for close in closers:
                close()
    if error is not None:
        return OtlpExport(0, 0, error)
    return OtlpExport(spans, points)
