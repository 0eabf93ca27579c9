"""The settings of the commands with flags of their own: `pytps serve` (the emulator's keywords),
`pytps rank` (beside the run's flags, which set its workload) and `pytps agents`. One entry each,
as in pytps.settings.table; each command's settings are a namespace of their own (their target),
so `pytps serve --seed` and the run's --seed are two entries."""

from __future__ import annotations

import os
from functools import partial

from pytps.emulator import DEFAULT_ITL_US, DEFAULT_TTFT_MS
from pytps.errors import ConfigError
from pytps.settings.setting import OPTIONS, Setting

SERVE_CMD = frozenset({"serve"})
RANK_CMD = frozenset({"rank"})
AGENTS_CMD = frozenset({"agents"})

#: The group of `pytps rank`'s own flags (the run's follow in theirs).
RANK = "rank (docs/rank.md)"

#: How the endpoints' sends are interleaved in time (docs/rank.md): auto picks simultaneous for
#: endpoints on different hosts, blocks for endpoints that share one.
INTERLEAVES = ("auto", "simultaneous", "blocks", "sequential")
#: --objective's choices: pytps.report.rank_objectives.OBJECTIVES' names (tests/cli/test_rank_cli.py
#: holds them equal; the parser does not load the report's modules).
OBJECTIVE_NAMES = ("time_to_correct", "e2e_p50", "e2e_p90", "ttft_p50", "user_tps_p50", "cost_per_correct")


def _gaps_us(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def split_agents(values: list[str]) -> tuple[int, str | None]:
    """--agents' values: (the number of agents, default 8; their trajectories, or None)."""
    count, work = 8, None
    for v in values:
        if v.isdigit():
            count = int(v)
        elif work is None:
            work = v
        else:
            raise ConfigError(f"--agents names two workloads ({work!r} and {v!r}); give one")
    return count, work


# Each command's entries: Setting(name, kind, default, help, ...) in its group, for its command alone.
V = partial(Setting, group=OPTIONS, applies=SERVE_CMD, target="server")
R = partial(Setting, group=RANK, applies=RANK_CMD, target="rank")
A = partial(Setting, group=OPTIONS, applies=AGENTS_CMD, target="agents")

COMMAND_SETTINGS: tuple[Setting, ...] = (
    # ---- pytps serve: each the Emulator keyword of its name (docs/emulator.md) ----
    V("port", "int", 8000, "port on 127.0.0.1 (0 picks a free one; default 8000)"),
    V("ttft_ms", "float", DEFAULT_TTFT_MS, "time to first token in ms (default %(default)s)", unit="ms"),
    V("ttft_dist", "str", "fixed", None, choices=("fixed", "normal", "lognormal")),
    V("ttft_sd_ms", "float", 0.0, "TTFT standard deviation for normal/lognormal", unit="ms"),
    V("itl_us", "float", DEFAULT_ITL_US, "gap between token events in µs (default %(default)s)", unit="µs"),
    V("itl_dist", "str", "fixed", None, choices=("fixed", "normal", "lognormal", "replay")),
    V("itl_sd_us", "float", 0.0, "gap standard deviation for normal/lognormal", unit="µs"),
    V("itl_replay_us", "names", None, "gaps in µs to cycle through (implies --itl-dist replay)", unit="µs",
      metavar="G1,G2,...", flag_type=_gaps_us),
    V("prefill_us_per_token", "float", 0.0, "extra TTFT per prompt token in µs", unit="µs"),
    V("embed_ms", "float", 2.0, "embeddings and rerank: base latency in ms (default 2)", unit="ms"),
    V("embed_us_per_token", "float", 10.0, "embeddings and rerank: µs per input token (default 10)", unit="µs"),
    V("embedding_dim", "int", 384, "embedding vector length (default 384)"),
    V("prefix_cache_tokens", "int", 0, "an LRU prefix cache of N tokens of prompt blocks: a prompt's cached prefix "
      "skips its prefill time and is reported as cached tokens in usage (default 0: no cache)", unit="tokens",
      metavar="N"),
    V("prefix_cache_block_tokens", "int", 16, "tokens per prefix-cache block (default 16, as vLLM)", unit="tokens",
      metavar="B"),
    V("ttft_ramp_ms_per_s", "float", 0.0, "a drifting server: each request's TTFT grows by MS ms per second since "
      "the server started (default 0)", unit="ms/s", metavar="MS"),
    V("usage_overbill", "float", 0.0, "a server that bills more than it streams: usage reports SHARE more output "
      "tokens (0.1: 10%%) than were sent (default 0)", metavar="SHARE"),
    V("max_batch", "int", 0, "at most N requests decode at once; later ones wait in a FIFO queue (default 0: no "
      "limit)", unit="requests", metavar="N"),
    V("batch_slowdown", "float", 0.0, "each gap grows to gap x (1 + S x (n - 1)) with n requests decoding "
      "(default 0)", metavar="S"),
    V("power_idle_w", "float", 0.0, "/metrics' power model: W drawn always (DCGM_FI_DEV_POWER_USAGE, energy in mJ; "
      "default 0: none)", unit="W", metavar="W"),
    V("power_per_stream_w", "float", 0.0, "and W more per request holding a batch slot (default 0)", unit="W",
      metavar="W"),
    V("tokens_per_event", "int", 1, "tokens each event carries (default 1)", unit="tokens"),
    V("coalesce", "int", 1, "events per write (default 1; 0: all events already due)", unit="events"),
    V("reasoning_tokens", "int", 0, "reasoning tokens before the answer", unit="tokens"),
    V("tool_calls", "bool", False, "answer with one streamed tool call", action="store_true"),
    V("agent_turns", "int", 0, "a request with tools gets tool calls for K turns, then a final answer (default 0: "
      "off)", unit="turns", metavar="K"),
    V("agent_calls", "int", 1, "parallel tool calls per agent turn (default 1)", unit="calls", metavar="N"),
    V("agent_invalid", "float", 0.0, "chance that a tool call's arguments break its schema (default 0)",
      metavar="P"),
    V("keepalive_ms", "float", None, "SSE keep-alive after this much silence", unit="ms"),
    V("max_output_tokens", "int", 4096, "cap on any request's output", unit="tokens"),
    V("default_output_tokens", "int", 64, "output when the request sets no limit", unit="tokens"),
    V("model", "str", "pytps-emulator", "model name when the request names none"),
    V("faults", "names", None, "inject a fault, e.g. 429:p=0.1 or stall:every=5,seconds=2 (repeatable)",
      flag="--fault", dest="fault", action="append", flag_default=[], metavar="KIND:key=value,..."),
    V("seed", "int", 0, "seed of the timing and fault draws"),
    V("draws_by_prompt", "bool", False, "key each request's timing and answer draws by its prompt, not its arrival "
      "order, so the same item gets the same draws on every emulator of one seed (docs/emulator.md, Seeds)",
      action="store_true"),
    V("spin_us", "float", 60.0, "most µs to busy-wait before each deadline (the window adapts below it; default "
      "60)", unit="µs"),
    V("realtime", "bool", False, "SCHED_FIFO for the timing thread, so other load cannot preempt it (root or "
      "CAP_SYS_NICE)", action="store_true"),
    V("truth_log", "path", None, "write ground truth as JSON lines to FILE", metavar="FILE"),
    V("answers", "str", None, "reference records (a --dataset JSONL file with expected answers, or a built-in task "
      "set): the emulator ends each known prompt's content with a right or wrong answer (docs/emulator.md, "
      "Answers)", metavar="FILE|tasks:NAMES:COUNT[:SEED]"),
    V("answer_accuracy", "float", 1.0, "chance of the right answer (default 1)", metavar="P"),
    V("answer_accuracy_drop", "float", 0.0, "the chance falls by D per other request decoding at admission "
      "(quality under load; default 0)", metavar="D"),
    # ---- pytps rank's own (pytps.app.rank.RankSettings; its workload is the run's flags) ----
    R("endpoint", "names", None, "an endpoint to rank (twice or more; also api=, api_key_env=, transport=), or "
      "the -c FILE's [[endpoint]] tables", action="append", flag_default=[], metavar="NAME=URL[,model=M]"),
    R("objective", "str", None, "what ranks (default: time_to_correct, the E2E p50 of correct answers, when every "
      "endpoint is graded; else e2e_p50)", choices=OBJECTIVE_NAMES),
    R("min_accuracy", "float", None, "eligible only when the accuracy's Wilson 95%% lower bound is at least P",
      metavar="P"),
    R("interleave", "str", "auto", "simultaneous, blocks (ABBA…), or sequential (not interleaved: a matrix's "
      "order, for comparison); auto (default): blocks when every endpoint is on one host, else simultaneous",
      choices=INTERLEAVES),
    R("blocks", "int", 8, "blocks the items are cut into (default 8)", metavar="N"),
    R("every", "str", None, "repeat the rank on a schedule, e.g. 1h (with --for)", metavar="DURATION"),
    R("for_", "str", None, "how long the schedule lasts, e.g. 72h", flag="--for", metavar="DURATION"),
    R("resume", "bool", False, "continue the monitor in --out from its next round", action="store_true"),
    R("resamples", "int", 2000, "bootstrap resamples (default 2000)"),
    R("markdown", "path", None, "also write the rank as Markdown", metavar="FILE"),
    # ---- pytps agents (pytps.app.agents: AgentPlan's fields, and the agents' settings) ----
    A("agents", "int", 8, "concurrent agents (an integer, default 8) and/or their trajectories: "
      "synthetic:KEY=VALUE,..., example (the shipped set) or a file (pytps JSONL, OpenAI messages, SWE-agent "
      ".traj, ShareGPT); give it twice for both", action="append", flag_default=[], metavar="N|WORK",
      from_args=lambda a: split_agents(a.agents)[0]),
    A("trajectories", "str", None, None, flag=None, reads=("agents",),
      from_args=lambda a: split_agents(a.agents)[1]),
    A("rate", "float", None, "agents arriving per second instead", flag="--agent-rate", dest="agent_rate",
      metavar="R"),
    A("live", "str", None, "run live tool loops on tasks:NAMES:COUNT[:SEED] (graded) or prompts:COUNT instead of "
      "replaying", metavar="TASKS"),
    A("tools", "path", None, "the mocked tools of --live (JSON list of tool specs)", metavar="FILE"),
    A("step_cap", "int", 20, "a live loop's most turns per task (default 20)"),
    A("tool_choice", "str", None, "the tool choice asked of the model (default: the server's; required: a call "
      "every turn)", choices=("auto", "required", "none")),
    A("parallel_tool_calls", "bool", None, "ask for at most one tool call a turn", flag="--no-parallel-tool-calls",
      action="store_const", const=False),
    A("tool_time", "str", None, "replay's tool waits: S, S:SD, LO-HI or exp:MEAN", metavar="DIST"),
    A("slo", "str", None, "per-turn tier: ttft=SECONDS,tps=TOKENS_PER_S", metavar="TIER"),
    A("api", "str", "openai-chat", None, choices=("openai-chat", "openai-responses", "anthropic")),
    A("previous_response_id", "bool", False, "--api openai-responses replay: later turns send previous_response_id "
      "and only their new items", action="store_true"),
    A("model", "str", "pytps-emulator", "the model name sent (default pytps-emulator)"),
    A("max_tokens", "int", 256, "a live turn's output limit (default 256)"),
    A("stream", "bool", True, "ask for whole bodies", flag="--no-stream", action="store_false"),
    A("transport", "str", "native", None, choices=("native", "asyncio", "httpx")),
    A("api_key", "str", None, "environment variable holding the API key", flag="--api-key-env", dest="api_key_env",
      metavar="VAR", from_args=lambda a: os.environ.get(a.api_key_env) if a.api_key_env else None),
    A("seed", "int", 0, "seed of tool times, tool latencies and arrivals"),
    A("out", "path", None, "write agents.json, turns.jsonl, agents_trace.json here", metavar="DIR"),
    A("store", "str", None, "the results store to record the run in (with --out)", metavar="PATH|URL"),
    A("record", "bool", True, "do not record the run in the results store", flag="--no-store", dest="no_store",
      action="store_true", from_args=lambda a: not a.no_store),
    A("html", "path", None, "write an HTML page: TTFT per turn, agents' timelines", metavar="FILE"),
    A("search", "bool", False, "find the most concurrent agents whose turns meet --slo-run (the capacity search's "
      "rules)", action="store_true"),
    A("slo_run", "str", None, "the search's targets over all turns: ttft:p90=0.5,...", metavar="TARGETS"),
    A("search_max_probes", "int", 8, "the search's most probe runs (default 8)"),
    A("search_start", "int", None, "the search's first probe (default 1)", metavar="N"),
)  # fmt: skip
