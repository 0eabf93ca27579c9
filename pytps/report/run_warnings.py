"""hyperfine-style warnings: something specific that makes the numbers less trustworthy, and a hint."""

from __future__ import annotations

from typing import Any


def collect(results: dict[str, Any]) -> list[str]:
    meta = results.get("metadata", {})
    summary = results.get("summary") or {}
    out: list[str] = []
    ok = summary.get("requests_ok") or 0
    if meta.get("interrupted"):
        out.append("The run was interrupted: the figures cover only the requests that finished.")
    if meta.get("stopped_reason"):
        out.append(f"The run stopped early: {meta['stopped_reason']}.")
    if 0 < ok < 30:
        out.append(
            f"Only {ok} successful requests: p99 and the confidence intervals are rough. "
            "Hint: use --requests 100 or more."
        )
    if ok == 0 and summary.get("requests_total"):
        out.append("No request succeeded: see the error counts above, and requests.jsonl for details.")
    first, p50 = summary.get("first_ttft_s"), (summary.get("ttft_s") or {}).get("p50")
    if ok >= 5 and first is not None and p50 and first > 3 * p50 and first - p50 > 0.005:
        out.append(
            f"The first request's TTFT ({first * 1e3:.1f} ms) was {first / p50:.0f}x the "
            "median: a cold start (model load, cache warm-up, connection setup). "
            "Hint: use --warmup 1 (or more) to leave it out."
        )
    tpe = summary.get("tokens_per_event")
    if tpe is not None and abs(tpe - 1.0) > 0.02:
        out.append(
            f"The server sent {tpe:.2f} tokens per output event on average: per-event timings are per "
            "chunk, and ITL spreads each gap over its tokens (docs/metrics.md)."
        )
    if summary.get("token_source") == "events":
        out.append(
            "The server reported no usage: token counts are output events, which are not tokens when "
            "chunks carry several. Hint: let the server report usage, or pass --tokenizer."
        )
    stopped = (meta.get("prompt_calibration") or {}).get("stopped")
    if stopped:
        out.append(
            f"Prompt sizes may be off: {stopped}. Hint: check what the server counts as prompt_tokens "
            "(a server that truncates to its context reports its cap)."
        )
    implausible = summary.get("usage_implausible")
    if implausible:
        out.append(
            f"{implausible} request(s) reported implausible usage (a count beyond what arrived, "
            "docs/metrics.md): their figures use the events instead, and their cost leaves the count out."
        )
    mismatches = summary.get("token_mismatches")
    if mismatches:
        largest = summary.get("token_mismatch_max")
        out.append(
            f"{mismatches} of {ok} successful request(s) were billed a different number of output tokens than "
            f"the stream carried (largest: {largest:+d} billed - streamed): the figures use the billed counts. "
            "Hint: compare the journal's tokens_streamed and tokens_billed (docs/metrics.md, Token agreement)."
        )
    if meta.get("usage_note"):
        out.append(f"Note: {meta['usage_note']}.")
    rate = summary.get("error_rate")
    if rate:
        out.append(f"{rate:.1%} of requests failed; they are left out of the latency figures.")
    scale = meta.get("scale") or {}
    for failure in scale.get("failures") or []:
        out.append(
            f"Worker {failure['worker']} failed: {failure['error']}. Its {failure.get('requests_kept', 0)} "
            "finished requests are in the results; the requests it had yet to send were not sent."
        )
    # A scaled run: each worker's threads (their sums over the run's wall time would mislead).
    cpus = [w["client_cpu"] for w in scale.get("per_worker") or [] if w.get("client_cpu")] if scale else []
    for cpu in cpus or [meta.get("client_cpu") or {}]:
        wall = cpu.get("wall_s") or 0.0
        if wall <= 1.0:
            continue
        # A thread busy most of the run answers late: its stamps (asyncio, httpx: the loop stamps
        # reads) or its sends (rate mode) drift from the wire. 0.7: well before it saturates.
        for key, name, hint in (
            (
                "loop_thread_s",
                "event loop",
                "use --transport native (reads are stamped off the loop), or run fewer connections per process",
            ),
            ("engine_thread_s", "native engine thread", "spread the load over more processes (--workers N)"),
        ):
            busy = (cpu.get(key) or 0.0) / wall
            if busy > 0.7:
                out.append(
                    f"The client's {name} was busy {busy:.0%} of the run: the client itself may have "
                    f"delayed stamps or sends. Hint: {hint}."
                )
    env = results.get("envelope") or {}
    if env.get("inside") is False:
        events, conc = env.get("run_events_per_s"), env.get("run_concurrency")
        where = f"{events:,.0f} events/s per stream x {conc:,.0f} concurrent" if events and conc else "This load"
        out.append(
            f"Outside the trust envelope: {where} is beyond what pytps calibrate measured as exact for the "
            f"{env.get('transport')} transport on this host ({env.get('reason')}). TTFT, ITL and TPOT may "
            "carry the client's own error. Hint: fewer streams per process (--workers N), or run pytps calibrate again."
        )
    lag = summary.get("schedule_lag_s") or {}
    if lag.get("p99") is not None and lag["p99"] > 0.005:
        out.append(
            f"The client sent late: p99 schedule lag {lag['p99'] * 1e3:.1f} ms. The *_sched figures "
            "include it (coordinated omission); the client may be the bottleneck."
        )
    return out
