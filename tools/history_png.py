#!/usr/bin/env python3
"""Makes docs/img/history.png, the trend page pictured in docs/history.md: plants a store of ten
nightly emulator runs with one TTFT regression (tests/planted_history.py), writes its page with
`pytps history --html`, opens it in headless Chromium at 1280 px (tests/chromium_page.py) and saves
the top of the page, quantized to a small palette (< 300 KB).

    python tools/history_png.py [--out docs/img/history.png] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

RENDERED = "window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"
# The section's heading to the end of its plots: what the picture shows.
CROP_JS = """(() => { const s = document.querySelector("div.plots2").getBoundingClientRect();
    return [0, 0, 1280, Math.ceil(s.bottom + scrollY + 10)]; })()"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "history.png"))
    ap.add_argument("--keep", metavar="DIR", help="build the store and page in DIR (default: a temporary folder)")
    args = ap.parse_args()

    import chromium_page
    from PIL import Image
    from planted_history import plant

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        spec, planted = plant(root)
        page = root / "trend.html"
        subprocess.run(
            [sys.executable, "-m", "pytps", "history", "--store", spec, "--endpoint", "127.0.0.1:8000", "--html",
             str(page)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        with chromium_page.Chromium(width=1280, height=900) as browser:
            browser.open(page)
            browser.wait_until(RENDERED)
            left, top, width, height = browser.evaluate(CROP_JS)
            shot = Image.open(io.BytesIO(browser.screenshot())).convert("RGB")
    picture = shot.crop((left, top, left + width, min(top + height, shot.height)))
    picture = picture.quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    picture.save(args.out, optimize=True)
    print(f"{args.out}: {picture.width}x{picture.height}, {Path(args.out).stat().st_size / 1024:.0f} KB "
          f"(planted regression: run {planted})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
