"""A layer's o_proj and MLP block in one launch of cuda/persistent.cu, inside the fused forward
(kernels/forward.py) of a model whose shapes the kernel is built for: o_proj plus the residual,
the MLP's RMSNorm, gate_up with SwiGLU, down_proj plus the residual, each block's weight pages
streamed through shared memory across the phases' grid barriers (NOTES v193: at Llama-3-8B's
shapes and M = 8, 94.8 us a layer against our three GEMMs' 109.9, the floor 90.7). qkv and the
attention stay our kernels, so the forward stays row-invariant (the kernel's sums run in an order
fixed by the shapes and the grid, whatever M) and every decoder exact. The kernel reads the
layer's input h and the attention's output, and writes the layer's output, as plain rows (its
PLAIN_IO build): no layout copies between it and our kernels.

Its page images are a second copy of o_proj's, gate_up's and down's weights (the torch prefill
keeps reading the originals): ~12.3 GB at Llama-3-8B, built once a model."""
from __future__ import annotations

import torch

from . import build
from .gemm import gemm_reference
from .gemm_epilogue import gemm_swiglu_reference
from .persistent import (LLAMA_8B, SHARED_MAX, STATIC_RESERVE, activation_slices, compiled, grid_blocks, launch,
                         launch_args, paged, shared_bytes)

SHAPES = {(LLAMA_8B.hidden, LLAMA_8B.ffn): LLAMA_8B}  # (dim, ffn_dim) -> the kernel's shape: measured there
PAGE_K = 1024  # one page size for every width, so one set of page images serves them all
DEPTHS = (4, 3, 2)  # ring slots, the deepest that fits a width's shared memory (4 to M = 8, 3 to 13, 2 to 16)


def ring_depth(width: int, shape=LLAMA_8B) -> int | None:
    """The deepest ring of PAGE_K pages whose shared memory fits a block at `width` rows, or None."""
    return next((d for d in DEPTHS if shared_bytes(PAGE_K, d, width, shape) + STATIC_RESERVE <= SHARED_MAX), None)


def unsupported(model, width: int) -> str | None:
    """Why the fused forward of `model` at `width` tokens cannot run its o_proj and MLP blocks on the
    persistent kernel (then it runs our GEMMs), or None when it can."""
    a = model.args
    if model.device.type != "cuda" or model.dtype != torch.bfloat16:
        return f"it runs bfloat16 on a GPU, not {model.dtype} on {model.device}"
    if model.group.size != 1 or a.quant != "none":
        return "it runs bf16 weights on one GPU"
    if (a.dim, a.ffn_dim) not in SHAPES:
        return f"its kernel is built for (dim, ffn_dim) in {sorted(SHAPES)}, not {(a.dim, a.ffn_dim)}"
    if not 1 <= width <= 16 or ring_depth(width, SHAPES[a.dim, a.ffn_dim]) is None:
        return f"a width of {width} rows does not fit its shared memory"
    return None


@torch.no_grad()
def page_images(model) -> dict[str, torch.Tensor]:
    """o_proj's, gate_up's and down's weights as the kernel's page images and the MLP norms, stacked
    over layers; built once a model (at its first fused forward: a graph capture's warm-up runs)."""
    images = model.__dict__.get("_persistent_block_images")
    if images is None:
        def stack(name: str) -> torch.Tensor:
            return torch.stack([getattr(layer, name).detach() for layer in model.layers])

        images = {"o": paged(stack("wo"), "down", PAGE_K), "gate_up": paged(stack("w_gate_up"), "gate_up", PAGE_K),
                  "down": paged(stack("w_down"), "down", PAGE_K), "mlp_norm": stack("mlp_norm")}
        model.__dict__["_persistent_block_images"] = images  # not a module attribute: no state_dict entry
    return images


class PersistentBlocks:
    """The o_proj and MLP blocks of `model` at one width: the kernel built for it, the blocks'
    activations in slices and two plain output buffers (a launch never writes the rows it reads).
    __call__(i, h, attn) -> layer i's output, by device work only (graph-safe)."""

    def __init__(self, model, width: int):
        why = unsupported(model, width)
        if why is not None:
            raise ValueError(f"the persistent o_proj and MLP blocks: {why}")
        a, dev = model.args, model.device
        self.shape = SHAPES[a.dim, a.ffn_dim]
        self.model, self.width, self.eps = model, width, a.norm_eps
        self.fn, self.shared = compiled(PAGE_K, ring_depth(width, self.shape), width, self.shape, plain_io=True)
        self.sms = grid_blocks(dev, self.shape, PAGE_K)
        self.images = page_images(model)
        self.mid = activation_slices(k=a.dim, m=width, page_k=PAGE_K, device=dev)  # h + o_proj(attn)
        self.y = activation_slices(k=a.ffn_dim, m=width, page_k=PAGE_K, device=dev)  # swiglu(gate_up(...))
        self.outs = torch.zeros(2, width, a.dim, dtype=torch.bfloat16, device=dev)
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)

    def __call__(self, i: int, h: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """h, attn: [width, dim] bf16 contiguous (layer i's input and its attention's output).
        -> [width, dim]: mid + down(swiglu(gate_up(rmsnorm(mid)))), mid = h + o_proj(attn)."""
        im, out = self.images, self.outs[i % 2]
        args = launch_args(x0=h, gate_up=im["gate_up"][i], down=im["down"][i], y=self.y, out=out,
                           counters=self.counters, layers=1, m=self.width, deep=True, mlp_norm=im["mlp_norm"][i],
                           eps=self.eps, attn=attn, o=im["o"][i], mid=self.mid)
        launch(self.fn, self.sms, self.shared, args, pdl=build.PDL)
        return out


def blocks_reference(layer, h: torch.Tensor, attn: torch.Tensor, eps: float) -> torch.Tensor:
    """What PersistentBlocks computes for a layer (the fused forward's three GEMMs' references: the
    kernel rounds where they do, its fp32 sums in its own order). -> [M, dim]"""
    mid = gemm_reference(attn, layer.wo, residual=h)
    y = gemm_swiglu_reference(mid, layer.w_gate_up, norm=(layer.mlp_norm, eps))
    return gemm_reference(y, layer.w_down, residual=mid)


def for_width(model, width: int) -> PersistentBlocks:
    """The model's PersistentBlocks at `width`, built at the first call (graph captures share it:
    they replay one at a time on one stream)."""
    built = model.__dict__.setdefault("_persistent_blocks", {})
    if width not in built:
        built[width] = PersistentBlocks(model, width)
    return built[width]
