"""Workloads, what each request asks for: synthetic prompts (`synthetic`), datasets
(`datasets`), multi-turn sessions (`sessions`), trace replay (`traces`), local token counting
(`tokenizer`), the word list (`words`), and how each API writes a request (`request_formats`).

`from pytps.workload import LengthSpec, SyntheticWorkload, DatasetWorkload` is the documented
face (docs/run-inputs.md); the names load on first use, so importing one module of the room does
not import the rest."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytps.workload.synthetic import DatasetWorkload, LengthSpec, Prompt, SyntheticWorkload, Workload

__all__ = ["DatasetWorkload", "LengthSpec", "Prompt", "SyntheticWorkload", "Workload"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("pytps.workload.synthetic"), name)
    raise AttributeError(f"module 'pytps.workload' has no attribute {name!r}")
