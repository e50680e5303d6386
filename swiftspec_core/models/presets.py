"""Model presets: the real shapes (HF config.json fields) of the models the paper runs, plus two tiny ones.

Names (hub id):
    llama-3-70b            meta-llama/Meta-Llama-3-70B-Instruct
    llama-3-8b             meta-llama/Meta-Llama-3-8B-Instruct
    llama-3.2-3b           meta-llama/Llama-3.2-3B-Instruct
    llama-3.2-1b           meta-llama/Llama-3.2-1B-Instruct
    deepseek-coder-33b     deepseek-ai/deepseek-coder-33b-instruct
    deepseek-coder-1.3b    deepseek-ai/deepseek-coder-1.3b-instruct
    qwen2-72b              Qwen/Qwen2-72B-Instruct
    qwen2-1.5b             Qwen/Qwen2-1.5B-Instruct
    r1-distill-qwen-32b    deepseek-ai/DeepSeek-R1-Distill-Qwen-32B
    r1-distill-qwen-1.5b   deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B
    r1-distill-llama-70b   deepseek-ai/DeepSeek-R1-Distill-Llama-70B
    r1-distill-llama-8b    deepseek-ai/DeepSeek-R1-Distill-Llama-8B
    qwen2.5-coder-1.5b     Qwen/Qwen2.5-Coder-1.5B-Instruct   (real weights offline: demo_pair.py)
    qwen2.5-coder-0.5b     Qwen/Qwen2.5-Coder-0.5B-Instruct   (real weights offline: demo_pair.py)
    tiny-llama             none: random weights, byte-level tiny tokenizer (tests, CPU smoke runs)
    tiny-qwen2             none: as tiny-llama, with Qwen2's qkv bias

Only the fields that shape the computation or end a generation are kept; everything else takes
the transformers default for the model_type.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Preset:
    name: str
    hub_id: str | None  # None: no real weights exist (tiny presets)
    config: dict = field(repr=False)  # config.json fields, model_type included

    @property
    def model_type(self) -> str:
        return self.config["model_type"]

    @property
    def is_tiny(self) -> bool:
        return self.hub_id is None

    def hf_config(self):
        """A transformers config (LlamaConfig / Qwen2Config) for this preset."""
        from transformers import AutoConfig

        fields = dict(self.config)
        return AutoConfig.for_model(fields.pop("model_type"), **fields)


# Shared by every Llama-3 tokenizer (128256 entries): <|begin_of_text|> and <|end_of_text|>.
_LLAMA3 = dict(model_type="llama", vocab_size=128256, rms_norm_eps=1e-5, rope_theta=500000.0,
               bos_token_id=128000, tie_word_embeddings=False)
# Llama 3.1 / 3.2 (and the R1 distills built on 3.1 and 3.3) stretch RoPE to 128k this way.
_LLAMA31_ROPE = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                     original_max_position_embeddings=8192)
_DEEPSEEK_CODER = dict(model_type="llama", vocab_size=32256, rms_norm_eps=1e-6, rope_theta=100000.0,
                       rope_scaling=dict(type="linear", factor=4.0), max_position_embeddings=16384,
                       bos_token_id=32013, eos_token_id=32021, tie_word_embeddings=False)
# Qwen2 / Qwen2.5 instruct: <|endoftext|> 151643 is bos, <|im_end|> 151645 ends a turn.
_QWEN2 = dict(model_type="qwen2", rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=32768,
              bos_token_id=151643, eos_token_id=151645)
# The R1 distills on Qwen2.5 keep Qwen's ids in config.json (their tokenizer's bos is 151646).
_R1_QWEN = dict(model_type="qwen2", max_position_embeddings=131072, bos_token_id=151643,
                eos_token_id=151643, tie_word_embeddings=False)


def _shape(hidden, ffn, layers, heads, kv_heads, **rest) -> dict:
    return dict(hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv_heads, **rest)


_TABLE: list[tuple[str, str | None, dict]] = [
    ("llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct",
     _LLAMA3 | _shape(8192, 28672, 80, 64, 8) | dict(max_position_embeddings=8192, eos_token_id=128009)),
    ("llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct",
     _LLAMA3 | _shape(4096, 14336, 32, 32, 8) | dict(max_position_embeddings=8192, eos_token_id=128009)),
    ("llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct",
     _LLAMA3 | _shape(3072, 8192, 28, 24, 8, head_dim=128) | dict(
         max_position_embeddings=131072, rope_scaling=_LLAMA31_ROPE | dict(factor=32.0),
         eos_token_id=[128001, 128008, 128009], tie_word_embeddings=True)),
    ("llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct",
     _LLAMA3 | _shape(2048, 8192, 16, 32, 8, head_dim=64) | dict(
         max_position_embeddings=131072, rope_scaling=_LLAMA31_ROPE | dict(factor=32.0),
         eos_token_id=[128001, 128008, 128009], tie_word_embeddings=True)),
    ("deepseek-coder-33b", "deepseek-ai/deepseek-coder-33b-instruct",
     _DEEPSEEK_CODER | _shape(7168, 19200, 62, 56, 8)),
    ("deepseek-coder-1.3b", "deepseek-ai/deepseek-coder-1.3b-instruct",
     _DEEPSEEK_CODER | _shape(2048, 5504, 24, 16, 16)),
    ("qwen2-72b", "Qwen/Qwen2-72B-Instruct",
     _QWEN2 | _shape(8192, 29568, 80, 64, 8) | dict(vocab_size=152064, tie_word_embeddings=False)),
    ("qwen2-1.5b", "Qwen/Qwen2-1.5B-Instruct",
     _QWEN2 | _shape(1536, 8960, 28, 12, 2) | dict(vocab_size=151936, tie_word_embeddings=True)),
    ("r1-distill-qwen-32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
     _R1_QWEN | _shape(5120, 27648, 64, 40, 8) | dict(vocab_size=152064, rms_norm_eps=1e-5,
                                                      rope_theta=1000000.0)),
    ("r1-distill-qwen-1.5b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
     _R1_QWEN | _shape(1536, 8960, 28, 12, 2) | dict(vocab_size=151936, rms_norm_eps=1e-6,
                                                    rope_theta=10000.0)),
    ("r1-distill-llama-70b", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
     _LLAMA3 | _shape(8192, 28672, 80, 64, 8) | dict(
         max_position_embeddings=131072, rope_scaling=_LLAMA31_ROPE, eos_token_id=128001)),
    ("r1-distill-llama-8b", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
     _LLAMA3 | _shape(4096, 14336, 32, 32, 8) | dict(
         max_position_embeddings=131072, rope_scaling=_LLAMA31_ROPE, eos_token_id=128001)),
    ("qwen2.5-coder-1.5b", "Qwen/Qwen2.5-Coder-1.5B-Instruct",
     _QWEN2 | _shape(1536, 8960, 28, 12, 2) | dict(vocab_size=151936, tie_word_embeddings=True)),
    ("qwen2.5-coder-0.5b", "Qwen/Qwen2.5-Coder-0.5B-Instruct",
     _QWEN2 | _shape(896, 4864, 24, 14, 2) | dict(vocab_size=151936, tie_word_embeddings=True)),
]

# Tiny random-weight models: big enough to exercise GQA, qkv bias and real RoPE, small enough that
# a test prefills in milliseconds. The ids are tiny_tokenizer.py's (384 rows cover its vocabulary).
_TINY = _shape(64, 128, 2, 4, 2) | dict(vocab_size=384, rms_norm_eps=1e-6, rope_theta=10000.0,
                                         max_position_embeddings=2048, tie_word_embeddings=False,
                                         bos_token_id=256, eos_token_id=257)
_TABLE += [
    ("tiny-llama", None, dict(model_type="llama") | _TINY),
    ("tiny-qwen2", None, dict(model_type="qwen2") | _TINY),
]

PRESETS: dict[str, Preset] = {name: Preset(name, hub, cfg) for name, hub, cfg in _TABLE}
