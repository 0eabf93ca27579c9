"""A tiny byte-level BPE tokenizer saved as a Hugging Face tokenizer folder, so that the peers
(aiperf, guidellm, vllm bench serve) can make and count prompts with no download."""
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
words = ("the quick brown fox jumps over a lazy dog while seven bright stars shine on calm water "
         "benchmark token latency server model request stream answer question time first").split()
text = [" ".join(words[(i * 7 + j) % len(words)] for j in range(40)) for i in range(200)]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"],
                                                   initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps({
    "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
    "model_max_length": 1000000}))
(out / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": 600, "bos_token_id": 0, "eos_token_id": 0}))
print(out)
