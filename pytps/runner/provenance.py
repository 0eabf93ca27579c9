"""Provenance (docs/results.md, `metadata.host` and `metadata.server`): the facts about the
measuring host and the measured server that a result needs to be read months later, or joined
with the server's own logs and traces.

Everything here runs before the first request or after the last one, never while requests are
timed; every probe is best effort (a fact that cannot be read is null, never an error).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Informational routes a server may offer (vLLM's /version, llama.cpp's /props), asked after the run.
SERVER_INFO_PATHS = ("/version", "/props")
#: The most of an informational answer kept in results.json.
MAX_INFO_BYTES = 65_536

_IP_MTU = 14  # Linux <netinet/in.h>: the path MTU of a connected socket
_IPV6_MTU = 24


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str | None:
    """The CPU's model name (/proc/cpuinfo on Linux; platform.processor() elsewhere)."""
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return platform.processor() or None


def cgroup_limits() -> dict[str, Any]:
    """The cgroup (v2, else v1) CPU and memory limits of this process: `cpu_limit` in CPUs and
    `memory_limit_bytes`, each null when unlimited or unknown."""
    cpus: float | None = None
    memory: int | None = None
    cpu_max = _read("/sys/fs/cgroup/cpu.max")
    if cpu_max:
        quota, _, period = cpu_max.partition(" ")
        if quota != "max" and period:
            cpus = int(quota) / int(period)
    else:
        quota_v1 = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
        period_v1 = _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
        if quota_v1 and period_v1 and int(quota_v1) > 0:
            cpus = int(quota_v1) / int(period_v1)
    mem = _read("/sys/fs/cgroup/memory.max") or _read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if mem and mem != "max" and int(mem) < 1 << 60:  # v1 writes "unlimited" as a huge number
        memory = int(mem)
    return {"cpu_limit": cpus, "memory_limit_bytes": memory}


def route_mtu(host: str | None, port: int | None) -> int | None:
    """The MTU of the route to the endpoint, as the kernel knows it for a connected UDP socket
    (connecting one sends nothing). Null where the platform does not say."""
    if not host:
        return None
    try:
        from pytps.transport.network import resolver_host  # an ASCII host skips the idna codec

        infos = socket.getaddrinfo(resolver_host(host), port or 80, type=socket.SOCK_DGRAM)
    except OSError:
        return None
    for family, _, _, _, addr in infos:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect(addr)
                if family == socket.AF_INET6:
                    return int(s.getsockopt(socket.IPPROTO_IPV6, _IPV6_MTU))
                return int(s.getsockopt(socket.IPPROTO_IP, _IP_MTU))
        except OSError:
            continue
    return None


def git_commit() -> str | None:
    """The commit of the pytps source tree this runs from (an editable install), else null."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def host_facts(base_url: str) -> dict[str, Any]:
    """`metadata.host`: the measuring host, and the route to the endpoint."""
    from pytps import __version__

    url = urlsplit(base_url)
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "kernel": platform.release(),
        "os": platform.system(),
        "python": platform.python_version(),
        "pytps_version": __version__,
        "pytps_commit": git_commit(),
        **cgroup_limits(),
        "route_mtu": route_mtu(url.hostname, url.port),
    }


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its /v1 (or any) path, query or credentials."""
    url = urlsplit(base_url)
    netloc = url.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if url.port:
        netloc += f":{url.port}"
    return urlunsplit((url.scheme, netloc, "", "", ""))


async def server_facts(base_url: str, *, verify: bool | str = True, timeout_s: float = 2.0) -> dict[str, Any]:
    """`metadata.server`, asked after the run: the `server` header and each informational route's
    JSON answer (null where the server has none). No credentials are sent or kept. Asked the way a
    launched server's facts are (pytps.serve_process.facts.ask_routes): within one deadline,
    timeout_s, each body capped at MAX_INFO_BYTES."""
    from pytps.serve_process.facts import ask_routes

    root = server_root(base_url)
    # /v1/models first: the route every server has, asked for its `server` header.
    urls = {path: root + path for path in ("/v1/models", *SERVER_INFO_PATHS)}
    header, bodies = await ask_routes(
        urls, verify=verify, timeout_s=timeout_s, deadline_s=timeout_s, max_bytes=MAX_INFO_BYTES
    )
    facts: dict[str, Any] = {"server_header": header, "version": None, "props": None}
    for path in SERVER_INFO_PATHS:
        if path in bodies:
            with contextlib.suppress(ValueError):
                facts[path.strip("/")] = json.loads(bodies[path])
    return facts
