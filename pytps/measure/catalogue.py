"""The metric catalogue: for every figure a report shows, its summary key, its label, its display
unit, the scale from the summary's unit to that one, and whether lower or higher is better.

Every table takes its labels and units from here (the console's and its Markdown/CSV forms, the
HTML pages, `pytps compare`, `pytps sweep`), so a metric is named and given its unit once
(tests/measure/test_catalogue.py checks that no other module writes them). Definitions are in
docs/metrics.md; `description` is the one-line reminder shown beside the label (HTML tooltips).

Labels are short on purpose: the console's table prints "label [unit]" in its first column and
must fit an 80-column terminal (what rich assumes when stdout is a file) with every label on one
line. So a label is at most LABEL_MAX characters with its unit; the long name is the description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The longest "label [unit]" of the console's table (DISTRIBUTIONS and SERVER) that its first
#: column holds at 80 columns beside the widest numbers without wrapping.
LABEL_MAX = 20

#: How a statistic is named in a heading ("TTFT p50 [ms]"); a median is p50 everywhere.
STAT_NAMES = {"mean": "mean", "p50": "p50", "p90": "p90", "p99": "p99", "median": "p50"}


@dataclass(frozen=True)
class Metric:
    """One figure of a summary: `value × scale` is its value in `unit`."""

    key: str
    label: str
    unit: str
    scale: float
    better: Literal["lower", "higher"] | None
    description: str

    @property
    def heading(self) -> str:
        """The label with its unit: "TTFT [ms]"."""
        return f"{self.label} [{self.unit}]"

    def stat_heading(self, stat: str) -> str:
        """A statistic of it, with its unit: "TTFT p50 [ms]"."""
        return f"{self.label} {STAT_NAMES.get(stat, stat)} [{self.unit}]"

    def shown(self, value: float | None) -> float | None:
        """A summary value in the display unit (None stays None)."""
        return None if value is None else value * self.scale


def _m(key: str, label: str, unit: str, scale: float, better: Literal["lower", "higher"] | None, what: str) -> Metric:
    return Metric(key, label, unit, scale, better, what)


MS, US = 1e3, 1e6

#: The per-request distributions of a run's summary, in the console table's order.
DISTRIBUTIONS: tuple[Metric, ...] = (
    _m("ttft_s", "TTFT", "ms", MS, "lower", "time to first token: first output − send"),
    _m("ttfat_s", "TTFAT", "ms", MS, "lower", "time to first answer token (after any reasoning)"),
    _m("tpot_s", "TPOT", "ms", MS, "lower", "time per output token after the first"),
    _m("itl_s", "ITL", "ms", MS, "lower", "inter-token latency, one sample per token"),
    _m("ttfb_s", "TTFB", "ms", MS, "lower", "time to first byte: the response's headers − send"),
    _m("e2e_s", "E2E", "ms", MS, "lower", "end-to-end time: end of the stream − send"),
    _m("e2e_500_s", "E2E 500 tok", "ms", MS, "lower", "E2E for 500 output tokens: TTFT + 499 × TPOT"),
    _m("decode_tps", "decode TPS", "tok/s", 1.0, "higher", "decode speed per user: tokens after the first / time"),
    _m("user_tps", "user TPS", "tok/s", 1.0, "higher", "speed a user sees: output tokens / E2E"),
    _m("ttft_sched_s", "TTFT sched", "ms", MS, "lower", "TTFT from the scheduled send (rate mode)"),
    _m("e2e_sched_s", "E2E sched", "ms", MS, "lower", "E2E from the scheduled send (rate mode)"),
    _m("schedule_lag_s", "schedule lag", "ms", MS, "lower", "how late the client sent (rate mode)"),
    _m("kernel_read_lag_s", "kernel read lag", "µs", US, "lower", "kernel receive stamp to pytps's stamp"),
)

#: The server's own timings (summary.server_timings), shown beside pytps's when it reports them.
SERVER: tuple[Metric, ...] = (
    _m("prompt_s", "server prompt", "ms", MS, "lower", "the server's own prompt (prefill) time"),
    _m("ttft_minus_prompt_s", "TTFT − prompt", "ms", MS, "lower", "TTFT − server prompt time: network, queue, client"),
    _m("decode_s", "server decode", "ms", MS, "lower", "the server's own decode time"),
    _m("tpot_s", "server TPOT", "ms", MS, "lower", "the server's own time per output token"),
    _m("tpot_minus_server_s", "TPOT − server", "µs", US, None, "pytps's TPOT − the server's"),
)

#: One value per run.
RUN: tuple[Metric, ...] = (
    _m("output_throughput_tps", "output throughput", "tok/s", 1.0, "higher", "output tokens per second, all users"),
    _m(
        "steady_output_throughput_tps",
        "steady throughput",
        "tok/s",
        1.0,
        "higher",
        "output tok/s while 95% of the target concurrency was in flight",
    ),
    _m("request_throughput_rps", "request throughput", "req/s", 1.0, "higher", "successful requests per second"),
    _m("input_throughput_per_s", "inputs", "inputs/s", 1.0, "higher", "embedded texts or ranked documents per second"),
    _m("input_token_throughput_tps", "input throughput", "tok/s", 1.0, "higher", "input tokens per second (usage)"),
    _m("embedding_dim", "embedding dimension", "components", 1.0, None, "the length of the vectors returned"),
    _m("goodput_rps", "goodput", "req/s", 1.0, "higher", "useful requests per second"),
    _m("goodput_tps", "useful throughput", "tok/s", 1.0, "higher", "output tokens of useful requests per second"),
    _m("useful_share", "useful", "%", 100.0, "higher", "share of measured requests that were useful"),
    _m("error_rate", "errors", "%", 100.0, "lower", "share of measured requests that failed"),
    _m("accuracy", "accuracy", "%", 100.0, "higher", "share of graded responses that were correct"),
    _m("output_tokens_total", "output tokens", "tokens", 1.0, None, "output tokens of the measured requests"),
    _m("requests_ok", "requests ok / measured", "requests", 1.0, None, "successful and measured requests"),
    _m("measured_window_s", "measured window", "s", 1.0, None, "from the first measured send to the last finish"),
    _m("client_cpu_us_per_token", "client CPU per token", "µs", 1.0, "lower", "pytps's own CPU time per token"),
    _m(
        "joules_per_output_token",
        "energy per token",
        "J",
        1.0,
        "lower",
        "the server's energy over the run / output tokens (--server-metrics)",
    ),
    _m("output_tokens_per_joule", "tokens per joule", "tok/J", 1.0, "higher", "output tokens / the server's energy"),
)

#: A voice run's per-request figures (docs/metrics.md, "Voice"; docs/voice.md), by the keys of
#: its rows: text to speech, speech to text, realtime sessions and the voice turn. TTFB is
#: DISTRIBUTIONS' entry. Ratios (RTF, RTFx) have the unit "×".
VOICE: tuple[Metric, ...] = (
    _m("ttfa_s", "TTFA", "ms", MS, "lower", "time to first audio: sent → the first audio byte"),
    _m("first_playable_s", "first playable", "ms", MS, "lower", "sent → one whole audio frame received"),
    _m("audio_s", "audio", "s", 1.0, None, "audio seconds received per request"),
    _m("generation_s", "generation", "s", 1.0, "lower", "sent → the last audio byte"),
    _m("rtf", "RTF", "×", 1.0, "lower", "real-time factor: generation time / audio seconds"),
    _m("inverse_rtf", "inverse RTF", "×", 1.0, "higher", "audio seconds / generation time"),
    _m("stalls", "stalls", "per request", 1.0, "lower", "the simulated player's stalls per request"),
    _m("stalled_s", "stalled", "ms", MS, "lower", "the simulated player's stalled time per request"),
    _m("input_audio_s", "input audio", "s", 1.0, None, "the uploaded audio's seconds"),
    _m("first_text_s", "first text", "ms", MS, "lower", "speech to text: sent → the first text"),
    _m("final_s", "final transcript", "ms", MS, "lower", "speech to text: sent → the final transcript"),
    _m("rtfx", "RTFx", "×", 1.0, "higher", "input audio seconds / time to the final transcript"),
    _m("wer", "WER", "%", 100.0, "lower", "word error rate against the reference transcript"),
    _m("cer", "CER", "%", 100.0, "lower", "character error rate against the reference"),
    _m("first_delta_s", "first delta", "ms", MS, "lower", "realtime: start of speech → the first delta"),
    _m("eos_final_s", "speech end → final", "ms", MS, "lower", "realtime: end of speech → the final transcript"),
    _m("frame_late_p50_s", "frame late p50", "ms", MS, "lower", "realtime: a session's median frame lateness"),
    _m("frame_late_p99_s", "frame late p99", "ms", MS, "lower", "realtime: a session's p99 frame lateness"),
    _m("frame_late_max_s", "frame late max", "ms", MS, "lower", "realtime: a session's latest frame"),
    _m("turn_s", "voice turn", "ms", MS, "lower", "end of user speech → first audio of the reply"),
    _m("stt_s", "turn: stt", "ms", MS, "lower", "the turn's stt stage: → the final transcript"),
    _m("chat_s", "turn: chat", "ms", MS, "lower", "the turn's chat stage: → the first speakable piece"),
    _m("tts_s", "turn: tts", "ms", MS, "lower", "the turn's tts stage: → the piece's first audio"),
    _m("chat_handoff_s", "chat hand-off", "ms", MS, "lower", "the chat request sent after the transcript"),
    _m("chat_ttft_s", "chat TTFT", "ms", MS, "lower", "the turn's chat request's TTFT"),
    _m("tts_handoff_s", "tts hand-off", "ms", MS, "lower", "the speech request sent after its piece"),
)

#: A voice run's run-level figures.
VOICE_RUN: tuple[Metric, ...] = (
    _m("audio_throughput", "audio throughput", "audio s/s", 1.0, "higher", "audio seconds per second, all streams"),
    _m("stall_rate", "stalled requests", "%", 100.0, "lower", "share of requests whose playback stalled"),
)

#: Figures the results store keeps that no run summary has: a run's request count, and a
#: calibration's (pytps calibrate, docs/calibrate.md).
STORED: tuple[Metric, ...] = (
    _m("requests_total", "requests measured", "requests", 1.0, None, "measured requests of the run"),
    _m("stamp_delay_p99_us", "stamp delay p99", "µs", 1.0, "lower", "calibrate: p99 of client stamp − emulator write"),
    _m("cpu_us_per_token", "CPU per token", "µs", 1.0, "lower", "calibrate: the client's CPU per token"),
    _m(
        "cells_passed_share", "cells passed", "%", 100.0, "higher", "calibrate: share of the ladder's cells that passed"
    ),
    _m("server_ready_s", "ready after start", "s", 1.0, "lower", "--serve: the server's start to its readiness"),
)

_BY_KEY = {m.key: m for m in (*DISTRIBUTIONS, *RUN, *VOICE, *VOICE_RUN)}
_STORED_BY_KEY = {m.key: m for m in STORED}
_SERVER_BY_KEY = {m.key: m for m in SERVER}


def metric(key: str) -> Metric:
    """The catalogue's entry for a summary key (KeyError names an unknown one)."""
    return _BY_KEY[key]


def server_metric(key: str) -> Metric:
    """The catalogue's entry for a key of summary.server_timings."""
    return _SERVER_BY_KEY[key]


def of_figure(name: str) -> Metric | None:
    """The entry behind a flat figure name, as the results store and sweep headlines name them:
    a summary key (`output_throughput_tps`), or a distribution with its statistic (`ttft_p50`,
    `decode_tps_mean`). None for a figure the catalogue does not hold."""
    if name in _BY_KEY:
        return _BY_KEY[name]
    if name in _STORED_BY_KEY:
        return _STORED_BY_KEY[name]
    base, _, stat = name.rpartition("_")
    if stat in ("mean", "max") or (stat.startswith("p") and stat[1:].isdigit()):
        for key in (f"{base}_s", base):
            if key in _BY_KEY:
                return _BY_KEY[key]
    return None


def figure_heading(name: str) -> str:
    """A flat figure's heading with its statistic and unit ("TTFT p50 [ms]", "output throughput
    [tok/s]"), as the trend page and `pytps history` show it; a figure the catalogue does not hold
    keeps its name (tests/report/test_history_page.py refuses that on a page)."""
    m = of_figure(name)
    if m is None:
        return name
    if name in _BY_KEY or name in _STORED_BY_KEY:
        return m.heading
    return m.stat_heading(name.rpartition("_")[2])
