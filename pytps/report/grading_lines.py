"""The graded-answer lines of a saved run's report, the console's and the HTML page's alike
(docs/grading.md): accuracy with its interval, goodput of correct answers, cost per correct
response, time to correct answer, accuracy by prompt length."""

from __future__ import annotations

from typing import Any


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def grading_lines(results: dict[str, Any]) -> list[str]:
    g = (results.get("summary") or {}).get("grading")
    if not g:
        return []
    ci = g.get("accuracy_ci95")
    interval = f" [95% CI {ci[0]:.1%}, {ci[1]:.1%}]" if ci else ""
    head = (
        f"accuracy {_pct(g.get('accuracy'))}{interval} · {g['correct']} correct of {g['graded']} graded"
        + (f" · {g['grader_errors']} grader errors" if g.get("grader_errors") else "")
        + (f" ({g['grader_timeouts']} timed out)" if g.get("grader_timeouts") else "")
        + (f" · {g['ungraded']} without a reference" if g.get("ungraded") else "")
    )
    rps = g.get("goodput_correct_rps")
    tca = (g.get("time_to_correct_answer_s") or {}).get("p50")
    second = (
        f"goodput of correct answers {'-' if rps is None else format(rps, ',.2f')} req/s "
        f"({g['correct_within_slo']} correct within the SLOs) · time to correct answer p50 "
        + ("-" if tca is None else f"{tca * 1e3:,.1f} ms")
    )
    cost = g.get("cost_per_correct_response")
    if cost is not None:
        currency = ((results.get("summary") or {}).get("cost") or {}).get("currency", "")
        second += f" · {cost:,.6g} {currency}/correct response"
    lines = [head, second]
    bins = g.get("by_prompt_tokens") or []
    if len(bins) > 1:
        lines.append(
            "accuracy by prompt tokens: "
            + " · ".join(f"{b['prompt_tokens']}: {_pct(b['accuracy'])} ({b['graded']})" for b in bins)
        )
    return lines
