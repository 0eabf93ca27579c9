"""Measurement: what a transport recorded (`records`), every per-request formula (`metrics`), the
server's own timings (`server_timings`), the run's summary (`summary`, `workload_figures`), which
requests were useful (`slo`) and what they cost (`cost`), and the metric catalogue (`catalogue`).

It reads records and nothing else: no transport, no run, no files."""
