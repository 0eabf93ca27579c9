"""Requests per second and the client's CPU per request (issue 42), in one run.

Against `pytps serve --ttft-ms 0 --itl-us 0 --embed-ms 0` in a process of its own, so the CPU
time this process spends (time.process_time: every thread of it, the native engine's included)
is the client's alone; the emulator's own CPU (from /proc) is printed beside it, so a cell where
the emulator is the limit says so. Cells: 1-token chat, embeddings and rerank, at concurrency 1,
64 and 256, on the native, asyncio and httpx transports. Each run's whole cost is counted (its
configuration, its journal, its summary and results.json); the per-request figure is marginal:
(CPU of a run of N - CPU of a run of N/10) / (N - N/10), so a run's fixed cost (measured on its
own in the fixed-cost column, per run) does not inflate it at small N.

Ratios measured in this run: each transport's CPU per request relative to native's, cell by cell.
Targets (issue 42): native, concurrency 64, chat and embeddings: <= 60 us of client CPU per request,
>= 8,000 req/s where the emulator keeps up. CPU time is less sensitive to other load on the machine
than wall time, but not immune: the load average is printed with the figures.

Peers: aiperf, guidellm and vLLM's bench (`vllm bench serve`), each given by its executable in a
bench-only venv (--aiperf PATH, --guidellm PATH, --vllm PATH) or found on PATH, are run as
subprocesses against the same emulator in the same run, on 1-token streamed chat (16 prompt tokens,
ignore_eos) and embeddings (16 tokens) at --peer-concurrency (default 64), and measured as pytps is:
the CPU of the peer's whole process tree (RUSAGE_CHILDREN before/after: its worker processes count
once reaped; a /proc sample of the tree is printed beside it as a check), marginal (a run of N less
a run of N/10), N / wall, a marginal rate (N - N/10 over the wall-time difference, without the
tool's start-up), the peer's own requests per second, and the emulator's CPU per request. Each gets
a tokenizer made at run time by bench/tiny_tokenizer.py with the peer's own Python (no hub
download). Their start-up costs 8-20 s of CPU here, so their marginal figures are noise below
--requests 5000. A peer absent is one line saying so. Never in pyproject.toml; the bench-only venvs:

    python -m venv /work/venvs/aiperf && /work/venvs/aiperf/bin/pip install aiperf==0.13.0
    python -m venv /work/venvs/guidellm && /work/venvs/guidellm/bin/pip install guidellm==0.8.1
    # vllm 0.34.0 pins flashinfer-python==0.7.3, which the registry here lacks: vllm without its
    # dependencies, then its other requirements (torch included); the bench client needs no flashinfer
    python -m venv /work/venvs/vllm && /work/venvs/vllm/bin/pip install --no-deps vllm==0.34.0
    /work/venvs/vllm/bin/python -c "import importlib.metadata as m; print('\\n'.join(r for r in \\
        m.requires('vllm') if 'extra ==' not in r and not r.startswith('flashinfer')))" > /tmp/vllm-reqs.txt
    /work/venvs/vllm/bin/pip install -r /tmp/vllm-reqs.txt
    python bench/bench_request_rate.py --quick --transports native --requests 5000 \\
        --aiperf /work/venvs/aiperf/bin/aiperf --guidellm /work/venvs/guidellm/bin/guidellm \\
        --vllm /work/venvs/vllm/bin/vllm

    python bench/bench_request_rate.py [--quick] [--requests N] [--transports native,httpx]
        [--workloads chat,embeddings,rerank] [--concurrency 1,64,256] [--json FILE]
        [--aiperf PATH] [--guidellm PATH] [--vllm PATH] [--peer-concurrency 64] [--no-peers]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

WORKLOADS: dict[str, dict[str, Any]] = {
    "chat": {"api": "openai-chat", "output_tokens": 1, "input_tokens": 16},
    "embeddings": {"api": "openai-embeddings", "input_tokens": 16},
    "rerank": {"api": "rerank", "input_tokens": 16},
}
TARGET_US, TARGET_RPS = 60.0, 8000.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Emulator:
    """`pytps serve` at zero latency, in its own process, on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = _free_port()
        cmd = [sys.executable, "-m", "pytps", "serve", "--port", str(self.port), "--ttft-ms", "0", "--itl-us", "0",
               "--embed-ms", "0"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise SystemExit("the emulator (pytps serve) did not start") from None
                time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def cpu_s(self) -> float:
        return _proc_cpu_s(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cell(base_url: str, emu: Emulator | None, workload: str, concurrency: int, transport: str, requests: int) -> dict:
    """A run of N/10 then one of N: marginal client CPU per request, the small run's CPU less its
    requests' share (the fixed cost), requests per second and errors of the large run."""
    small = one_run(base_url, emu, workload, concurrency, transport, max(requests // 10, 1))
    big = one_run(base_url, emu, workload, concurrency, transport, requests)
    marginal_s = (big["cpu_s"] - small["cpu_s"]) / (big["requests"] - small["requests"])
    return {**big, "cpu_us_per_request": marginal_s * 1e6, "whole_us_per_request": big["cpu_s"] / requests * 1e6,
            "fixed_ms": (small["cpu_s"] - marginal_s * small["requests"]) * 1e3}  # fmt: skip


def one_run(
    base_url: str, emu: Emulator | None, workload: str, concurrency: int, transport: str, requests: int
) -> dict:
    from pytps.app.runs import run

    out = tempfile.mkdtemp(prefix="pytps-bench-rps-")
    settings = {**WORKLOADS[workload], "requests": requests, "concurrency": concurrency, "transport": transport,
                "model": "m", "out": out + "/run"}  # fmt: skip
    emu0 = emu.cpu_s() if emu else 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run(base_url, **settings)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    emu_cpu = (emu.cpu_s() - emu0) if emu else float("nan")
    shutil.rmtree(out, ignore_errors=True)
    s = result.summary
    return {"workload": workload, "concurrency": concurrency, "transport": transport, "requests": requests,
            "errors": int(s.get("requests_failed") or 0), "cpu_s": cpu,
            "rps": requests / wall, "wall_s": wall, "emulator_cpu_s": emu_cpu,
            "emulator_busy": emu_cpu / wall if wall > 0 else float("nan")}  # fmt: skip


def use_tree(tree: str) -> None:
    """Imports pytps from `tree` from here on: the editable install's finder is set aside."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Redirecting" not in type(f).__name__]
    sys.path.insert(0, os.path.abspath(tree))
    import pytps

    print(f"pytps from {os.path.dirname(pytps.__file__)}")


PEERS = ("aiperf", "guidellm", "vllm")
PEER_NAMES = {"aiperf": "aiperf", "guidellm": "guidellm", "vllm": "vLLM's bench"}


def _tree_cpu_sampler(root: int, stop: threading.Event, seen: dict[int, float], every_s: float = 0.1) -> None:
    """Until `stop`: the last utime + stime seen (/proc) of each process under `root`, itself included.
    A check of RUSAGE_CHILDREN, which counts a process only once its parent has reaped it: a worker
    left unreaped (or reparented away) would show here and not there. A lower bound (each process's
    CPU after its last sample, and processes shorter than a sample, are missed)."""
    while not stop.wait(every_s):
        parent: dict[int, int] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        tree, grew = {root}, True
        while grew:
            grew = False
            for pid, ppid in parent.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        for pid in tree:
            with contextlib.suppress(OSError, IndexError, ValueError):
                seen[pid] = _proc_cpu_s(pid)


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _peer_python(exe: str) -> str:
    """The Python of the peer's venv (the executable's sibling; not resolved, so the venv's)."""
    py = os.path.join(os.path.dirname(os.path.abspath(exe)), "python")
    return py if os.path.exists(py) else sys.executable


class Peer:
    """A peer benchmark tool run as a subprocess against the same emulator: its command line, and
    what it reports (requests, errors, its own requests per second) read from its result file."""

    def __init__(self, name: str, exe: str) -> None:
        self.name, self.exe = name, exe
        self.tmp = tempfile.mkdtemp(prefix=f"pytps-bench-peer-{name}-")
        self.tokenizer = os.path.join(self.tmp, "tokenizer")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([_peer_python(exe), os.path.join(here, "tiny_tokenizer.py"), self.tokenizer], check=True,
                       stdout=subprocess.DEVNULL, env=self.env())  # fmt: skip
        self.version = self._version()

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self) -> dict[str, str]:
        env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_DISABLE_TELEMETRY": "1",
               "DO_NOT_TRACK": "1", "NO_COLOR": "1"}  # fmt: skip
        if self.name == "aiperf":
            # aiperf 0.13.0 in offline mode loads a tokenizer only from the hub's cache (a local
            # directory fails with HFValidationError); online it loads a local path without asking the
            # hub. HF_ENDPOINT above points any hub request at a closed local port all the same.
            env.pop("HF_HUB_OFFLINE", None)
            env.pop("TRANSFORMERS_OFFLINE", None)
        else:
            env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        return env

    def _version(self) -> str:
        dist = {"vllm": "vllm", "aiperf": "aiperf", "guidellm": "guidellm"}[self.name]
        code = f"import importlib.metadata as m; print(m.version({dist!r}))"
        out = subprocess.run([_peer_python(self.exe), "-c", code], capture_output=True, text=True)
        return out.stdout.strip() or "?"

    def supports(self, workload: str) -> bool:
        return workload in ("chat", "embeddings")

    def command(self, base_url: str, workload: str, concurrency: int, requests: int, out: str) -> list[str]:
        tok, chat = self.tokenizer, workload == "chat"
        if self.name == "aiperf":
            cmd = [self.exe, "profile", "--model", "pytps-emulator", "--url", base_url, "--endpoint-type",
                   "chat" if chat else "embeddings", "--tokenizer", tok, "--synthetic-input-tokens-mean", "16",
                   "--synthetic-input-tokens-stddev", "0", "--concurrency", str(concurrency), "--request-count",
                   str(requests), "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry",
                   "--output-artifact-dir", out, "--random-seed", "1"]  # fmt: skip
            if chat:
                cmd += ["--streaming", "--output-tokens-mean", "1", "--output-tokens-stddev", "0",
                        "--extra-inputs", "ignore_eos:true"]  # fmt: skip
            return cmd
        if self.name == "guidellm":
            fmt = "/v1/chat/completions" if chat else "/v1/embeddings"
            data = "kind=synthetic_text,prompt_tokens=16" + (",output_tokens=1" if chat else "")
            return [self.exe, "run", "--backend", f"kind=openai_http,target={base_url},model=pytps-emulator,"
                    f"request_format={fmt}", "--profile", f"kind=concurrent,streams={concurrency}",
                    "--constraint", f"kind=max_requests,count={requests}", "--data", data, "--tokenizer",
                    f"kind=huggingface_auto,model={tok}", "--output", f"kind=json,path={out}/benchmarks.json",
                    "--disable-console"]  # fmt: skip
        endpoint = "/v1/chat/completions" if chat else "/v1/embeddings"
        cmd = [self.exe, "bench", "serve", "--backend", "openai-chat" if chat else "openai-embeddings",
               "--base-url", base_url, "--endpoint", endpoint, "--model", "pytps-emulator", "--tokenizer", tok,
               "--dataset-name", "random", "--random-input-len", "16", "--num-prompts", str(requests),
               "--max-concurrency", str(concurrency), "--request-rate", "inf", "--disable-tqdm",
               "--save-result", "--result-dir", out, "--result-filename", "result.json"]  # fmt: skip
        if chat:
            cmd += ["--random-output-len", "1", "--ignore-eos"]
        return cmd

    def report(self, out: str) -> dict:
        """requests done, errors and the peer's own requests per second, from its result file."""
        if self.name == "aiperf":
            with open(os.path.join(out, "profile_export_aiperf.json")) as f:
                d = json.load(f)
            done = int(d["request_count"]["avg"])
            errors = round(done * d["request_error_rate"]["avg"] / 100) + len(d.get("error_summary") or [])
            return {"done": done, "peer_errors": errors, "peer_rps": d["request_throughput"]["avg"]}
        if self.name == "guidellm":
            with open(os.path.join(out, "benchmarks.json")) as f:
                b = json.load(f)["benchmarks"][0]
            made = b["scheduler_metrics"]["requests_made"]
            rps = b["metrics"]["requests_per_second"]["successful"]["mean"]
            return {"done": int(made["successful"]), "peer_errors": int(made["errored"]) + int(made["incomplete"]),
                    "peer_rps": rps}  # fmt: skip
        with open(os.path.join(out, "result.json")) as f:
            d = json.load(f)
        return {"done": int(d["completed"]), "peer_errors": int(d.get("failed") or 0),
                "peer_rps": d["request_throughput"]}  # fmt: skip

    def one_run(self, base_url: str, emu: Emulator | None, workload: str, concurrency: int, requests: int) -> dict:
        out = tempfile.mkdtemp(prefix="run-", dir=self.tmp)
        cmd = self.command(base_url, workload, concurrency, requests, out)
        emu0 = emu.cpu_s() if emu else 0.0
        seen: dict[int, float] = {}
        stop = threading.Event()
        with open(os.path.join(out, "peer.log"), "w") as log:
            cpu0, wall0 = _children_cpu_s(), time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env(), cwd=out)
            sampler = threading.Thread(target=_tree_cpu_sampler, args=(proc.pid, stop, seen), daemon=True)
            sampler.start()
            rc = proc.wait()
            cpu, wall = _children_cpu_s() - cpu0, time.perf_counter() - wall0
        stop.set()
        sampler.join()
        emu_cpu = (emu.cpu_s() - emu0) if emu else float("nan")
        try:
            rep = self.report(out) if rc == 0 else None
        except (OSError, KeyError, IndexError, TypeError, ValueError):
            rep = None
        if rep is None:
            with open(os.path.join(out, "peer.log")) as f:
                tail = f.read()[-2000:]
            raise RuntimeError(f"{self.name} exited {rc} without a readable result:\n{' '.join(cmd)}\n{tail}")
        shutil.rmtree(out, ignore_errors=True)
        return {"workload": workload, "concurrency": concurrency, "transport": self.name, "requests": requests,
                "errors": rep["peer_errors"] + max(requests - rep["done"] - rep["peer_errors"], 0),
                "cpu_s": cpu, "tree_proc_cpu_s": sum(seen.values()), "processes": len(seen),
                "rps": requests / wall, "wall_s": wall, "peer_rps": rep["peer_rps"], "emulator_cpu_s": emu_cpu,
                "emulator_busy": emu_cpu / wall if wall > 0 else float("nan"), "command": cmd}  # fmt: skip

    def cell(self, base_url: str, emu: Emulator | None, workload: str, concurrency: int, requests: int) -> dict:
        """As cell() for pytps: a run of N/10 then one of N, the whole process tree's CPU (children
        reaped: RUSAGE_CHILDREN); marginal CPU per request, and a marginal rate, (N - N/10) / (wall of
        N - wall of N/10), beside N / wall, which carries the tool's start-up."""
        small = self.one_run(base_url, emu, workload, concurrency, max(requests // 10, 1))
        big = self.one_run(base_url, emu, workload, concurrency, requests)
        n = big["requests"] - small["requests"]
        marginal_s = (big["cpu_s"] - small["cpu_s"]) / n
        dwall = big["wall_s"] - small["wall_s"]
        return {**big, "cpu_us_per_request": marginal_s * 1e6, "whole_us_per_request": big["cpu_s"] / requests * 1e6,
                "fixed_ms": (small["cpu_s"] - marginal_s * small["requests"]) * 1e3,
                "marginal_rps": n / dwall if dwall > 0 else float("nan"),
                "emulator_us_per_request": (big["emulator_cpu_s"] - small["emulator_cpu_s"]) / n * 1e6,
                "small_errors": small["errors"]}  # fmt: skip


def find_peers(paths: dict[str, str | None]) -> tuple[list[Peer], list[str]]:
    """The peers given (--aiperf PATH...) or found on PATH; and a line for each one absent."""
    found, absent = [], []
    for name in PEERS:
        exe = paths.get(name) or shutil.which(name)
        if exe and os.path.exists(exe):
            try:
                found.append(Peer(name, exe))
            except (OSError, subprocess.CalledProcessError) as e:
                absent.append(f"{PEER_NAMES[name]} at {exe} could not make its tokenizer ({e}): skipped")
        else:
            absent.append(f"{PEER_NAMES[name]} is not installed here: skipped (install it in a bench-only venv, "
                          f"then --{name} PATH)")  # fmt: skip
    return found, absent


def peer_notes(rows: list[dict], peers: list[Peer]) -> None:
    """What the table's peer rows do not show: versions, the peer's own rate, the marginal rate,
    the /proc check of the tree's CPU, the emulator's CPU per request, and the commands."""
    for p in peers:
        print(f"peer {p.name} {p.version} ({p.exe}), its tokenizer made at run time by bench/tiny_tokenizer.py")
    for r in rows:
        print(f"  {r['transport']} {r['workload']} @{r['concurrency']}: its own report {r['peer_rps']:.0f} req/s; "
              f"N / wall {r['rps']:.0f}; marginal (N - N/10) / (wall difference) {r['marginal_rps']:.0f} req/s; "
              f"tree CPU by RUSAGE_CHILDREN {r['cpu_s']:.2f} s, by /proc samples {r['tree_proc_cpu_s']:.2f} s "
              f"({r['processes']} processes); emulator {r['emulator_us_per_request']:.0f} us/request; errors "
              f"{r['errors']} (+{r['small_errors']} in the N/10 run)")  # fmt: skip
        print(f"    {' '.join(r['command'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests, chat and embeddings at 64 only")
    ap.add_argument("--requests", type=int, default=None, help="requests per cell (default 5000; --quick 1000)")
    ap.add_argument("--transports", default="native,asyncio,httpx")
    ap.add_argument("--workloads", default=None, help="default chat,embeddings,rerank (--quick: chat,embeddings)")
    ap.add_argument("--concurrency", default=None, help="default 1,64,256 (--quick: 64)")
    ap.add_argument("--base-url", default=None, help="a running `pytps serve --ttft-ms 0 --itl-us 0 --embed-ms 0`")
    ap.add_argument("--json", default=None, help="also write the cells to this file")
    tree_help = ("measure the pytps of this source tree (e.g. `git archive main pytps` unpacked, with the installed "
                 "_core*.so and _version.py copied into its pytps/) instead of the installed one: a before/after "
                 "table, runs interleaved (the emulator stays the installed one)")  # fmt: skip
    ap.add_argument("--tree", default=None, help=tree_help)
    for name in PEERS:
        peer_help = f"{PEER_NAMES[name]}'s executable in its bench-only venv (default: `{name}` on PATH)"
        ap.add_argument(f"--{name}", default=None, metavar="PATH", help=peer_help)
    ap.add_argument("--peer-concurrency", default="64", help="the concurrency levels the peers run at (default 64)")
    ap.add_argument("--no-peers", action="store_true", help="run no peer, even if installed")
    a = ap.parse_args()
    if a.tree:
        use_tree(a.tree)
    transports = a.transports.split(",")
    workloads = (a.workloads or ("chat,embeddings" if a.quick else "chat,embeddings,rerank")).split(",")
    levels = [int(c) for c in (a.concurrency or ("64" if a.quick else "1,64,256")).split(",")]
    requests = a.requests or (1000 if a.quick else 5000)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    peers, absent = ([], []) if a.no_peers else find_peers({n: getattr(a, n) for n in PEERS})
    peer_levels = {int(c) for c in a.peer_concurrency.split(",")}
    cells, peer_rows, peer_failures = [], [], []
    emu = None if a.base_url else Emulator()
    base_url = a.base_url or (emu.base_url if emu else "")
    try:
        print(f"{'workload':10s} {'conc':>5s} {'transport':9s} {'requests':>8s} {'client CPU/req us':>17s} "
              f"{'x native':>8s} {'whole run/req us':>16s} {'fixed ms':>8s} {'req/s':>8s} "
              f"{'emulator busy':>13s} {'errors':>6s}")  # fmt: skip
        for w in workloads:
            for c in levels:
                n = min(requests, 1000) if c == 1 else requests
                native_us = None
                for t in transports:
                    r = cell(base_url, emu, w, c, t, n)
                    cells.append(r)
                    if t == "native":
                        native_us = r["cpu_us_per_request"]
                    ratio = f"{r['cpu_us_per_request'] / native_us:8.2f}" if native_us else f"{'-':>8s}"
                    print(f"{w:10s} {c:5d} {t:9s} {n:8d} {r['cpu_us_per_request']:17.1f} {ratio} "
                          f"{r['whole_us_per_request']:16.1f} {r['fixed_ms']:8.0f} {r['rps']:8.0f} "
                          f"{r['emulator_busy']:12.0%} {r['errors']:6d}", flush=True)  # fmt: skip
                for p in peers:
                    if not p.supports(w) or c not in peer_levels:
                        continue
                    try:
                        r = p.cell(base_url, emu, w, c, n)
                    except RuntimeError as e:
                        peer_failures.append(str(e))
                        print(f"{w:10s} {c:5d} {p.name:9s} {n:8d} failed (below)", flush=True)
                        continue
                    peer_rows.append(r)
                    ratio = f"{r['cpu_us_per_request'] / native_us:8.2f}" if native_us else f"{'-':>8s}"
                    print(f"{w:10s} {c:5d} {p.name:9s} {n:8d} {r['cpu_us_per_request']:17.1f} {ratio} "
                          f"{r['whole_us_per_request']:16.1f} {r['fixed_ms']:8.0f} {r['rps']:8.0f} "
                          f"{r['emulator_busy']:12.0%} {r['errors']:6d}", flush=True)  # fmt: skip
    finally:
        if emu:
            emu.close()
        for p in peers:
            p.close()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.no_peers:
        print("peers: not run (--no-peers)")
    for line in absent:
        print(f"peers: {line}")
    if peers:
        print("peers (rows above by name; their CPU is the whole process tree's, children reaped, as RUSAGE_CHILDREN "
              "counts it; x native is against pytps native in the same cell):")  # fmt: skip
        peer_notes(peer_rows, peers)
    for failure in peer_failures:
        print(f"peer failed: {failure}")
    for r in cells:
        if r["transport"] == "native" and r["concurrency"] == 64 and r["workload"] in ("chat", "embeddings"):
            us_ok = r["cpu_us_per_request"] <= TARGET_US
            rps_ok = r["rps"] >= TARGET_RPS
            print(f"target {r['workload']} native @64: {r['cpu_us_per_request']:.0f} us/request "
                  f"({'MET' if us_ok else 'NOT MET'}, <= {TARGET_US:.0f}); {r['rps']:.0f} req/s "
                  f"({'MET' if rps_ok else 'NOT MET'}, >= {TARGET_RPS:.0f}; emulator busy "
                  f"{r['emulator_busy']:.0%} of one core)")  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"loadavg": os.getloadavg(), "cells": cells, "peers": peer_rows}, f, indent=1)


if __name__ == "__main__":
    main()
