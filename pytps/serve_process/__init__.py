"""Launching the server under test (`--serve CMD`, docs/tuning.md): the command template and its
grid (`grid`), the process in its own group with its log kept and redacted (`process`), waiting
until it is ready (`ready`), its start-up figures (`startup`), what it says about itself
(`facts`), hooks between cells (`hooks`), and its CPU and memory from /proc (`usage`).

Nothing here runs a benchmark: the application layer drives it around a run, a sweep or a
capacity search.
"""
