"""A small OTLP/HTTP receiver on 127.0.0.1 for the tests: it decodes what arrives with the
published protobufs (opentelemetry-proto) and keeps it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class OtlpReceiver:
    """`with OtlpReceiver() as r:` serves /v1/traces and /v1/metrics; r.spans and r.metrics hold
    the decoded requests' spans and metrics."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.metrics: list[Any] = []
        self.resources: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                assert self.headers["Content-Type"] == "application/x-protobuf"
                if self.path == "/v1/traces":
                    req = ExportTraceServiceRequest.FromString(body)
                    for rs in req.resource_spans:
                        receiver.resources.append(rs.resource)
                        for ss in rs.scope_spans:
                            receiver.spans.extend(ss.spans)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    mreq = ExportMetricsServiceRequest.FromString(body)
                    for rm in mreq.resource_metrics:
                        for sm in rm.scope_metrics:
                            receiver.metrics.extend(sm.metrics)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def metric(self, name: str) -> Any:
        found = [m for m in self.metrics if m.name == name]
        assert len(found) == 1, f"{name}: {len(found)} metrics"
        return found[0]
