"""The one place the results folder's files are named (docs/results.md): every module that
writes or reads one takes its name from here."""

from __future__ import annotations

#: A run's summary and metadata, written whole at the end (pytps.results.output.write_results).
RESULTS = "results.json"
#: The journal: one line of scalars per finished request, flushed at once (pytps.results.folder.Journal).
JOURNAL = "requests.jsonl"
#: The binary event log beside the journal while the run goes (pytps.results.event_log).
EVENT_LOG = "events.log"
#: The event log as numpy arrays, written at the end.
EVENTS = "events.npz"
#: The summary's per-request columns while the run goes (scratch: removed at the finish).
SPILL = "summary.columns"
#: --server-metrics: each scrape, stamped (pytps.runner.scraper), and their raw text with --server-metrics-raw.
SCRAPES = "server_metrics.jsonl"
SCRAPES_RAW = "server_metrics_raw.jsonl"
#: A sweep's index of its cells (pytps.sweep.cells), and a matrix's (pytps.app.matrix).
SWEEP_INDEX = "sweep.json"
MATRIX_INDEX = "matrix.json"
#: A voice sweep's index (pytps.app.voice_sweep; docs/voice.md).
VOICE_SWEEP = "voice_sweep.json"
#: --serve (pytps.app.served, docs/tuning.md): the launched server's output (redacted), what it
#: said and how it started and stopped, per configuration; and a tuning's index of its configurations.
SERVER_LOG = "server.log"
SERVER_FACTS = "server.json"
TUNING_INDEX = "tuning.json"
#: `pytps agents` (docs/agents.md): the summary and each agent's row, one line per turn, the
#: Chrome trace of the agents' turns and tool waits, and a search for sustained agents.
AGENTS = "agents.json"
AGENT_TURNS = "turns.jsonl"
AGENT_TRACE = "agents_trace.json"
AGENT_SEARCH = "agents_search.json"
#: The files that make a folder a run's (a used --out folder is refused: pytps.results.folder).
RUN_FILES = (RESULTS, JOURNAL, EVENTS, EVENT_LOG)
