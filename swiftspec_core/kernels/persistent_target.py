"""A target's fixed-width forward on the persistent kernel's target build (use_kernels("persistent")
on a Llama-3-8B-shaped model; NOTES v194): every layer in one launch of cuda/persistent.cu built
with TARGET (persistent_target.cuh), phases Q (qkv, its RMSNorm inside), T and M (the attention
as the fused forward's own items and merge: keys by position, so a token's bits do not depend on
the width, its row or where its ancestors sit, and every decoder stays exact), O, A, B; then the
final norm and lm_head as the fused forward's. Its activations x0, attn and out are plain rows.
One GPU, bf16; prefills stay on the torch path."""
from __future__ import annotations

import torch

from ..staged import TOKEN
from .forward import head_logits
from .persistent import (CHUNK, LLAMA_8B, SHARED_MAX, activation_slices, compiled, grid_blocks, launch, launch_args,
                         shared_bytes)
from .persistent_forward import MAX_WIDTH, PAGE_K, TARGET_SHAPES, is_target, page_images, unsupported

DEPTHS = (4, 3, 2)  # ring slots: the deepest whose shared memory fits the width (4 to 8 rows, 3 to 12)
STATIC_RESERVE = 9216  # the target build's static shared memory: ptxas counts 8832 bytes at 8 rows
KV, HEAD_DIM = TARGET_SHAPES["n_kv_heads"], TARGET_SHAPES["head_dim"]
Q_ROWS_A_TOKEN = TARGET_SHAPES["n_heads"] // KV  # a token's q heads of one kv head


def ring_depth(width: int) -> int | None:
    """The deepest ring of PAGE_K pages that fits a block of the target build at `width` rows, or None."""
    return next((d for d in DEPTHS
                 if shared_bytes(PAGE_K, d, width, LLAMA_8B, target=True) + STATIC_RESERVE <= SHARED_MAX), None)


class PersistentTarget:
    """The persistent forward of a Llama-3-8B-shaped `model` at one width over `cache`: its kernel
    (the target build for that width), activations (x0, attn, out plain; mid, y in slices), the
    attention's partials. __call__(block, span) -> [width, vocab] fp32 logits, by device work only
    (graph-safe)."""

    def __init__(self, model, cache, width: int):
        why = unsupported(model)
        if why is None and not is_target(model.args):
            why = "the target build takes Llama-3-8B's shapes"
        if why is None and not (1 <= width <= MAX_WIDTH and ring_depth(width)):
            why = f"a width of {width} tokens does not fit its shared memory (1..{MAX_WIDTH})"
        if why is not None:
            raise ValueError(f"the persistent target forward: {why}")
        self.model, self.cache, self.width = model, cache, width
        self.images = page_images(model, qkv_layout="down")  # qkv's rows in order: phase Q writes them plain
        self.fn, self.shared = compiled(PAGE_K, ring_depth(width), width, LLAMA_8B, target=True)
        self.sms = grid_blocks(model.device, LLAMA_8B, PAGE_K)
        layers, dev, dim = len(model.layers), model.device, model.args.dim

        def plain(k: int) -> torch.Tensor:
            return torch.zeros(layers, width, k, dtype=torch.bfloat16, device=dev)

        self.attn, self.out, self.qkv = plain(dim), plain(dim), plain(LLAMA_8B.qkv)
        self.mid = activation_slices(layers, k=dim, m=width, page_k=PAGE_K, device=dev)
        self.y = activation_slices(layers, k=LLAMA_8B.ffn, m=width, page_k=PAGE_K, device=dev)
        chunks, rows = -(-cache.rows // CHUNK), width * Q_ROWS_A_TOKEN  # the most a span needs; q rows a kv head
        self.part_ml = torch.zeros(KV, chunks, rows, 2, device=dev)  # [KV, chunks, rows, 2] fp32: max, sum
        self.part_acc = torch.zeros(KV, chunks, rows, HEAD_DIM, dtype=torch.bfloat16, device=dev)  # unnormalized
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)
        self.stamps = None  # int64 [layers * 6 + 1, sms, 8] to read its phases (persistent_timeline.py)

    def __call__(self, block: torch.Tensor, span: int) -> torch.Tensor:
        """block: the staged [width, 4 + V] int64 (staged.py), contiguous on the device: the kernel
        reads each token's position, row and visible rows from it; span: the cache rows attention may read."""
        m, im = self.model, self.images
        h = m.embed_tokens(block[:, TOKEN])  # [width, H]: x0, plain rows
        args = launch_args(x0=h, gate_up=im["gate_up"], down=im["down"], y=self.y, out=self.out,
                           counters=self.counters, layers=len(m.layers), m=self.width, deep=True,
                           mlp_norm=im["mlp_norm"], eps=m.args.norm_eps, attn=self.attn, o=im["o"], mid=self.mid,
                           qkv_w=im["qkv"], qkv_norm=im["attn_norm"], qkv=self.qkv, k_cache=self.cache.k,
                           v_cache=self.cache.v, cos=m.cos, sin=m.sin, part_ml=self.part_ml, part_o=self.part_acc,
                           block=block, span=span, cache_rows=self.cache.rows, head_dim=HEAD_DIM,
                           stamps=self.stamps)
        launch(self.fn, self.sms, self.shared, args)
        return head_logits(m, self.out[-1])
