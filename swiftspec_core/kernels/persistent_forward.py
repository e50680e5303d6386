"""A draft model's fixed-width forward on the persistent kernel (use_kernels("persistent"); NOTES
v187): every layer in one launch of cuda/persistent.cu (each block's weight pages streamed through
shared memory across the layers' grid barriers), reading the engine's KV cache through tensor maps
and appending to it, then the final norm and lm_head as the fused forward's. Only Llama-3.2-1B's
shapes on one GPU in bf16 (the kernel's shapes are compile-time: cuda/persistent_shapes.cuh);
prefills stay on the torch path. A draft's numerics never change what a decoder emits (the target
verifies every token), so this forward reduces keys by cache row, not by position as the fused
forward's row-invariant attention does."""
from __future__ import annotations

import torch

from ..staged import TOKEN
from . import tensor_map
from .forward import head_logits
from .persistent import (CHUNK, FFN, HEAD_DIM, HIDDEN, KV_HEADS, LLAMA_8B, MASK_WORDS, Q_HEADS, QKV, STATIC_RESERVE,
                         SHARED_MAX, TARGET_HEAD_DIM, activation_slices, attention_scratch, compiled, grid_blocks, launch,
                         launch_args, paged, shared_bytes, unsliced)

SHAPES = dict(dim=HIDDEN, ffn_dim=FFN, n_heads=Q_HEADS, n_kv_heads=KV_HEADS, head_dim=HEAD_DIM)
# The target build's (persistent_target.py: Llama-3-8B's shapes, the attention by position)
TARGET_SHAPES = dict(dim=LLAMA_8B.hidden, ffn_dim=LLAMA_8B.ffn, n_heads=32, n_kv_heads=8, head_dim=TARGET_HEAD_DIM)
PAGE_K, DEPTH = 1024, 4  # the ring measured best at the draft step's width 9 (NOTES v184)
MAX_WIDTH = 16  # the kernel's two n8 tiles of x rows
MAX_TREE_ROWS = 32 * MASK_WORDS  # rows past a step's shared prefix a token's mask holds


def unsupported(model) -> str | None:
    """Why `model` cannot run the persistent forward, or None when it can."""
    if model.device.type != "cuda" or model.dtype != torch.bfloat16:
        return f"it runs bfloat16 on a GPU, not {model.dtype} on {model.device}"
    if model.group.size != 1:
        return "it runs on one GPU (no tensor parallelism)"
    return unsupported_shape(model.args)


def unsupported_shape(args) -> str | None:
    """Why a model of these ModelArgs cannot run the persistent forward (whatever its device), or None."""
    if args.quant != "none" or args.qkv_bias:
        return "it takes bf16 weights without a qkv bias (Llama's)"
    shape = {k: getattr(args, k) for k in SHAPES}
    if shape not in (SHAPES, TARGET_SHAPES):
        return (f"its kernel is built for Llama-3.2-1B's shapes {SHAPES} and Llama-3-8B's {TARGET_SHAPES}, "
                f"not {shape}")
    return None


def is_target(args) -> bool:
    """Whether a model it takes runs the target build (persistent_target.py), not the draft's."""
    return {k: getattr(args, k) for k in TARGET_SHAPES} == TARGET_SHAPES


@torch.no_grad()
def page_images(model, qkv_layout: str = "qkv_rope") -> dict[str, torch.Tensor]:
    """The layers' weights as the kernel's page images and norms, stacked over layers; built once a
    model (~0.8% more bytes than the layers' weights, which the torch prefill keeps using). qkv's
    rows as the draft's attention takes them (qkv_rope), or in order (down: the target build's)."""
    images = model.__dict__.get("_persistent_images")
    if images is None:
        def stack(name: str) -> torch.Tensor:
            return torch.stack([getattr(layer, name).detach() for layer in model.layers])

        images = {"qkv": paged(stack("wqkv"), qkv_layout, PAGE_K), "o": paged(stack("wo"), "down", PAGE_K),
                  "gate_up": paged(stack("w_gate_up"), "gate_up", PAGE_K),
                  "down": paged(stack("w_down"), "down", PAGE_K),
                  "attn_norm": stack("attn_norm"), "mlp_norm": stack("mlp_norm")}
        model.__dict__["_persistent_images"] = images  # not a module attribute: no state_dict entry
    return images


class PersistentLayers:
    """The persistent forward of `model` at one width (a PaddedForward's), over `cache`: its kernel
    (built for that width), activations in slices, the attention's scratch and the cache's tensor
    maps. __call__(block, span) -> [width, vocab] fp32 logits, by device work only (graph-safe)."""

    def __init__(self, model, cache, width: int):
        why = unsupported(model)
        if why is not None:
            raise ValueError(f"the persistent forward: {why}")
        if is_target(model.args):
            raise ValueError("a Llama-3-8B-shaped model runs the target build (persistent_target.PersistentTarget)")
        if not 1 <= width <= MAX_WIDTH:
            raise ValueError(f"the persistent forward takes 1..{MAX_WIDTH} tokens, not {width}")
        self.shared = shared_bytes(PAGE_K, DEPTH, width)
        if self.shared + STATIC_RESERVE > SHARED_MAX:
            raise ValueError(f"a {PAGE_K}x{DEPTH} ring at width {width} needs {self.shared} bytes of shared memory")
        self.model, self.cache, self.width = model, cache, width
        self.images = page_images(model)
        self.fn, _ = compiled(PAGE_K, DEPTH, width)
        self.sms = grid_blocks(model.device)
        layers, dev = len(model.layers), model.device

        def slices(*lead: int, k: int = HIDDEN) -> torch.Tensor:
            return activation_slices(*lead, k=k, m=width, page_k=PAGE_K, device=dev)

        self.x0, self.y = slices(), slices(layers, k=FFN)
        self.out, self.mid, self.attn = slices(layers), slices(layers), slices(layers)
        self.qkv = torch.zeros(layers, width, QKV, dtype=torch.bfloat16, device=dev)
        self.qbuf, self.part_ml, self.part_o = attention_scratch(width, -(-cache.rows // CHUNK), dev)  # the most a span needs
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)
        self.maps = tuple(tensor_map.tiled(c, (HEAD_DIM, 1, CHUNK, 1)) for c in (cache.k, cache.v))

    def __call__(self, block: torch.Tensor, span: int) -> torch.Tensor:
        """block: the staged [width, 4 + V] int64 (staged.py), contiguous on the device: the kernel
        reads each token's position, row and tree from it; span: the cache rows attention may read."""
        m, im = self.model, self.images
        h = m.embed_tokens(block[:, TOKEN])  # [width, H]
        self.x0[:, :self.width, :PAGE_K].copy_(h.view(self.width, HIDDEN // PAGE_K, PAGE_K).transpose(0, 1))
        args = launch_args(x0=self.x0, gate_up=im["gate_up"], down=im["down"], y=self.y, out=self.out,
                           counters=self.counters, layers=len(m.layers), m=self.width, deep=True,
                           mlp_norm=im["mlp_norm"], eps=m.args.norm_eps, attn=self.attn, o=im["o"], mid=self.mid,
                           qkv_w=im["qkv"], qkv_norm=im["attn_norm"], qkv=self.qkv, k_cache=self.cache.k,
                           v_cache=self.cache.v, cos=m.cos, sin=m.sin, qbuf=self.qbuf, part_ml=self.part_ml,
                           part_o=self.part_o, block=block, span=span,
                           cache_rows=self.cache.rows, maps=self.maps)
        launch(self.fn, self.sms, self.shared, args)
        return head_logits(m, unsliced(self.out[-1], self.width))  # the last layer's output [width, H]
