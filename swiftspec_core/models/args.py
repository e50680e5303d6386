"""The shape of one decoder stack, read from a transformers config (Llama or Qwen2 family)."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ModelArgs:
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    vocab_size: int
    norm_eps: float
    rope_theta: float
    rope_scaling: tuple | None  # sorted (key, value) pairs of the HF rope_scaling dict, or None
    qkv_bias: bool  # Qwen2 has a bias on q, k and v
    tie_embeddings: bool
    max_position: int
    # Transformer layers' projections (wqkv, wo, w_gate_up, w_down): "none" (the dtype) or "awq"
    # (4-bit codes in groups of quant_group input columns, models/awq.py); embeddings, norms and
    # lm_head keep the dtype either way.
    quant: str = "none"
    quant_group: int = 128

    @classmethod
    def from_hf_config(cls, cfg) -> "ModelArgs":
        model_type = getattr(cfg, "model_type", "llama")
        if model_type not in ("llama", "qwen2"):
            raise ValueError(f"model_type {model_type!r} is not supported (llama and qwen2 are)")
        n_heads = cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
        scaling = getattr(cfg, "rope_scaling", None)
        rope_params = getattr(cfg, "rope_parameters", None)  # transformers >= 5 keeps theta here
        theta = getattr(cfg, "rope_theta", None)
        if rope_params:
            theta = rope_params.get("rope_theta", theta)
            if rope_params.get("rope_type", "default") != "default":
                scaling = rope_params
        if scaling and scaling.get("rope_type", scaling.get("type", "default")) == "default":
            scaling = None
        quant = getattr(cfg, "quantization_config", None) or {}  # a hub AWQ checkpoint's config.json says so
        quant = quant if isinstance(quant, dict) else quant.to_dict()
        awq = quant.get("quant_method") == "awq"
        return cls(
            dim=cfg.hidden_size,
            n_layers=cfg.num_hidden_layers,
            n_heads=n_heads,
            n_kv_heads=getattr(cfg, "num_key_value_heads", None) or n_heads,
            head_dim=head_dim,
            ffn_dim=cfg.intermediate_size,
            vocab_size=cfg.vocab_size,
            norm_eps=cfg.rms_norm_eps,
            rope_theta=float(theta if theta is not None else 10000.0),
            rope_scaling=tuple(sorted((k, v) for k, v in scaling.items() if not isinstance(v, (list, dict))))
            if scaling else None,
            qkv_bias=model_type == "qwen2" or bool(getattr(cfg, "attention_bias", False)),
            tie_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
            max_position=getattr(cfg, "max_position_embeddings", 4096),
            quant="awq" if awq else "none",
            quant_group=int(quant.get("group_size", quant.get("q_group_size", 128))) if awq else 128,
        )

    def with_(self, **changes) -> "ModelArgs":
        return replace(self, **changes)

    def weight_bytes(self, bytes_per_param: int = 2) -> int:
        """Bytes one forward must read: every weight once (the HBM floor of a decode step). Under
        AWQ a layer weight [N, K] is N * K / 2 bytes of codes plus, per group of K, N fp16 scales
        and N 4-bit zero points; the lm_head stays at bytes_per_param."""
        attn = self.dim * self.head_dim * (2 * self.n_heads + 2 * self.n_kv_heads)
        mlp = 3 * self.dim * self.ffn_dim
        head = self.vocab_size * self.dim  # lm_head; the embedding row gather is negligible
        layers = self.n_layers * (attn + mlp)  # parameters of the quantizable projections
        if self.quant == "awq":
            return awq_bytes(layers, self.quant_group) + bytes_per_param * head
        return bytes_per_param * (layers + head)

    def stored_bytes(self, bytes_per_param: int = 2) -> int:
        """Bytes the weights take in memory: weight_bytes and the embedding table where lm_head is
        not it (norms and biases left out: a lower bound, for refusing what cannot fit)."""
        return self.weight_bytes(bytes_per_param) + (0 if self.tie_embeddings else
                                                     bytes_per_param * self.vocab_size * self.dim)


def awq_bytes(params: int, group: int) -> int:
    """Bytes of `params` layer weights in AWQ (models/awq.py): a 4-bit code each, and per group of
    `group` inputs of an output column a 4-bit zero point and an fp16 scale."""
    return params // 2 + params // group * 5 // 2
