"""pytps.SSEParser: one test per WHATWG event-stream rule (and per pytps choice), each checked
against hand-written expectations, the pure-Python reference (tests/sse_reference.py), and
the native parser fed in one chunk and one byte at a time. Property tests are in
test_sse_parser_properties.py."""

from __future__ import annotations

import pytest
from sse_harness import E, flatten, run_native, run_reference
from sse_reference import DEFAULT_MAX_LINE_BYTES, RefParser, RefProtocolError, parse

import pytps


def check(stream: bytes, expected, *, max_line_bytes=DEFAULT_MAX_LINE_BYTES, incomplete=False, error=False,
          last_id=None, retry=None):
    ref = parse(stream, max_line_bytes)
    assert [e.astuple() for e in ref.events] == expected, "the reference disagrees with the expectation"
    assert bool(ref.error_positions) == error
    assert ref.incomplete == incomplete
    if last_id is not None:
        assert ref.last_event_id == last_id
    if retry is not None:
        assert ref.retry == retry
    # The native parser, in one feed and byte by byte, agrees feed for feed.
    for chunks in ([stream], [stream[i : i + 1] for i in range(len(stream))]):
        assert run_native(chunks, max_line_bytes) == run_reference(chunks, max_line_bytes)
    assert flatten(run_native([stream], max_line_bytes))[:2] == (expected, error)


# ---- line ends --------------------------------------------------------------------------


def test_rule_lf_ends_a_line():
    check(b"data: a\n\n", [E("a")])


def test_rule_crlf_ends_a_line():
    check(b"data: a\r\n\r\n", [E("a")])


def test_rule_cr_ends_a_line():
    check(b"data: a\r\r", [E("a")])


def test_rule_mixed_line_ends():
    check(b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\n\n", [E("a\nb\nc"), E("d")])


def test_rule_lf_cr_is_two_line_ends():
    # LF then CR is not one terminator: it makes a blank line.
    check(b"data: a\n\rdata: b\n\n", [E("a"), E("b")])


def test_rule_crlf_split_across_chunks_is_one_line_end():
    p = pytps.SSEParser()
    assert p.feed(b"data: a\r") == []
    assert p.feed(b"\n") == []  # the LF completes the CRLF, it is not a blank line
    assert p.feed(b"data: b\r") == []
    assert [e._astuple() for e in p.feed(b"\r")] == [E("a\nb")]


def test_rule_cr_at_chunk_end_then_cr_is_a_blank_line():
    p = pytps.SSEParser()
    assert p.feed(b"data: a\r") == []
    assert [e._astuple() for e in p.feed(b"\r")] == [E("a")]


# ---- byte order mark --------------------------------------------------------------------


def test_rule_leading_bom_is_dropped():
    check(b"\xef\xbb\xbfdata: a\n\n", [E("a")])


def test_rule_bom_before_field_name_is_dropped():
    # Without the drop the first field would be named "\ufeffdata" and ignored.
    check(b"\xef\xbb\xbfevent: x\ndata: a\n\n", [E("a", event="x")])


def test_rule_only_one_bom_is_dropped():
    check(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", [E("b")])


def test_rule_bom_after_the_start_is_data():
    check(b"data: \xef\xbb\xbfa\n\n", [E("\ufeffa")])
    check(b"\n\xef\xbb\xbfdata: a\n\n", [])


def test_rule_bom_split_across_chunks_is_dropped():
    p = pytps.SSEParser()
    assert p.feed(b"\xef") == [] and p.feed(b"") == [] and p.feed(b"\xbb") == []
    assert [e._astuple() for e in p.feed(b"\xbfdata: a\n\n")] == [E("a")]


def test_rule_partial_bom_is_line_data():
    # EF BB followed by 'd' is not a BOM: it is an invalid sequence inside the first line.
    check(b"\xef\xbbdata: a\n\ndata: b\n\n", [E("b")])
    check(b"\xef\xbb", [], incomplete=True)
    check(b"\xef", [], incomplete=True)


# ---- fields -------------------------------------------------------------------------------


def test_rule_comment_line_is_ignored():
    check(b": keep-alive\ndata: a\n:\n: x: y\n\n", [E("a")])


def test_rule_field_without_colon_has_empty_value():
    check(b"data\ndata\n\n", [E("\n")])
    check(b"event\ndata: a\n\n", [E("a")])


def test_rule_one_leading_space_is_removed():
    check(b"data:  two\n\n", [E(" two")])


def test_rule_no_space_after_colon():
    check(b"data:a\n\n", [E("a")])


def test_rule_value_keeps_later_colons_and_trailing_space():
    check(b"data: a: b :c \n\n", [E("a: b :c ")])


def test_rule_field_names_are_case_sensitive():
    check(b"Data: a\nDATA: b\n\n", [])


def test_rule_field_name_with_space_is_unknown():
    check(b"data : a\n data: b\n\n", [])


def test_rule_unknown_fields_are_ignored():
    check(b"foo: bar\ndata: a\nevent_: y\nretry_: 5\n\n", [E("a")])


# ---- data and dispatch --------------------------------------------------------------------


def test_rule_data_lines_are_joined_with_lf():
    check(b"data: a\ndata: b\ndata: c\n\n", [E("a\nb\nc")])


def test_rule_empty_data_value_adds_an_empty_line():
    check(b"data:\n\n", [E("")])
    check(b"data: \ndata:\ndata: x\n\n", [E("\n\nx")])


def test_rule_dispatch_only_at_a_blank_line():
    check(b"data: a\ndata: b\n", [], incomplete=True)


def test_rule_blank_line_without_data_dispatches_nothing():
    check(b"\n\n\nid: 1\n\nevent: x\n\n", [], last_id="1")


def test_rule_blank_line_without_data_resets_the_event_type():
    check(b"event: x\n\ndata: a\n\n", [E("a")])


def test_rule_event_type_defaults_to_message():
    check(b"data: a\n\n", [E("a", event="message")])


def test_rule_empty_event_type_means_message():
    check(b"event:\ndata: a\n\n", [E("a")])


def test_rule_event_type_is_reset_after_dispatch():
    check(b"event: x\ndata: a\n\ndata: b\n\n", [E("a", event="x"), E("b")])


def test_rule_last_event_type_wins():
    check(b"event: x\nevent: y\ndata: a\n\n", [E("a", event="y")])


def test_rule_data_keeps_nul_and_control_bytes():
    check(b"data: a\x00b\x0bc\x0cd\x1c\n\n", [E("a\x00b\x0bc\x0cd\x1c")])


# ---- id ---------------------------------------------------------------------------------


def test_rule_id_persists_across_events():
    check(b"id: 7\ndata: a\n\ndata: b\n\n", [E("a", id="7"), E("b", id="7")], last_id="7")


def test_rule_id_is_set_without_dispatch():
    check(b"id: 7\n\ndata: a\n\n", [E("a", id="7")])


def test_rule_id_with_nul_is_ignored():
    check(b"id: 1\nid: 2\x003\ndata: a\n\n", [E("a", id="1")], last_id="1")


def test_rule_empty_id_resets_the_id():
    check(b"id: 1\ndata: a\n\nid\ndata: b\n\nid: 2\nid:\ndata: c\n\n", [E("a", id="1"), E("b"), E("c")])


def test_rule_id_applies_to_the_event_being_built():
    check(b"data: a\nid: 9\n\n", [E("a", id="9")])


# ---- retry --------------------------------------------------------------------------------


def test_rule_retry_sets_the_reconnection_time():
    check(b"retry: 3000\ndata: a\n\ndata: b\n\n", [E("a", retry=3000), E("b", retry=3000)], retry=3000)


NOT_DIGITS = [b"", b" 5", b"5 ", b"-5", b"+5", b"1.5", b"5a", b"0x10", "\u0661".encode(), b"\xef\xbc\x95"]


@pytest.mark.parametrize("value", NOT_DIGITS)
def test_rule_retry_must_be_ascii_digits(value):
    check(b"retry: 10\nretry: " + value + b"\ndata: a\n\n", [E("a", retry=10)], retry=10)


def test_rule_retry_accepts_zero_and_leading_zeros():
    check(b"retry: 0\ndata: a\n\nretry: 0042\ndata: b\n\n", [E("a", retry=0), E("b", retry=42)])


def test_rule_retry_must_fit_int64():
    big = str(2**63 - 1).encode()
    check(b"retry: " + big + b"\ndata: a\n\n", [E("a", retry=2**63 - 1)])
    check(b"retry: 5\nretry: " + str(2**63).encode() + b"\ndata: a\n\n", [E("a", retry=5)])
    check(b"retry: 5\nretry: " + b"9" * 5000 + b"\ndata: a\n\n", [E("a", retry=5)])
    check(b"retry: 000000000000000000000000000001\ndata: a\n\n", [E("a", retry=1)])


def test_rule_retry_without_data_persists():
    check(b"retry: 5\n\ndata: a\n\n", [E("a", retry=5)])


# ---- text decoding ----------------------------------------------------------------------


def test_rule_invalid_utf8_becomes_replacement_characters():
    # One U+FFFD per maximal subpart, as bytes.decode("utf-8", "replace").
    raw = b"\xff\xc3(\xe2\x82\xf0\x9f\x98\xed\xa0\x80\x80"
    check(b"data: " + raw + b"\n\n", [E(raw.decode("utf-8", "replace"))])
    assert raw.decode("utf-8", "replace").count("\ufffd") == 8


def test_rule_truncated_sequence_before_line_end_is_replaced():
    check(b"data: \xe2\x82\ndata: \xac\n\n", [E("\ufffd\n\ufffd")])


def test_rule_four_byte_characters_pass_through():
    check("event: \U0001f600\ndata: \U0001f600 \u00e9\u4e2d\nid: \U00010348\n\n".encode(),
          [E("\U0001f600 \u00e9\u4e2d", event="\U0001f600", id="\U00010348")])


def test_rule_invalid_bytes_in_field_name_make_an_unknown_field():
    check(b"dat\xe1: a\ndata: b\n\n", [E("b")])


# ---- end of stream: close() ---------------------------------------------------------------


def test_rule_unterminated_last_line_is_not_processed():
    check(b"data: a\n\nid: 5", [E("a")], incomplete=True, last_id="")


def test_rule_close_after_complete_events_is_false():
    check(b"data: a\n\n", [E("a")], incomplete=False)
    check(b"", [], incomplete=False)


def test_rule_close_with_data_buffered_is_true():
    check(b"data: a\n", [], incomplete=True)
    check(b"data:\n", [], incomplete=True)


def test_rule_close_inside_a_non_comment_line_is_true():
    check(b"data: a\n\nevent: x", [E("a")], incomplete=True)
    check(b"d", [], incomplete=True)


def test_rule_close_inside_a_comment_is_false():
    check(b"data: a\n\n: keep-alive", [E("a")], incomplete=False)


def test_rule_close_after_fields_without_data_is_false():
    # The event type and id were set, but no data: nothing would have been dispatched.
    check(b"event: x\nid: 1\n", [], incomplete=False, last_id="1")


def test_rule_close_after_a_trailing_cr_is_false():
    check(b"data: a\r\r", [E("a")], incomplete=False)


def test_close_resets_the_parser():
    p = pytps.SSEParser()
    p.feed(b"id: 1\nretry: 5\nevent: x\ndata: a\n")
    assert (p.last_event_id, p.retry) == ("1", 5)
    assert p.close() is True
    assert (p.last_event_id, p.retry) == ("", None)
    assert p.close() is False
    # A new stream: a BOM is dropped again, no state leaks from the old one.
    assert [e._astuple() for e in p.feed(b"\xef\xbb\xbfdata: b\n\n")] == [E("b")]
    p.feed(b"data: c\r")
    assert p.close() is True
    assert [e._astuple() for e in p.feed(b"\ndata: d\n\n")] == [E("d")]  # the pending CR is gone too


# ---- max_line_bytes -----------------------------------------------------------------------


def test_rule_overlong_line_discards_its_event():
    check(b"data: a\ndata: 123456\ndata: b\n\ndata: c\n\n", [E("c")], max_line_bytes=8, error=True)


def test_rule_line_of_exactly_max_line_bytes_is_accepted():
    check(b"data: 12\n\n", [E("12")], max_line_bytes=8)
    check(b"data: 123\n\n", [], max_line_bytes=8, error=True)


def test_rule_bound_excludes_terminator_and_bom():
    check(b"\xef\xbb\xbfdata: 12\r\n\r\n", [E("12")], max_line_bytes=8)


def test_rule_fields_after_overflow_are_ignored_until_blank_line():
    stream = b"id: 1\nretry: 1\ndata: 123456789\nid: 2\nretry: 2\nevent: x\ndata: a\n\ndata: b\n\n"
    check(stream, [E("b", id="1", retry=1)], max_line_bytes=10, error=True)


def test_rule_overflow_at_the_start_of_an_event():
    check(b"data: 123456789\n\ndata: b\n\n", [E("b")], max_line_bytes=10, error=True)


def test_rule_data_buffer_is_bounded():
    # Each line fits; the data buffer "1234\n5678\n" (10 bytes) does not fit 9.
    stream = b"data:1234\ndata:5678\n\ndata: ok\n\n"
    check(stream, [E("1234\n5678"), E("ok")], max_line_bytes=10)
    check(stream, [E("ok")], max_line_bytes=9, error=True)
    check(b"data\n" * 4 + b"\n", [E("\n\n\n")], max_line_bytes=4)
    check(b"data\n" * 5 + b"\n", [], max_line_bytes=4, error=True)


def test_rule_overlong_comment_still_overflows():
    check(b": 123456789\ndata: a\n\ndata: b\n\n", [E("b")], max_line_bytes=8, error=True)


def test_rule_unterminated_overlong_line_is_detected_before_its_end():
    check(b"data: a\n\ndata: 123456789", [E("a")], max_line_bytes=8, error=True, incomplete=False)


def test_rule_close_after_overflow_is_false():
    check(b"data: 123456789\ndata: a\n", [], max_line_bytes=8, error=True, incomplete=False)


def test_rule_partial_bom_counts_once_decided():
    # EF BB at the start might be a BOM until the next byte: then it is 2 line bytes.
    check(b"\xef\xbb\n", [], max_line_bytes=1, error=True)
    check(b"\xef\xbbx\n", [], max_line_bytes=2, error=True)
    check(b"\xef\xbb\n", [], max_line_bytes=2)
    check(b"\xef\xbb", [], max_line_bytes=1, incomplete=True)
    check(b"\xef\xbb\xbf\n", [], max_line_bytes=1)


def test_overflow_error_carries_the_events_of_the_call():
    p = pytps.SSEParser(max_line_bytes=16)
    with pytest.raises(pytps.ProtocolError) as info:
        p.feed(b"data: a\n\ndata: 0123456789abcdef\n\ndata: b\n\n")
    assert isinstance(info.value, ValueError)
    assert "max_line_bytes=16" in str(info.value)
    assert [e._astuple() for e in info.value.events] == [E("a"), E("b")]
    # Usable afterwards.
    assert [e._astuple() for e in p.feed(b"data: c\n\n")] == [E("c")]
    assert p.close() is False


def test_reference_parser_raises_like_the_native_one():
    r = RefParser(max_line_bytes=16)
    with pytest.raises(RefProtocolError) as info:
        r.feed(b"data: a\n\ndata: 0123456789abcdef")
    assert [e.astuple() for e in info.value.events] == [E("a")]
    assert r.feed(b"\n\ndata: b\n\n")[0].astuple() == E("b")
    assert r.close() is False
