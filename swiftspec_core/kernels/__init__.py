"""Fused, row-invariant latency kernels (cuda/), one Python entry per op with its torch reference.

A token's result never depends on how many tokens share the forward, where it sits in it, or
where its ancestors sit in the cache: every reduction runs in an order fixed by the data's own
positions. That is what makes every decoder emit exactly ar's tokens in bf16 (issue 10).
"""

MAX_ROWS = 16  # the most tokens one forward of these kernels takes (the GEMM's M)


def shape_supported(args) -> bool:
    """Whether these kernels take a model of this shape (attention: head_dim 64 or 128, whole GQA
    groups; 16-byte rows everywhere)."""
    return (args.head_dim in (64, 128) and args.n_heads % args.n_kv_heads == 0
            and args.dim % 8 == 0 and args.ffn_dim % 8 == 0)
