"""grid_server.py MODE PORT: `hang` prints a line and never listens; `exit` exits at once unless
the file named by $GRID_SERVER_OK exists; `ok` serves (the emulator)."""

import os
import sys
import time

import pytps

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "exit" and not os.path.exists(os.environ.get("GRID_SERVER_OK", "/nonexistent")):
    print("cannot open the model", flush=True)
    sys.exit(1)
if mode == "hang":
    print("loading weights", flush=True)
    time.sleep(3600)
emu = pytps.Emulator(port=port, ttft_ms=1, itl_us=100, keep_truth=False).start()
print(f"serving on {emu.base_url}", flush=True)
while True:
    time.sleep(1)
