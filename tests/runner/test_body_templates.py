"""BodyTemplates (pytps.runner.body_templates): a generation request's body, made from its shape's
template and the prompt's text, is the bytes build_request() and dumps_body() make of it whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytps.errors import ConfigError
from pytps.measure.fast_json import dumps_body
from pytps.runner.body_templates import BodyTemplates
from pytps.workload import request_formats
from pytps.workload.synthetic import Prompt

_EXTRA = st.sampled_from(
    [
        None,
        {},
        {"temperature": 0.5, "ignore_eos": True},
        {"stream_options": {"continuous_usage_stats": True}},
        {"max_tokens": None, "max_completion_tokens": 9},
        {"messages": None},  # the prompt removed: no template, built whole
        {"prompt": "replaced"},
        {"messages": [{"role": "user", "content": "fixed"}]},
        {"options": {"seed": 3}},
    ]
)
_TEXT = st.text(max_size=40) | st.sampled_from(
    ["", '"quoted" \\ back', "\x00pytps-prompt-text\x00", "é ü 日本 \U0001f600"]
)


def _whole(api, model, prompt, stream, include_usage, extra, images=()):
    path, body = request_formats.build_request(
        api, model, prompt, stream=stream, include_usage=include_usage, extra_body=extra, images=images
    )
    return path, dumps_body(body)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(request_formats.API_NAMES),
    st.sampled_from(["m", "org/model-7b", 'a "quoted" model', "modèle"]),
    st.lists(st.tuples(_TEXT, st.integers(1, 5000), st.booleans(), st.booleans()), min_size=1, max_size=6),
    _EXTRA,
)
def test_a_bodys_bytes_are_the_whole_builds(api, model, requests, extra):
    templates = BodyTemplates(api, extra)
    for i, (text, max_tokens, stream, include_usage) in enumerate(requests):
        prompt = Prompt(i, None, text, None, max_tokens)
        got = templates.request(model, prompt, stream=stream, include_usage=include_usage)
        assert got == _whole(api, model, prompt, stream, include_usage, extra)


def test_a_prompt_of_its_own_messages_is_built_whole():
    templates = BodyTemplates("openai-chat", None)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    prompt = Prompt(0, messages, None, None, 5)
    assert templates.request("m", prompt, stream=True, include_usage=True) == _whole(
        "openai-chat", "m", prompt, True, True, None
    )
    assert templates._shape.cache_info().currsize == 0  # no template was made for it
    # One user message whose content is not the prompt's own text object: built whole too.
    other = Prompt(1, [{"role": "user", "content": "a b"}], "a b", None, 5)
    assert templates.request("m", other, stream=True, include_usage=True) == _whole(
        "openai-chat", "m", other, True, True, None
    )


def test_a_shape_build_request_refuses_raises_as_before():
    templates = BodyTemplates("openai-chat", None)
    prompt = Prompt(0, None, "x", None, 0)
    with pytest.raises(ConfigError, match="max_tokens"):
        templates.request("m", prompt, stream=True, include_usage=True)
    with pytest.raises(ConfigError, match="model name"):
        templates.request(" ", Prompt(0, None, "x", None, 3), stream=True, include_usage=True)


def test_one_template_per_shape():
    templates = BodyTemplates("openai-chat", None)
    for i in range(50):
        templates.request("m", Prompt(i, None, f"words {i}", None, 1 + i % 3), stream=True, include_usage=True)
    assert templates._shape.cache_info().currsize == 3
