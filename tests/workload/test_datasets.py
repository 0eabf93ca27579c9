"""pytps.workload.datasets and DatasetWorkload: JSONL and ShareGPT files, replay order, clear errors."""

import json

import pytest

from pytps.errors import ConfigError
from pytps.workload.datasets import estimate_tokens
from pytps.workload.synthetic import DatasetWorkload, LengthSpec

# ---- estimate_tokens -------------------------------------------------------------------------


def test_estimate_tokens_handles_prose_code_and_cjk():
    assert estimate_tokens("the cat sat on the mat") == round(6 * 1.3)
    assert estimate_tokens("") == 1
    code = "for(i=0;i<n;i++){a[i]=b[i]*c[i]+d[i];}"
    assert estimate_tokens(code) == round(len(code) / 4)
    assert estimate_tokens("你好世界" * 10) == 40


# ---- DatasetWorkload -------------------------------------------------------------------------


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(*records):
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_dataset_jsonl_prompts_and_messages(tmp_path):
    msgs = [{"role": "system", "content": "Terse."}, {"role": "user", "content": "Name a river."}]
    path = write(tmp_path, "d.jsonl", jsonl({"prompt": "Say hi.", "max_tokens": 7}, {"messages": msgs, "max_tokens": 9}) + "\n\n")
    w = DatasetWorkload.from_file(path, None, seed=0)
    assert len(w) == 2 and w.skipped == 0
    got = {w.prompt(i).text: w.prompt(i) for i in range(2)}
    assert got["Say hi."].messages == [{"role": "user", "content": "Say hi."}] and got["Say hi."].max_tokens == 7
    assert got["Terse.\n\nName a river."].messages == msgs and got["Terse.\n\nName a river."].max_tokens == 9
    assert all(p.input_tokens_target is None and p.planned_tokens >= 1 for p in got.values())


def test_dataset_output_tokens_override_record_max_tokens(tmp_path):
    path = write(tmp_path, "d.jsonl", jsonl({"prompt": "a", "max_tokens": 7}, {"prompt": "b"}))
    w = DatasetWorkload.from_file(path, LengthSpec.parse("100-200"), seed=1)
    toks = [w.prompt(i).max_tokens for i in range(50)]
    assert all(100 <= t <= 200 for t in toks) and len(set(toks)) > 5
    assert toks == [DatasetWorkload.from_file(path, "100-200", seed=1).prompt(i).max_tokens for i in range(50)]


def test_dataset_sharegpt_uses_first_human_turn_and_reply_length(tmp_path):
    reply = " ".join(["word"] * 100)
    data = [
        {"id": "a", "conversations": [{"from": "human", "value": "Q1"}, {"from": "gpt", "value": reply},
                                      {"from": "human", "value": "Q2"}, {"from": "gpt", "value": "x"}]},
        {"id": "b", "conversations": [{"from": "gpt", "value": "orphan reply"}]},
        {"id": "c", "conversations": []},
        {"id": "d", "conversations": [{"from": "human", "value": "no answer"}]},
        {"id": "e", "conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "Q3"},
                                      {"from": "gpt", "value": "short reply"}]},
    ]
    path = write(tmp_path, "sharegpt.json", json.dumps(data, indent=1))
    w = DatasetWorkload.from_file(path, None, seed=0)
    assert len(w) == 2 and w.skipped == 3
    got = {w.prompt(i).text: w.prompt(i).max_tokens for i in range(2)}
    assert got == {"Q1": estimate_tokens(reply), "Q3": estimate_tokens("short reply")}
    assert got["Q1"] == 130
    # With an output length given, a conversation without a reply is still a usable prompt.
    assert len(DatasetWorkload.from_file(path, "64", seed=0)) == 3
    assert w.describe()["skipped"] == 3 and w.describe()["kind"] == "dataset"


def test_dataset_cycles_through_a_seeded_shuffle(tmp_path):
    path = write(tmp_path, "d.jsonl", jsonl(*({"prompt": f"p{k}", "max_tokens": 1} for k in range(20))))
    w = DatasetWorkload.from_file(path, None, seed=5)
    first = [w.prompt(i).text for i in range(20)]
    assert sorted(first) == sorted(f"p{k}" for k in range(20))
    assert first != [f"p{k}" for k in range(20)]
    assert [w.prompt(i).text for i in range(20, 40)] == first
    assert [w.prompt(i).index for i in range(20, 23)] == [20, 21, 22]
    assert [DatasetWorkload.from_file(path, None, seed=5).prompt(i).text for i in range(20)] == first
    assert [DatasetWorkload.from_file(path, None, seed=6).prompt(i).text for i in range(20)] != first


def test_dataset_prompts_are_copies(tmp_path):
    path = write(tmp_path, "d.jsonl", jsonl({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}))
    w = DatasetWorkload.from_file(path, None)
    w.prompt(0).messages[0]["content"] = "changed"
    assert w.prompt(0).messages[0]["content"] == "hi"


def test_dataset_json_list_of_prompt_records(tmp_path):
    path = write(tmp_path, "d.json", json.dumps([{"prompt": "x", "max_tokens": 2}, {"prompt": "y", "max_tokens": 2}]))
    assert sorted(DatasetWorkload.from_file(path, None).prompt(i).text for i in range(2)) == ["x", "y"]


@pytest.mark.parametrize(
    "name, text, needles",
    [
        ("d.jsonl", '{"prompt": "a", "max_tokens": 1}\n{"prompt": "b", "max_tokens": 1}\n{"prompt": oops}\n', ["d.jsonl:3:", "not valid JSON"]),
        ("d.json", '[\n{"conversations": []},\n{"conversations": [}\n]', ["d.json:3:", "not valid JSON"]),
        ("d.jsonl", '{"prompt": "a", "max_tokens": 1}\n{"text": "b", "id": 2}\n', ["d.jsonl:2:", '"prompt"', '"messages"', "keys: id, text"]),
        ("d.jsonl", "", ["empty"]),
        ("d.jsonl", "\n  \n", ["empty"]),
        ("d.json", "[]", ["no usable prompts"]),
        ("d.json", json.dumps([{"conversations": [{"from": "gpt", "value": "x"}]}]), ["no usable prompts", "1 conversations skipped"]),
        ("d.jsonl", '{"prompt": "a", "max_tokens": 0}\n', ["d.jsonl:1:", "max_tokens must be an integer >= 1"]),
        ("d.jsonl", '{"prompt": "a", "max_tokens": "5"}\n', ["max_tokens must be an integer >= 1"]),
        ("d.jsonl", '{"prompt": "", "max_tokens": 5}\n', ["non-empty string"]),
        ("d.jsonl", '{"messages": [], "max_tokens": 5}\n', ["non-empty list"]),
        ("d.jsonl", '{"messages": [{"content": "x"}], "max_tokens": 5}\n', ["messages[0]", "role"]),
        ("d.jsonl", '{"prompt": "a", "max_tokens": 1}\n["a"]\n', ["d.jsonl:2:", "expected a JSON object"]),
        ("d.jsonl", '{\n  "prompt": "a",\n  "max_tokens": 3\n}\n', ["d.jsonl:1:", "one JSON object"]),
    ],
)
def test_dataset_errors_say_where_and_what(tmp_path, name, text, needles):
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as e:
        DatasetWorkload.from_file(path, None)
    for needle in needles:
        assert needle in str(e.value)


def test_dataset_missing_file_and_directory(tmp_path):
    with pytest.raises(ConfigError, match="not found.*nope.jsonl"):
        DatasetWorkload.from_file(tmp_path / "nope.jsonl", None)
    with pytest.raises(ConfigError, match="directory"):
        DatasetWorkload.from_file(tmp_path, None)
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"prompt": "caf\xe9", "max_tokens": 1}\n')
    with pytest.raises(ConfigError, match="UTF-8"):
        DatasetWorkload.from_file(bad, None)


def test_dataset_calibrate_is_a_no_op(tmp_path):
    path = write(tmp_path, "d.jsonl", jsonl({"prompt": "a b c", "max_tokens": 1}))
    w = DatasetWorkload.from_file(path, None)
    before = w.prompt(0)
    w.calibrate(5, 50)
    assert w.prompt(0) == before
