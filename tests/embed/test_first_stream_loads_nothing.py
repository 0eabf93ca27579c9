"""Issue 29 (2, 9): the first timed stream of a process is as exact as the hundredth. The docs'
recipe takes `t_send = pytps.now_ns()`, sends, then calls `pytps.time_stream`: nothing between the
two may import numpy (~0.1 s), or the first chunk, already waiting, is stamped that much late."""

from __future__ import annotations

import subprocess
import sys

RECIPE = r"""
import sys
import pytps

t_send = pytps.now_ns()
chunks = [b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n', b"data: [DONE]\n\n"]
timed = pytps.time_stream(iter(chunks), "openai-chat", t_send)
it = iter(timed)
next(it)                                   # the first chunk is stamped here
assert "numpy" not in sys.modules, "numpy was imported before the first chunk's stamp"
timer = pytps.StreamTimer("openai-chat", t_send_ns=t_send)
timer.feed(chunks[0], pytps.now_ns())
assert "numpy" not in sys.modules, "numpy was imported by StreamTimer's feed"
for _ in it:
    pass
rec = timed.record
assert rec is not None and rec.output_tokens == 1 and rec.ttft_s is not None and rec.ttft_s >= 0, rec
print("ok", rec.ttft_s)
"""


def test_the_stamping_path_imports_no_numpy_before_the_first_stamp():
    out = subprocess.run([sys.executable, "-c", RECIPE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")
