"""pytps.transport.base.Transport is the one contract: every transport implements it, none imports
another, and the runner drives a user's own transport through it alone."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from canned_transport import CannedTransport

import pytps
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.transport.base import Transport
from pytps.transport.registry import TRANSPORT_NAMES

TRANSPORT_DIR = Path(pytps.__file__).parent / "transport"
MODULES = sorted(p.stem for p in TRANSPORT_DIR.glob("*_transport.py"))


def test_every_named_transport_has_a_module():
    assert {m.removesuffix("_transport") for m in MODULES} == set(TRANSPORT_NAMES) - {"auto"}


@pytest.mark.parametrize("module", MODULES)
def test_no_transport_imports_another(module):
    tree = ast.parse((TRANSPORT_DIR / f"{module}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[-1])
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[-1] for alias in node.names)
    others = {m for m in MODULES if m != module}
    assert not imported & others, f"{module} imports {imported & others}"


def test_every_transport_implements_the_protocol():
    from pytps.transport.asyncio_transport import AsyncioTransport
    from pytps.transport.httpx_transport import HttpxTransport
    from pytps.transport.native_transport import NativeTransport

    made = [AsyncioTransport("http://127.0.0.1:9"), HttpxTransport("http://127.0.0.1:9"),
            NativeTransport("http://127.0.0.1:9")]
    try:
        for t in made:
            assert isinstance(t, Transport), type(t).__name__
            assert t.name in TRANSPORT_NAMES and isinstance(t.schedule_lead_ns, int)
    finally:
        async def close_all():
            for t in made:
                await t.aclose()

        asyncio.run(close_all())


def test_the_runner_drives_a_users_transport(tmp_path):
    transport = CannedTransport()
    assert isinstance(transport, Transport)
    cfg = make_config("http://127.0.0.1:9", model="m", requests=4, out=tmp_path / "out", input_tokens=8)
    result = asyncio.run(Runner(cfg, transport=transport).run())
    assert len(transport.sent) == 4 and result.metadata["transport"] == "canned"
    s = result.summary
    assert s["requests_ok"] == 4 and s["output_tokens_total"] == 12
    # The stamps the transport gave are the stamps measured: TTFT 1 us, TPOT 1 us.
    assert s["ttft_s"]["p50"] == pytest.approx(1e-6) and s["tpot_s"]["p50"] == pytest.approx(1e-6)
