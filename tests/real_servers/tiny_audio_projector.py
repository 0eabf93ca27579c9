"""A tiny audio projector (``--mmproj``) with random weights for the tiny text model, made here.

llama.cpp's multimodal library (tools/mtmd in the pinned sdist) hears audio through a Whisper-style
encoder and a projector into the text model's embedding space. Of the projector types it knows
(``clip.projector_type``: ultravox, qwen2a, voxtral, glma, meralion, musicflamingo, qwen3a, ...),
``qwen2a`` (Qwen2-Audio, and the audio half of Qwen2.5-Omni) needs the fewest tensors and no
extra keys: the Whisper encoder (two 1-D convolutions, position embeddings, pre-norm
transformer blocks) then one linear layer, ``mm.a.fc`` (clip.cpp, ``load_tensors``, case
``PROJECTOR_TYPE_QWEN2A``; the graph is models/whisper-enc.cpp). Ultravox and Voxtral also need
``clip.audio.projector.stack_factor`` and a two-layer MLP.

What the library asks of the file (clip.cpp ``load_hparams``; names in clip-impl.h), and why
each tensor is shaped as it is (numpy shapes; ggml's are reversed):

- keys: ``clip.has_audio_encoder``, ``clip.projector_type = "qwen2a"``, and under
  ``clip.audio.``: ``embedding_length``, ``feed_forward_length``, ``block_count``,
  ``attention.head_count``, ``attention.layer_norm_epsilon``, ``projection_dim``,
  ``num_mel_bins``;
- ``a.conv1d.1.weight`` (width, mel bins, 3) and ``a.conv1d.2.weight`` (width, width, 3): PyTorch's
  Conv1d layout, F16 as llama.cpp's converter writes them; their biases (width, 1), so they
  broadcast over time;
- ``a.position_embd.weight`` (1500, width): the encoder sees 30 s windows, 3000 mel frames
  halved by the stride-2 convolution (whisper-enc.cpp asserts at least that many rows);
- per block ``a.blk.N.``: ``ln1``/``ln2`` (weight, bias), ``attn_q``/``attn_v``/``attn_out``
  (weight, bias), ``attn_k`` (weight only: the graph asserts that K has no bias), ``ffn_up``/
  ``ffn_down`` (weight, bias); GELU (erf) as Whisper;
- ``mm.a.fc`` (text width, width) and its bias: its output width must equal the text model's
  (mtmd.cpp refuses a mismatch when the server starts).

Each 30 s window of audio (shorter audio is padded to one) becomes 750 embeddings (halved by
the convolution's stride, then by Qwen2-Audio's average pool), between the text pieces
``<|audio_bos|>`` and ``<|audio_eos|>`` (mtmd.cpp, ``init_audio``; in the test vocabulary they
are plain text).

The projector's bias puts 1.0 in the first component, as the text model's own token embeddings
have (tiny_model.py), and its weights are small: the audio positions look like any other token
to the text model, whose output layer then still draws only whole words, so a request for N
tokens streams N.

About 0.5 MB; generated in a few milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tiny_model import WIDTH as TEXT_WIDTH
from tiny_model import write_gguf

AUDIO_WIDTH = 64
AUDIO_HEADS = 2
AUDIO_FF = 128
AUDIO_LAYERS = 1
MEL_BINS = 80
POSITIONS = 1500  # 3000 mel frames a window (30 s), halved by the second convolution's stride
EMBEDDINGS_PER_WINDOW = 750  # positions, halved again by Qwen2-Audio's average pool
WINDOW_S = 30.0


def make_audio_projector(out_path: Path, seed: int = 0) -> Path:
    import gguf  # the test extra's; imported here so collecting the tests does not need it

    writer = gguf.GGUFWriter(str(out_path), "clip")
    writer.add_name("pytps-tiny-random-audio")
    writer.add_bool("clip.has_audio_encoder", True)
    writer.add_string("clip.projector_type", "qwen2a")
    writer.add_uint32("clip.audio.embedding_length", AUDIO_WIDTH)
    writer.add_uint32("clip.audio.feed_forward_length", AUDIO_FF)
    writer.add_uint32("clip.audio.block_count", AUDIO_LAYERS)
    writer.add_uint32("clip.audio.attention.head_count", AUDIO_HEADS)
    writer.add_float32("clip.audio.attention.layer_norm_epsilon", 1e-5)
    writer.add_uint32("clip.audio.projection_dim", TEXT_WIDTH)
    writer.add_uint32("clip.audio.num_mel_bins", MEL_BINS)

    rng = np.random.default_rng(seed)

    def rand(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=np.float32)

    def ones(*shape: int) -> np.ndarray:
        return np.ones(shape, dtype=np.float32)

    w = AUDIO_WIDTH
    writer.add_tensor("a.conv1d.1.weight", rand(w, MEL_BINS, 3).astype(np.float16))
    writer.add_tensor("a.conv1d.1.bias", zeros(w, 1))
    writer.add_tensor("a.conv1d.2.weight", rand(w, w, 3).astype(np.float16))
    writer.add_tensor("a.conv1d.2.bias", zeros(w, 1))
    writer.add_tensor("a.position_embd.weight", rand(POSITIONS, w))
    for i in range(AUDIO_LAYERS):
        p = f"a.blk.{i}"
        for norm in ("ln1", "ln2"):
            writer.add_tensor(f"{p}.{norm}.weight", ones(w))
            writer.add_tensor(f"{p}.{norm}.bias", zeros(w))
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            writer.add_tensor(f"{p}.{name}.weight", rand(w, w))
            if name != "attn_k":  # Whisper's K has no bias; the graph asserts it
                writer.add_tensor(f"{p}.{name}.bias", zeros(w))
        writer.add_tensor(f"{p}.ffn_up.weight", rand(AUDIO_FF, w))
        writer.add_tensor(f"{p}.ffn_up.bias", zeros(AUDIO_FF))
        writer.add_tensor(f"{p}.ffn_down.weight", rand(w, AUDIO_FF))
        writer.add_tensor(f"{p}.ffn_down.bias", zeros(w))
    writer.add_tensor("a.post_ln.weight", ones(w))
    writer.add_tensor("a.post_ln.bias", zeros(w))
    writer.add_tensor("mm.a.fc.weight", rand(TEXT_WIDTH, w))
    fc_bias = zeros(TEXT_WIDTH)
    fc_bias[0] = 1.0  # as the text model's token embeddings (tiny_model.py)
    writer.add_tensor("mm.a.fc.bias", fc_bias)

    return write_gguf(writer, out_path)


if __name__ == "__main__":
    import sys

    make_audio_projector(Path(sys.argv[1]))
