"""The run: its configuration (`config`), load plan (`schedule`), the send loop (`loop`), the
unmeasured requests around it (`endpoint`), the event loop it runs on (`event_loop`), the
multi-turn session driver (`sessions`) and its metadata (`metadata`; the results folder is
written by `pytps.results.output`).

It uses transports, workloads, measurement and results; calibrate/, scale/, embed/, report/ and
the CLI use it, and it never imports them."""
