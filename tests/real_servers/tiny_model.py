"""A tiny llama-architecture GGUF model with random weights, made here (nothing is downloaded).

The vocabulary is llama.cpp's SentencePiece test vocabulary (``ggml-vocab-llama-spm.gguf``, in the
llama-cpp-python sdist); the network is 4 layers of width 256 with random weights. The output
layer is shaped so that sampling only ever draws a token that is a whole ASCII word (``▁word``,
letters only): every such token's logit is about +16 and every other token's (EOS included)
about −16, so with any sampler settings EOS is practically never drawn (e^−32 against each
word) and each streamed chunk carries exactly one whole token. That makes the server's own
counts (usage.completion_tokens, timings.predicted_n) and pytps's event count comparable one
to one, at any length asked for, without ``ignore_eos``.

How: the token embeddings have a constant first component (1.0) and small random others, and
the blocks' random weights are small, so after the final RMS norm the first component of the
hidden state is ≈ √256 = 16 whatever the context; the output row of a word token has +1 there,
every other row −1, and random values elsewhere (so the words drawn vary).

``tool_markers=True`` makes the tool-calling variant (test_llama_server_tools.py,
docs/real-servers.md, "The live tool loop"): ``<tool_call>`` and ``</tool_call>`` are added as
user-defined tokens (one token each, as in the vocabularies of models that call tools this way)
and SentencePiece's space prefix is off (else the chat template's generation prompt, which the
server feeds to the grammar before the first token, is tokenized with a leading space that the
grammar refuses: "Failed to initialize samplers"). The output layer then ranks, wherever
llama.cpp's tool-call grammar allows them: EOS (first component 12), ``<tool_call>`` (8),
``</tool_call>`` (4), the words (1), other tokens (−1), and last (−3) whitespace and every
other token holding "<" or ">". So the first token is the call marker (EOS is not allowed
before a call), the grammar spells the JSON, the call is closed by the closing marker (never by
characters such as "><" that run on into a second call) and EOS follows at once. (A marker at
2 was never drawn: the words' random components put the best word's logit well above 2 × the
first component's share; at 8 the marker's log-probability is 0.0 and the best word's about −19.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

N_LAYERS = 4
WIDTH = 256
N_HEADS = 4
N_FF = 512
CONTEXT = 4096
TOOL_MARKERS = ("<tool_call>", "</tool_call>")
_USER_DEFINED = 4  # llama.cpp's LLAMA_TOKEN_TYPE_USER_DEFINED
_WORD = re.compile(r"^\u2581[A-Za-z]{2,}$")  # SentencePiece's word-start mark, then letters


def word_token_ids(tokens: list[str], token_types: list[int]) -> np.ndarray:
    """The ids of normal tokens that are a whole ASCII word with its leading space."""
    pairs = zip(tokens, token_types, strict=True)
    return np.asarray([i for i, (t, k) in enumerate(pairs) if k == 1 and _WORD.match(t)])


def whitespace_token_ids(tokens: list[str]) -> list[int]:
    """The ids of tokens that are only whitespace: SentencePiece's space marks, or a byte token
    for a space, tab, newline or carriage return."""
    blank = {"<0x09>", "<0x0A>", "<0x0D>", "<0x20>"}
    return [i for i, t in enumerate(tokens) if t in blank or (t and not t.strip("\u2581 \t\n"))]


def write_gguf(writer: Any, out_path: Path) -> Path:
    """Writes a gguf.GGUFWriter's header, metadata and tensors to its file, in that order."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


def make_model(vocab_path: Path, out_path: Path, seed: int = 0, tool_markers: bool = False) -> Path:
    import gguf  # the test extra's; imported here so collecting the tests does not need it

    reader = gguf.GGUFReader(str(vocab_path))
    writer = gguf.GGUFWriter(str(out_path), "llama")
    writer.add_name("pytps-tiny-random")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(N_LAYERS)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(WIDTH // N_HEADS)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    tokens: list[str] = []
    token_types: list[int] = []
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        value = field.contents()
        if tool_markers:
            if key == "tokenizer.ggml.tokens":
                value = [*value, *TOOL_MARKERS]
            elif key == "tokenizer.ggml.scores":
                value = [*value, *(0.0 for _ in TOOL_MARKERS)]
            elif key == "tokenizer.ggml.token_type":
                value = [*value, *(_USER_DEFINED for _ in TOOL_MARKERS)]
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, value, gguf.GGUFValueType.ARRAY, sub_type=field.types[1])
        else:
            writer.add_key_value(key, value, field.types[0])
        if key == "tokenizer.ggml.tokens":
            tokens = value
        elif key == "tokenizer.ggml.token_type":
            token_types = value
    if tool_markers:
        writer.add_add_space_prefix(False)
    n_vocab = len(tokens)
    words = word_token_ids(tokens, token_types)
    assert len(words) > 1000, "the vocabulary has too few word tokens"

    rng = np.random.default_rng(seed)

    def rand(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float16)

    embd = rand(n_vocab, WIDTH)
    embd[:, 0] = 1.0
    writer.add_tensor("token_embd.weight", embd)
    for i in range(N_LAYERS):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(WIDTH, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", rand(WIDTH, WIDTH))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(WIDTH, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", rand(N_FF, WIDTH))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", rand(N_FF, WIDTH))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", rand(WIDTH, N_FF))
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, dtype=np.float32))
    output = rand(n_vocab, WIDTH, scale=0.15)
    output[:, 0] = -1.0
    output[words, 0] = 1.0
    if tool_markers:
        # Where a grammar allows them: end of generation first (after a whole call), then the
        # call marker (the first token), then the closing marker (so a call is closed by it,
        # not by a token such as "><" that would open a second call), then words; whitespace
        # last (the grammar's optional spaces are left out, so a call is short), and with it
        # every other token holding "<" or ">" (a call's close is then the marker token, never
        # characters that could run on into a second call).
        output[whitespace_token_ids(tokens), 0] = -3.0
        angled = [i for i, (t, k) in enumerate(zip(tokens, token_types, strict=True))
                  if (k == 1 and ("<" in t or ">" in t)) or t in ("<0x3C>", "<0x3E>")]  # fmt: skip
        output[angled, 0] = -3.0
        ranked = {"</s>": 12.0, TOOL_MARKERS[0]: 8.0, TOOL_MARKERS[1]: 4.0}
        for token, first in ranked.items():
            output[tokens.index(token)] = 0.0
            output[tokens.index(token), 0] = first
    writer.add_tensor("output.weight", output)

    return write_gguf(writer, out_path)


if __name__ == "__main__":
    import sys

    make_model(Path(sys.argv[1]), Path(sys.argv[2]))
