"""A server that serves (pytps's emulator, in-process) but ignores SIGTERM, as does a child it
starts: only SIGKILL ends them. Usage: stubborn_server.py PORT"""

import os
import signal
import sys
import time

import pytps

signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:  # the child, in the same process group, ignoring SIGTERM too
    while True:
        time.sleep(1)
emu = pytps.Emulator(port=int(sys.argv[1]), ttft_ms=1, itl_us=100, keep_truth=False).start()
print(f"stubborn server on {emu.base_url}", flush=True)
while True:
    time.sleep(1)
