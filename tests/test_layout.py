"""The C++ tree keeps its rooms apart: what each room may include is the architecture
(docs/architecture.md), so a stray include fails here rather than in a reader's head."""

from __future__ import annotations

import re
from pathlib import Path

CSRC = Path(__file__).resolve().parents[1] / "csrc"

# room -> the rooms its files may include (besides its own)
ALLOWED = {
    "core": set(),                      # plain C++17: no I/O, no Python
    "io": {"core"},                     # event loop, receive stamps
    "client": {"core", "io"},           # the native client engine
    "emulator": {"core", "io"},         # the emulator never depends on the client
    "calibration": {"core", "io"},      # measurements of this machine (the read floor reads with io's loop)
    "bindings": {"core", "io", "client", "emulator", "calibration"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)


def test_every_room_is_known():
    rooms = {p.name for p in CSRC.iterdir() if p.is_dir()}
    assert rooms == set(ALLOWED)


def test_rooms_include_only_what_they_may():
    wrong = []
    for room, allowed in ALLOWED.items():
        for src in sorted((CSRC / room).glob("*.[ch]pp")):
            for target in INCLUDE.findall(src.read_text()):
                if target != room and target not in allowed:
                    wrong.append(f"{src.relative_to(CSRC)} includes {target}/")
    assert not wrong, wrong


def test_core_does_no_io():
    io_headers = re.compile(r"#\s*include\s*<(sys/socket|sys/epoll|netinet/|arpa/|unistd|fcntl|Python)")
    offenders = [p.name for p in (CSRC / "core").glob("*.[ch]pp") if io_headers.search(p.read_text())]
    assert not offenders, offenders
