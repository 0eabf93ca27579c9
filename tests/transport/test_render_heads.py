"""Http1Target.render keeps each (path, headers) head's bytes (issue 42): every request's bytes
are still exactly those of the head written out in full for it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytps.transport import http1
from pytps.transport.base import RequestSpec
from pytps.transport.http1 import Http1Target


def _written_out(target: Http1Target, spec: RequestSpec) -> bytes:
    """The head as render() wrote it for each request before it kept heads."""
    head = [f"POST {target.url.target(spec.path)} HTTP/1.1", f"Host: {target.host_header}"]
    if not any(k.lower() == "content-type" for k in spec.headers):
        head.append("Content-Type: application/json")
    head += ["Accept: text/event-stream", f"Content-Length: {len(spec.body)}"]
    if not any(k.lower() == "accept-encoding" for k in spec.headers):
        head.append("Accept-Encoding: identity")
    head += [f"{k}: {v}" for k, v in spec.headers.items()]
    head += [f"{k}: {v}" for k, v in target.url.auth_for(spec.headers).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + spec.body


_NAMES = st.sampled_from(["Authorization", "content-type", "Accept-Encoding", "X-Request-Id", "X-A", "api-key"])
_HEADERS = st.dictionaries(_NAMES, st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8), max_size=4)
_SPECS = st.lists(
    st.tuples(st.sampled_from(["/v1/chat/completions", "/v1/embeddings", "/x?y=1"]), _HEADERS, st.binary(max_size=40)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(base=st.sampled_from(["http://127.0.0.1:8000", "http://u:p@127.0.0.1:8000/pre?q=1"]), specs=_SPECS)
def test_every_request_has_the_bytes_of_its_head_written_out(base, specs):
    target = Http1Target(base, "test")
    for path, headers, body in specs:
        spec = RequestSpec(index=0, path=path, body=body, headers=headers, dialect="openai-chat")
        assert target.render(spec) == _written_out(target, spec)


def test_a_head_per_request_empties_the_cache_when_full():
    target = Http1Target("http://127.0.0.1:8000", "test")
    headers: dict[str, str] = {}
    for i in range(3 * http1._MAX_HEADS):
        headers["X-Request-Id"] = f"r{i}"  # one shared dict, changed per request (the runner's)
        spec = RequestSpec(index=i, path="/v1/chat/completions", body=b"{}", headers=headers, dialect="openai-chat")
        assert target.render(spec) == _written_out(target, spec)
        assert len(target._heads) <= http1._MAX_HEADS
