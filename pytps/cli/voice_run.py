"""`pytps run --api openai-speech | openai-transcriptions | openai-realtime` and `pytps run
--pipeline stt,chat,tts`: the flags, one call of pytps.app.voice, and the lines printed
(pytps.report.voice_console)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _finish(
    data: dict[str, Any], out_dir: Path, args: argparse.Namespace, render: Callable[[dict[str, Any]], str]
) -> int:
    if args.json:
        print(json.dumps(data["summary"], indent=2))
    else:
        print(render(data))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0 if data["summary"]["ok"] else 3


def cmd_voice(args: argparse.Namespace) -> int:
    from pytps.app.voice import voice_job
    from pytps.report.voice_console import render_voice

    if args.html is not None:
        from pytps.cli.report import check_html_available

        check_html_available()
    data, out_dir = voice_job(vars(args), _say)
    code = _finish(data, out_dir, args, render_voice)
    if args.html is not None:
        from pytps.report.html_voice import write_voice_html

        print(f"report: {write_voice_html(data, out_dir, args.html or None)}", file=sys.stderr)
    return code


def cmd_voice_turn(args: argparse.Namespace) -> int:
    from pytps.app.voice import voice_turn_job
    from pytps.report.voice_console import render_turns

    data, out_dir = voice_turn_job(vars(args), _say)
    return _finish(data, out_dir, args, render_turns)


def cmd_realtime(args: argparse.Namespace) -> int:
    from pytps.app.voice import realtime_job
    from pytps.report.voice_console import render_realtime

    data, out_dir = realtime_job(vars(args), _say)
    return _finish(data, out_dir, args, render_realtime)
