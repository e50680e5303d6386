"""Tiny engines built in-process (no presets, no tokenizer): float64, so greedy ties cannot flip."""
from __future__ import annotations

import torch

from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine, random_state

VOCAB = 384


def tiny_args(qkv_bias: bool = False) -> ModelArgs:
    return ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, ffn_dim=96, vocab_size=VOCAB,
                     norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, qkv_bias=qkv_bias,
                     tie_embeddings=False, max_position=2048)


def engine(state: dict, args: ModelArgs | None = None):
    return build_engine(args or tiny_args(), state, dtype=torch.float64, max_seq_len=1024)


def target_state(seed: int = 0, confidence: float = 3.0, args: ModelArgs | None = None) -> dict:
    """Random weights; `confidence` scales the lm_head so the next-token distribution is peaked
    (a large value makes the argmax child carry almost all probability, as in a good LLM)."""
    state = random_state(args or tiny_args(), torch.float64, seed=seed)
    out = {k: v * 3 if "norm" not in k else v for k, v in state.items()}
    out["lm_head"] = out["lm_head"] * confidence
    return out


def perturbed(state: dict, scale: float, seed: int = 1) -> dict:
    gen = torch.Generator().manual_seed(seed)
    return {k: v if "norm" in k else v + scale * v.std() * torch.randn(v.shape, generator=gen, dtype=v.dtype)
            for k, v in state.items()}


def prompt(n: int = 12, seed: int = 1) -> list[int]:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def random_tree(n: int, size: int, gen: torch.Generator) -> tuple[list[int], list[list[int]]]:
    """Parents (root first) and each node's visible rows (ancestors, itself) for a tree at rows n.."""
    parents = [-1] + [int(torch.randint(0, i, (), generator=gen)) for i in range(1, size)]
    visible = [[n]]
    for i in range(1, size):
        visible.append(visible[parents[i]] + [n + i])
    return parents, visible


def poison_logits(forward) -> None:
    """NaN into every captured graph's logits of a PaddedForward: its replay must write every row read."""
    with torch.inference_mode():
        for _, logits in forward.graphs.values():
            logits.fill_(float("nan"))


def random_step(forward, n: int, size: int, gen: torch.Generator) -> tuple[torch.Tensor, tuple]:
    """A random tree of `size` new tokens at rows n.. after an n-row prefix through `forward` (a
    PaddedForward on the GPU, its logits poisoned first) -> (its logits, and the same step as a
    model's own forward takes it: tokens, positions, rows and tree mask on the device)."""
    from swiftspec_core.tree import tree_mask

    _, visible = random_tree(n, size, gen)
    tokens, rows = torch.randint(0, VOCAB, (size,), generator=gen).tolist(), list(range(n, n + size))
    positions = [n + len(v) - 1 for v in visible]
    poison_logits(forward)
    got = forward(tokens, positions, rows, n, visible).clone()
    dev = lambda x: torch.tensor(x, device="cuda")  # noqa: E731
    return got, (dev(tokens), dev(positions), dev(rows), tree_mask(n, n + size, visible, "cuda"))
