"""A tiny local Hugging Face tokenizer, made at run time, for the peers' synthetic prompts.

aiperf, vLLM's bench and guidellm count and cut their synthetic prompts with a tokenizer, which they
would otherwise download from a hub by the model's name. This one is a byte-level BPE trained on
pytps's own 477 common English words (pytps/workload/words.py, read as a file: the peer's Python has
no pytps), so those words are one token each as in a real model's BPE and any other text still
encodes (byte-level: no unknown token); it is saved as a tokenizer directory
(tokenizer.json + tokenizer_config.json) that `AutoTokenizer.from_pretrained(DIR)` loads offline.
It needs the `tokenizers` library, which each peer's venv has (through transformers): run it with
the peer's own Python.

    python bench/tiny_tokenizer.py DIR
"""

from __future__ import annotations

import json
import os
import random
import sys

WORDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytps", "workload", "words.py")


def words() -> list[str]:
    """pytps's synthetic-prompt vocabulary, from its source file (a tuple literal)."""
    import ast

    with open(WORDS_FILE) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Tuple):
            return [ast.literal_eval(e) for e in node.value.elts]
    raise SystemExit(f"no word tuple in {WORDS_FILE}")


def make(directory: str) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    os.makedirs(directory, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    vocab = words()
    rng = random.Random(7)
    lines = [" ".join(rng.sample(vocab, 12)) for _ in range(400)] + [" " + " ".join(vocab)]
    tok.train_from_iterator(lines, trainer)
    tok.save(os.path.join(directory, "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1_000_000,
              "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
              "clean_up_tokenization_spaces": False}  # fmt: skip
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(directory, "special_tokens_map.json"), "w") as f:
        json.dump({k: config[k] for k in ("bos_token", "eos_token", "unk_token")}, f, indent=1)
    return directory


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(make(sys.argv[1]))
