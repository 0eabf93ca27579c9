"""pytps.workload.request_formats: request bodies per API, auth headers, model lists, error messages and redaction."""

import json

import pytest

import pytps
from pytps.errors import ConfigError, ProtocolError
from pytps.workload.request_formats import (
    ANTHROPIC_VERSION,
    API_NAMES,
    auth_headers,
    build_request,
    default_api_key_env,
    describe_error,
    models_path,
    parse_models,
    rejects_usage_request,
)
from pytps.workload.synthetic import Prompt
from pytps.measure.redact import Redactor, redact

KEY = "sk-test-4f9a1c77e2b0d3aa"
P = Prompt(0, None, "Tell me a story.", 5, 64)
USER = [{"role": "user", "content": "Tell me a story."}]


def test_api_names_match_the_recorder_dialects():
    assert tuple(pytps.DIALECTS) == API_NAMES
    for api in API_NAMES:
        pytps.StreamRecorder(api)


def test_each_apis_path_is_the_first_of_the_cores_table():
    # One source for the paths: the core's table (core/dialect_table.hpp), which the emulator routes on.
    for api in API_NAMES:
        assert build_request(api, "m", P)[0] == pytps._core.DIALECT_PATHS[api][0]


def test_openai_chat():
    path, body = build_request("openai-chat", "m", P)
    assert path == "/v1/chat/completions"
    assert body == {"model": "m", "messages": USER, "max_tokens": 64, "stream": True, "stream_options": {"include_usage": True}}


def test_openai_completions():
    path, body = build_request("openai-completions", "m", P)
    assert path == "/v1/completions"
    assert body == {"model": "m", "prompt": "Tell me a story.", "max_tokens": 64, "stream": True,
                    "stream_options": {"include_usage": True}}


def test_openai_responses():
    path, body = build_request("openai-responses", "m", P)
    assert path == "/v1/responses"
    assert body == {"model": "m", "input": USER, "max_output_tokens": 64, "stream": True}


def test_anthropic():
    path, body = build_request("anthropic", "claude", P)
    assert path == "/v1/messages"
    assert body == {"model": "claude", "messages": USER, "max_tokens": 64, "stream": True}


def test_ollama():
    path, body = build_request("ollama", "llama3", P)
    assert path == "/api/chat"
    assert body == {"model": "llama3", "messages": USER, "stream": True, "options": {"num_predict": 64}}


def test_usage_request_only_when_streaming_and_asked():
    for api in ("openai-chat", "openai-completions"):
        assert "stream_options" not in build_request(api, "m", P, include_usage=False)[1]
        _, body = build_request(api, "m", P, stream=False)
        assert body["stream"] is False and "stream_options" not in body
    for api in ("openai-responses", "anthropic", "ollama"):
        assert build_request(api, "m", P, stream=False)[1]["stream"] is False
        assert "stream_options" not in build_request(api, "m", P)[1]


def test_chat_records_map_onto_each_api():
    msgs = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": [{"type": "text", "text": "Name a "}, {"type": "text", "text": "river."}]},
        {"role": "assistant", "content": "Nile."},
        {"role": "user", "content": "Another."},
    ]
    p = Prompt(1, msgs, None, None, 10)
    assert build_request("openai-chat", "m", p)[1]["messages"] == msgs
    assert build_request("openai-completions", "m", p)[1]["prompt"] == "Be terse.\n\nName a river.\n\nNile.\n\nAnother."
    anth = build_request("anthropic", "m", p)[1]
    assert anth["system"] == "Be terse." and [m["role"] for m in anth["messages"]] == ["user", "assistant", "user"]
    for api in ("ollama", "openai-responses"):
        key = "messages" if api == "ollama" else "input"
        contents = [m["content"] for m in build_request(api, "m", p)[1][key]]
        assert contents == ["Be terse.", "Name a river.", "Nile.", "Another."]
    assert p.messages[1]["content"][0] == {"type": "text", "text": "Name a "}  # the prompt is untouched


def test_extra_body_deep_merges_last_and_none_deletes():
    _, body = build_request(
        "openai-chat", "m", P,
        extra_body={"temperature": 0, "ignore_eos": True, "stream_options": {"continuous_usage_stats": True},
                    "max_tokens": None, "max_completion_tokens": 64},
    )
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["temperature"] == 0 and body["ignore_eos"] is True
    assert "max_tokens" not in body and body["max_completion_tokens"] == 64
    _, body = build_request("ollama", "m", P, extra_body={"options": {"temperature": 0.2}, "stream": False})
    assert body["options"] == {"num_predict": 64, "temperature": 0.2} and body["stream"] is False
    extra = {"options": {"stop": ["x"]}}
    _, body = build_request("ollama", "m", P, extra_body=extra)
    body["options"]["stop"].append("y")
    assert extra == {"options": {"stop": ["x"]}}  # the caller's dict is not shared


def test_without_usage_request():
    # The retry after a server refused stream_options: the same body without it.
    _, body = build_request("openai-chat", "m", P)
    _, retry = build_request("openai-chat", "m", P, include_usage=False)
    assert "stream_options" not in retry and "stream_options" in body
    assert retry == {k: v for k, v in body.items() if k != "stream_options"}
    assert build_request("anthropic", "m", P, include_usage=False) == build_request("anthropic", "m", P)


@pytest.mark.parametrize(
    "status, text, expected",
    [
        (400, '{"error": {"message": "Unrecognized request argument supplied: stream_options"}}', True),
        (422, '{"detail": [{"loc": ["body", "stream_options", "include_usage"], "msg": "extra fields not permitted"}]}', True),
        (400, '{"error": {"message": "max_tokens is too large"}}', False),
        (500, "stream_options crashed", False),
    ],
)
def test_rejects_usage_request(status, text, expected):
    assert rejects_usage_request(status, text) is expected


@pytest.mark.parametrize(
    "args, needle",
    [
        (("bedrock", "m", P), "unknown API 'bedrock'"),
        (("openai-chat", "", P), "model name is required"),
        (("openai-chat", "m", Prompt(0, None, "x", None, 0)), "max_tokens"),
    ],
)
def test_build_request_errors(args, needle):
    with pytest.raises(ConfigError, match=needle) as e:
        build_request(*args)
    if "unknown" in needle:
        assert all(api in str(e.value) for api in API_NAMES)
    with pytest.raises(ConfigError, match="JSON object"):
        build_request("openai-chat", "m", P, extra_body=["x"])


# ---- auth ------------------------------------------------------------------------------------


def test_auth_headers():
    for api in ("openai-chat", "openai-completions", "openai-responses", "ollama"):
        assert auth_headers(api, KEY) == {"Authorization": f"Bearer {KEY}"}
    assert auth_headers("openai-chat", None) == {} and auth_headers("ollama", None) == {} and auth_headers("ollama", "") == {}
    assert auth_headers("anthropic", KEY) == {"x-api-key": KEY, "anthropic-version": ANTHROPIC_VERSION}
    assert auth_headers("anthropic", None) == {"anthropic-version": "2023-06-01"}
    assert auth_headers("openai-chat", f"  {KEY}\n") == {"Authorization": f"Bearer {KEY}"}
    assert default_api_key_env("anthropic") == "ANTHROPIC_API_KEY"
    assert {default_api_key_env(a) for a in API_NAMES if a != "anthropic"} == {"OPENAI_API_KEY"}


@pytest.mark.parametrize("bad_key", [KEY[:10] + "\n" + KEY[10:], KEY + "\x00", KEY[:8] + "é" + KEY[8:]])
@pytest.mark.parametrize("api", API_NAMES)
def test_a_bad_key_is_refused_without_echoing_it(api, bad_key):
    with pytest.raises(ConfigError) as e:
        auth_headers(api, bad_key)
    msg = str(e.value)
    assert KEY not in msg and KEY[:10] not in msg and KEY[10:] not in msg
    assert default_api_key_env(api) in msg


# ---- models ----------------------------------------------------------------------------------


def test_models():
    assert models_path("openai-chat") == "/v1/models" and models_path("anthropic") == "/v1/models"
    assert models_path("ollama") == "/api/tags"
    openai = {"object": "list", "data": [{"id": "gpt-x", "object": "model"}, {"id": "gpt-y"}, {"object": "model"}]}
    assert parse_models("openai-chat", openai) == ["gpt-x", "gpt-y"]
    assert parse_models("openai-completions", json.dumps(openai)) == ["gpt-x", "gpt-y"]
    assert parse_models("anthropic", {"data": [{"id": "claude-a", "type": "model"}], "has_more": False}) == ["claude-a"]
    ollama = {"models": [{"name": "llama3:8b", "model": "llama3:8b", "size": 1}, {"name": "qwen2:0.5b"}]}
    assert parse_models("ollama", json.dumps(ollama).encode()) == ["llama3:8b", "qwen2:0.5b"]
    assert parse_models("ollama", {"models": []}) == []


def test_models_of_the_wrong_shape():
    with pytest.raises(ProtocolError, match='without a "data" list'):
        parse_models("openai-chat", {"models": [{"name": "x"}]})
    with pytest.raises(ProtocolError, match='without a "models" list'):
        parse_models("ollama", {"data": []})
    with pytest.raises(ProtocolError, match="did not answer JSON: <html>"):
        parse_models("openai-chat", "<html>" + "x" * 1000)
    with pytest.raises(ProtocolError) as e:
        parse_models("openai-chat", "<html>" + "x" * 1000)
    assert len(str(e.value)) < 400


# ---- errors and redaction --------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, expected",
    [
        ('{"error": {"message": "The model `x` does not exist", "type": "invalid_request_error"}}', "HTTP 404: The model `x` does not exist"),
        ('{"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}', "HTTP 404: model: x"),
        ('{"error": "model \\"x\\" not found, try pulling it first"}', 'HTTP 404: model "x" not found, try pulling it first'),
        ('{"detail": "Not Found"}', "HTTP 404: Not Found"),
        (b"<html>\n<body>404   Not Found</body></html>", "HTTP 404: <html> <body>404 Not Found</body></html>"),
    ],
)
def test_describe_error_finds_the_message(body, expected):
    assert describe_error(404, body) == expected


def test_describe_error_is_short():
    assert len(describe_error(500, "x" * 10_000)) <= 320


def test_redact():
    assert redact(f"key={KEY}; again {KEY}", [KEY]) == "key=***; again ***"
    assert redact("abc and abcd", ["abc", "abcd", None, ""]) == "abc and ***"  # < 4 chars is not a secret
    long, short = "secret-1234567890", "secret-1234"
    assert redact(f"{long} {short}", [short, long]) == "*** ***"
    assert redact("nothing here", []) == "nothing here"


def test_a_key_never_survives_in_messages_built_here():
    echoing = [
        json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}),
        json.dumps({"error": f"unauthorized: Bearer {KEY}"}),
        "x" * 290 + KEY,  # a key straddling the length limit
        json.dumps({"headers": {"Authorization": f"Bearer {KEY}"}}),
    ]
    for body in echoing:
        for text in (body, body.encode()):
            msg = describe_error(401, text, Redactor([KEY]))
            assert KEY not in msg and KEY[:12] not in msg, msg
        with pytest.raises(ProtocolError) as e:
            parse_models("openai-chat", body, Redactor([KEY]))
        assert KEY not in str(e.value) and KEY[:12] not in str(e.value)
    assert KEY not in json.dumps(build_request("openai-chat", "m", P)[1])
