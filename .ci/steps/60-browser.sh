#!/usr/bin/env bash
# The HTML report in real headless Chromium (tests/report/test_html_browser.py, `pytest -m browser`):
# loads with no console errors, plots non-blank by their pixels, the 10,000-request timeline
# bounded in drawn elements. Debian's chromium is installed when missing.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 && [[ ! -x /usr/bin/chromium ]]; then
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
fi
pytest -m browser
