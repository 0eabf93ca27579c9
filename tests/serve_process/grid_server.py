"""grid_server.py MODE PORT: `hang` prints a line and never listens; `ok` serves (the emulator)."""

import sys
import time

import pytps

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "hang":
    print("loading weights", flush=True)
    time.sleep(3600)
emu = pytps.Emulator(port=port, ttft_ms=1, itl_us=100, keep_truth=False).start()
print(f"serving on {emu.base_url}", flush=True)
while True:
    time.sleep(1)
