"""resolver_host: an ASCII host reaches getaddrinfo as the bytes CPython's idna codec would make
of it (so a run never imports the codec, issue 42); any other host is left to the codec."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from pytps.transport.network import resolver_host


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "api.example.com", "a" * 63, "example.com."])
def test_an_ascii_host_is_the_bytes_the_idna_codec_makes(host):
    assert resolver_host(host) == host.encode("idna")


@pytest.mark.parametrize("host", ["bücher.example", "a" * 64 + ".example", "a..b", ".example", "a" * 64])
def test_other_hosts_are_left_to_the_codec(host):
    # Non-ASCII names are encoded by it; names it refuses (an empty or over-long label) still get
    # its UnicodeError from getaddrinfo, not a resolver error.
    assert resolver_host(host) == host


def test_a_bytes_host_resolves_as_the_str_would():
    assert socket.getaddrinfo(resolver_host("127.0.0.1"), 80) == socket.getaddrinfo("127.0.0.1", 80)


def test_resolving_an_ascii_host_imports_no_idna_codec():
    code = "import sys; from pytps.transport.http1 import resolve; resolve('localhost', 80)\n"
    code += "print('encodings.idna' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
