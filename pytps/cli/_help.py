"""What every command's parser shares: its examples under --help."""

from __future__ import annotations

import argparse
from typing import Any


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, examples: str, **kwargs: Any
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with `examples` as written (line breaks kept)."""
    return sub.add_parser(name, epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
