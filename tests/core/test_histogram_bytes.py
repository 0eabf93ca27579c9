"""pytps.Histogram's binary format: round trips, pickle, processes, and refusing garbage."""

import copy
import multiprocessing
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytps import Histogram

# The layout of docs/histogram.md, independently decoded here.
HEADER = struct.Struct("<8sHBBIqqqqqQqdd")
assert HEADER.size == 88


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def reseal(body: bytes) -> bytes:
    """A tampered header/payload with a valid checksum, to reach the checks behind it."""
    return body + struct.pack("<Q", fnv1a64(body))


def decode(b: bytes) -> dict:
    (magic, version, digits, reserved, length, lowest, highest, count, lo, hi, sum_lo, sum_hi, m2_hi, m2_lo) = (
        HEADER.unpack_from(b)
    )
    payload = b[88 : 88 + length]
    assert len(b) == 88 + length + 8
    assert struct.unpack_from("<Q", b, 88 + length)[0] == fnv1a64(b[: 88 + length])
    counts, index, pos = {}, 0, 0
    while pos < len(payload):
        z, shift = 0, 0
        while True:
            byte = payload[pos]
            pos += 1
            z |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        n = (z >> 1) ^ -(z & 1)
        if n < 0:
            index += -n
        else:
            counts[index] = n
            index += 1
    return dict(
        magic=magic, version=version, digits=digits, reserved=reserved, lowest=lowest, highest=highest,
        count=count, min=lo, max=hi, sum=(sum_hi << 64) + sum_lo, m2=m2_hi + m2_lo, counts=counts,
    )


def sample(seed=0, n=10_000):
    h = Histogram()
    h.record_many(np.random.default_rng(seed).lognormal(13, 2, size=n).astype(np.int64) + 1)
    return h


# ---- the format ---------------------------------------------------------------------------


def test_layout_matches_the_documentation():
    h = Histogram(lowest=1, highest=10**9, significant_digits=3)
    h.record_many([3, 3, 7, 1_500_000])
    d = decode(h.to_bytes())
    assert (d["magic"], d["version"], d["digits"], d["reserved"]) == (b"PTPSHIST", 1, 3, 0)
    assert (d["lowest"], d["highest"], d["count"], d["min"], d["max"]) == (1, 10**9, 4, 3, 1_500_000)
    assert d["sum"] == 1_500_013
    assert d["m2"] == pytest.approx(4 * h.stddev**2)
    assert d["counts"][3] == 2 and d["counts"][7] == 1 and sum(d["counts"].values()) == 4


def test_empty_histogram_is_small():
    b = Histogram().to_bytes()
    assert len(b) == 96
    assert decode(b)["counts"] == {}


def test_encoding_is_compact():
    h = sample()
    assert len(h.to_bytes()) < 20_000  # 10k values over ~20 octaves
    assert h.allocated_bytes > 100_000


# ---- round trips --------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 10**12), max_size=200),
    st.sampled_from([(1, 10**12, 1), (1, 10**12, 3), (7, 10**12, 5), (1000, 10**12, 2)]),
)
def test_bytes_round_trip_is_exact(values, config):
    h = Histogram(*config)
    h.record_many([max(v, config[0]) for v in values])
    b = h.to_bytes()
    back = Histogram.from_bytes(b)
    assert back == h
    assert back.to_bytes() == b
    assert (back.count, back.min, back.max, back.mean, back.stddev) == (h.count, h.min, h.max, h.mean, h.stddev)
    assert (back.lowest, back.highest, back.significant_digits) == config


def test_round_trip_keeps_recording_identically():
    h = sample()
    back = Histogram.from_bytes(h.to_bytes())
    for x in (h, back):
        x.record(12345)
        x.record_corrected(10**8, 10**6)
    assert back == h


def test_from_bytes_accepts_bytes_like_objects():
    h = sample()
    b = h.to_bytes()
    assert Histogram.from_bytes(bytearray(b)) == h
    assert Histogram.from_bytes(memoryview(b)) == h
    assert Histogram.from_bytes(np.frombuffer(b, dtype=np.uint8)) == h
    with pytest.raises(TypeError, match="expects bytes, bytearray or a contiguous memoryview, got str"):
        Histogram.from_bytes("PTPSHIST")


def test_pickle_and_copy_round_trip():
    h = sample()
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(h, protocol)) == h
    c = copy.deepcopy(h)
    assert c == h
    c.record(5)
    assert c != h and c.count == h.count + 1
    assert pickle.loads(pickle.dumps(Histogram())) == Histogram()


def _child_histogram(seed):
    return sample(seed)


def test_histograms_travel_between_processes():
    # spawn, not fork: a forked child of a test worker that runs threads (an emulator, a logger) can
    # inherit a lock held mid-operation and hang for ever (seen once under load).
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        parts = pool.map(_child_histogram, [1, 2, 3])
    total = Histogram()
    for part in parts:
        total.merge(part)
    expected = Histogram()
    for seed in (1, 2, 3):
        expected.merge(sample(seed))
    assert total == expected
    assert total.count == 30_000


def test_equality():
    a, b = sample(1), sample(1)
    assert a == b and not (a != b)
    assert a != sample(2)
    assert Histogram() != Histogram(significant_digits=2)
    assert (Histogram() == "x") is False
    with pytest.raises(TypeError):
        hash(a)


# ---- garbage ------------------------------------------------------------------------------

GOOD = sample().to_bytes()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "truncated: 0 bytes"),
        (b"PTPS", "truncated: 4 bytes"),
        (b"hello world, this is not a histogram at all" * 3, "not a pytps histogram"),
        (b"\x00" * 200, "not a pytps histogram"),
        (GOOD[:50], "truncated: 50 bytes, but the header and checksum alone are 96 bytes"),
        (GOOD[:-1], "truncated: the header announces"),
        (GOOD[:200], "truncated: the header announces"),
        (GOOD + b"\x00", "1 unexpected trailing bytes"),
        (GOOD[:100] + bytes([GOOD[100] ^ 1]) + GOOD[101:], "checksum mismatch"),
        (GOOD[:-1] + bytes([GOOD[-1] ^ 0x80]), "checksum mismatch"),
        (reseal(GOOD[:8] + b"\x02\x00" + GOOD[10:-8]), "format version 2 is not supported"),
        (reseal(GOOD[:11] + b"\x01" + GOOD[12:-8]), "reserved header byte is 1"),
        (reseal(GOOD[:10] + b"\x09" + GOOD[11:-8]), "invalid parameters: .*significant_digits must be in 1..5"),
        (reseal(GOOD[:16] + struct.pack("<q", 0) + GOOD[24:-8]), "invalid parameters: .*lowest must be >= 1"),
        (reseal(GOOD[:32] + struct.pack("<q", 9999) + GOOD[40:-8]), "bucket counts add up to 10000 but the header says count=9999"),
        (reseal(GOOD[:40] + struct.pack("<q", 0) + GOOD[48:-8]), "do not fit the range"),
        (reseal(GOOD[:40] + struct.pack("<q", 2) + GOOD[48:-8]), "min/max do not fall in the first/last non-empty buckets"),
        (reseal(GOOD[:56] + struct.pack("<Qq", 1, 0) + GOOD[72:-8]), "sum of the values lies outside"),
        (reseal(GOOD[:72] + struct.pack("<d", -1.0) + GOOD[80:-8]), "m2 is negative or not finite"),
        (reseal(GOOD[:72] + struct.pack("<d", float("nan")) + GOOD[80:-8]), "m2 is negative or not finite"),
    ],
)
def test_from_bytes_says_what_is_wrong(data, message):
    with pytest.raises(ValueError, match="Histogram.from_bytes: .*" + message):
        Histogram.from_bytes(data)


def _with_payload(payload: bytes, count: int, lo: int = 1, hi: int = 1, total: int | None = None) -> bytes:
    """A Histogram(1, 10**6, 2) image with the given counts payload and header statistics."""
    header = bytearray(Histogram(1, 10**6, 2).to_bytes()[:88])
    struct.pack_into("<I", header, 12, len(payload))
    struct.pack_into("<qqq", header, 32, count, lo, hi)
    struct.pack_into("<Qq", header, 56, count if total is None else total, 0)
    return reseal(bytes(header) + payload)


@pytest.mark.parametrize(
    "data, message",
    [
        (_with_payload(b"\x80", 0, 0, 0), "ends inside a varint"),
        (_with_payload(b"\xff" * 11, 0, 0, 0), "varint longer than 10 bytes"),
        (_with_payload(b"\x00", 0, 0, 0), "zero entry"),
        (_with_payload(b"\xff\xff\x03", 0, 0, 0), "runs past the last bucket"),  # skip 32768 > 1792
        (_with_payload(b"\x01\x04", 0, 0, 0), "bucket counts add up to 2 but the header says count=0"),
        (_with_payload(b"", 0, 5, 5), "an empty histogram must have min, max, sum and m2 all 0"),
        (_with_payload(b"\x01\x04", 2, 1, 1, total=3), "sum of the values lies outside"),
    ],
)
def test_from_bytes_checks_the_counts(data, message):
    with pytest.raises(ValueError, match=message):
        Histogram.from_bytes(data)


def test_handmade_payload_decodes():
    # Index 0 stands for value 0, below lowest: skip it (zigzag(-1) = 1), then 2 at index 1 (zigzag 4).
    h = Histogram.from_bytes(_with_payload(b"\x01\x04", 2))
    assert (h.count, h.min, h.max, h.mean) == (2, 1, 1, 1.0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    try:
        Histogram.from_bytes(data)
    except ValueError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(GOOD) - 1), st.integers(1, 255))
def test_any_flipped_byte_is_caught(pos, xor):
    bad = bytearray(GOOD)
    bad[pos] ^= xor
    with pytest.raises(ValueError):
        Histogram.from_bytes(bytes(bad))
