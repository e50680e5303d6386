"""One decoder stack for the Llama and Qwen2 families, read top to bottom.

A forward takes T tokens, writes their keys and values into the cache rows it is given and
attends over the first L cache rows under an explicit [T, L] mask. That one signature serves a
decode step, a draft expansion of w leaves and a tree verification. A prefill (a prompt from row
0) passes no mask instead: its attention is causal SDPA over its own T rows (grouped_attention).

Under tensor parallelism (`group.size > 1`) the weights a module holds are its rank's shard
(see sharding.py): q/k/v and gate/up column-parallel, o and down row-parallel (one all-reduce
each), embedding and lm_head split over the vocabulary.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..cache import KVCache
from ..comm.group import Group, SingleGroup
from .args import ModelArgs
from .awq import AWQWeight, TiledAWQWeight, linear, tile
from .rope import apply_rope, rope_tables

# --kernels. persistent: fused, with the fixed-width forwards of the models the persistent kernel
# takes in one launch of cuda/persistent.cu (kernels/persistent_forward.py: Llama-3.2-1B's shapes;
# kernels/persistent_target.py, its target build: Llama-3-8B's) on one GPU. Under it the draft runs
# it (the bench checks the draft fits) and the target where the bench says (engine_kernels).
PERSISTENT = "persistent"
KERNEL_SETS = ("torch", "fused", PERSISTENT)
# A prefill's attention (grouped_attention without a mask); MATH only where the others refuse.
PREFILL_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def engine_kernels(kernels: str, draft: bool, persistent_target: bool = False) -> str:
    """One engine's kernel set in a run under --kernels `kernels`: under persistent the draft's, and
    the target's where persistent_target says it runs it (a Llama-3-8B-shaped target on one GPU,
    the run's verifications narrow: kernel_choice.persistent_target), else fused."""
    return "fused" if kernels == PERSISTENT and not draft and not persistent_target else kernels


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # One fused op (it accumulates in fp32); transformers rounds to the input dtype before the
    # weight multiply, so bf16 may differ from it by one rounding, fp32 not at all.
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, n_kv: int) -> torch.Tensor:
    """GQA as plain batched attention: the G query heads of a kv head share its keys, so stack
    them as G*T query rows of one batch entry per kv head (no key/value copies).

    q: [T, H, hd]; k, v: [L, KV, hd]; mask: [T, L] bool, or None for a prefill from row 0
    (causal, L = T). Returns [T, H * hd].
    """
    T, H, hd = q.shape
    G = H // n_kv
    if mask is None:
        # 4-D and causal: the form SDPA's flash kernel takes; 3-D inputs or a mask send a long
        # prompt to its math fallback, which materializes [H, T, T] scores. K and V repeated to
        # every q head, and cuDNN's kernel left out: torch picks it for GQA on H200, and it builds
        # a plan for every new prompt length (~40 ms of an 8B prefill, NOTES v31).
        k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)  # [T, H, hd]
        with sdpa_kernel(PREFILL_BACKENDS):
            o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                               v.transpose(0, 1)[None], is_causal=True)  # [1, H, T, hd]
        return o[0].transpose(0, 1).reshape(T, H * hd)
    # Under a mask: two batched matmuls and an fp32 softmax. SDPA with a mask (and these 3-D
    # shapes) either gives each kv head one thread block that walks all L rows, 3-5x slower on
    # H200 at a few thousand rows (paper_figures/results/attention-v5.csv), or falls back to this
    # same computation in its math kernel.
    qg = q.view(T, n_kv, G, hd).permute(1, 2, 0, 3).reshape(n_kv, G * T, hd)  # [KV, G*T, hd]
    scores = torch.matmul(qg, k.permute(1, 2, 0)) * hd ** -0.5  # [KV, G*T, L]
    scores = scores.float() if scores.element_size() < 4 else scores  # softmax in fp32 at least
    p = torch.softmax(scores.masked_fill(~mask.repeat(G, 1), float("-inf")), dim=-1).to(q.dtype)
    o = torch.matmul(p, v.transpose(0, 1))  # [KV, G*T, hd]
    return o.view(n_kv, G, T, hd).permute(2, 0, 1, 3).reshape(T, H * hd)


class AWQLinear(nn.Module):
    """A projection's AWQ tensors as buffers (state names WEIGHT.qweight / .qzeros / .scales): the
    hub's layout, or after tile_() the fused GEMM's (awq.tile) in its place."""

    def __init__(self, n: int, k: int, group: int):
        super().__init__()
        self.n, self.tiled = n, False
        self.register_buffer("qweight", torch.empty(k, n // 8, dtype=torch.int32))
        self.register_buffer("qzeros", torch.empty(k // group, n // 8, dtype=torch.int32))
        self.register_buffer("scales", torch.empty(k // group, n, dtype=torch.float16))

    @property
    def packed(self) -> AWQWeight | TiledAWQWeight:
        if self.tiled:
            return TiledAWQWeight(self.qweight, self.qzeros, self.scales, self.n)
        return AWQWeight(self.qweight, self.qzeros, self.scales)

    def tile_(self) -> None:
        """Hold the fused GEMM's layout instead of the hub's (once; the torch ops untile it per call),
        so that the GPU holds one copy of the weights."""
        if not self.tiled:
            self.qweight, self.qzeros, self.scales = tile(self.packed)[:3]
            self.tiled = True


def weight_of(p: nn.Module | torch.Tensor) -> AWQWeight | TiledAWQWeight | torch.Tensor:
    """What the blocks take as a projection's weight: the tensor, or the AWQ tensors."""
    return p.packed if isinstance(p, AWQLinear) else p


def norm_x_unit(model) -> float:
    """The smallest power of two >= 1 and >= every |g| of the layer norms: the one-GPU AWQ forward
    holds each norm's x = h * g / unit in fp16 (kernels/awq_norms.py), so no |h| within fp16's
    range (as an AWQ checkpoint's must be: AutoAWQ and vLLM run them in fp16) saturates it. 1 for
    norms of ones (random weights), so their forwards keep their bits."""
    norms = [w for layer in model.layers for w in (layer.attn_norm, layer.mlp_norm)]
    largest = float(torch.stack([w.detach().abs().max() for w in norms]).max())  # one sync, not one a norm
    return 2.0 ** max(0, math.ceil(math.log2(largest))) if math.isfinite(largest) and largest > 0 else 1.0


class Layer(nn.Module):
    def __init__(self, args: ModelArgs, dtype: torch.dtype):
        super().__init__()
        a = args
        qkv_rows = (a.n_heads + 2 * a.n_kv_heads) * a.head_dim

        def projection(n: int, k: int):  # [n, k] as nn.Linear's weight
            if a.quant == "awq":
                return AWQLinear(n, k, a.quant_group)
            return nn.Parameter(torch.empty(n, k, dtype=dtype))

        self.attn_norm = nn.Parameter(torch.ones(a.dim, dtype=dtype))
        self.wqkv = projection(qkv_rows, a.dim)
        self.bqkv = nn.Parameter(torch.zeros(qkv_rows, dtype=dtype)) if a.qkv_bias else None
        self.wo = projection(a.dim, a.n_heads * a.head_dim)
        self.mlp_norm = nn.Parameter(torch.ones(a.dim, dtype=dtype))
        self.w_gate_up = projection(2 * a.ffn_dim, a.dim)
        self.w_down = projection(a.dim, a.ffn_dim)


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs, *, dtype=torch.float32, device="cpu", group: Group | None = None,
                 vocab_start: int = 0, full_vocab: int | None = None, max_seq_len: int = 4096):
        """args are this rank's local shapes; full_vocab is the unsharded vocabulary size."""
        super().__init__()
        self.args, self.group = args, group or SingleGroup()
        self.vocab_start = vocab_start
        self.max_seq_len = max_seq_len  # positions the rope tables cover; caches are this long
        self.compiled = False  # compile_blocks() fuses the layers' elementwise work (GPU)
        self.kernels = "torch"  # use_kernels("fused"): fixed-width forwards run our cuda/ kernels
        self.full_vocab = full_vocab or args.vocab_size
        self.tokens_past_vocab = False  # accept_tokens_below: the pair's other model may send ids past it
        with torch.device(device):
            self.embed = nn.Parameter(torch.empty(args.vocab_size, args.dim, dtype=dtype))
            self.layers = nn.ModuleList(Layer(args, dtype) for _ in range(args.n_layers))
            self.norm = nn.Parameter(torch.ones(args.dim, dtype=dtype))
            self.lm_head = None if args.tie_embeddings else nn.Parameter(
                torch.empty(args.vocab_size, args.dim, dtype=dtype))
        if str(device) == "meta":  # shapes only: build_engine makes the tables for real
            cos = sin = torch.empty(max_seq_len, args.head_dim, device="meta")
        else:
            cos, sin = rope_tables(args, max_seq_len, device=device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    @property
    def device(self) -> torch.device:
        return self.embed.device

    def new_cache(self, max_len: int) -> KVCache:
        a = self.args
        return KVCache(a.n_layers, a.n_kv_heads, a.head_dim, max_len, self.dtype, self.device)

    def accept_tokens_below(self, bound: int) -> None:
        """Ids up to `bound` may come in: the pair's larger vocabulary (one tokenizer, tables padded
        apart: Qwen2-72B's 152064 rows against Qwen2-1.5B's 151936). Those past this model's rows
        embed as zeros, as ids outside a rank's slice do under TP; a verdict never takes such a
        draft token (the target's argmax is one of its own rows). Before the first forward: CUDA
        graphs capture embed_tokens."""
        self.tokens_past_vocab = bound > self.full_vocab

    def embed_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.group.size == 1 and not self.tokens_past_vocab:
            return F.embedding(tokens, self.embed)
        local = tokens - self.vocab_start  # vocab-parallel: each rank owns a slice of rows
        mine = (local >= 0) & (local < self.args.vocab_size)
        x = F.embedding(local.clamp(0, self.args.vocab_size - 1), self.embed) * mine[:, None].to(self.dtype)
        return self.group.all_reduce(x) if self.group.size > 1 else x

    def compile_blocks(self) -> None:
        """Fuse each layer's elementwise work with torch.compile (inductor). The blocks take the
        layer's weights as arguments, so one compiled graph per block serves every layer."""
        # One compiled variant per (model shape, width, attention span): a process holding a
        # target and a draft at a few widths and spans passes dynamo's default limit of 8, after
        # which it would silently run the blocks eagerly.
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 128)
        for name in ("qkv_block", "attention_block", "mlp_block"):
            setattr(self, name, torch.compile(getattr(type(self), name), dynamic=False))
        self.compiled = True

    def use_kernels(self, kernels: str) -> None:
        """torch: the layers as torch ops (compiled blocks on GPU); fused: every fixed-width
        forward (graphs.PaddedForward) runs our row-invariant kernels (kernels/forward.py), bf16
        on GPU only. Prefills stay torch ops either way (their AWQ dequantize aside: awq.py's
        use_dequantize_kernel). fused also tiles the AWQ layers (once, for good: the torch ops read
        the tiled layout too). persistent: every fixed-width forward runs all layers in one launch of
        cuda/persistent.cu (kernels/persistent_forward.py: Llama-3.2-1B's shapes, bf16, one GPU;
        kernels/persistent_target.py: Llama-3-8B's; a forward of another model refuses it:
        persistent_forward.unsupported says why)."""
        if kernels not in KERNEL_SETS:
            raise ValueError(f"kernels {kernels!r}: choose one of {', '.join(KERNEL_SETS)}")
        if kernels != "torch" and (self.device.type != "cuda" or self.dtype != torch.bfloat16):
            raise ValueError(f"{kernels} kernels run bfloat16 on a GPU, not {self.dtype} on {self.device}")
        if kernels == "fused":  # the AWQ GEMM reads the tiled layout: convert the hub's once, here
            for module in self.modules():
                if isinstance(module, AWQLinear):
                    module.tile_()
        self.norm_x_unit = norm_x_unit(self)  # read by forwards (under graphs): computed once, here
        self.kernels = kernels

    # The three blocks of a layer. Between them, eagerly: the cache write and the all-reduces.
    @staticmethod
    def qkv_block(h, m, norm, wqkv, bqkv, cos, sin, eps: float, n_heads: int, n_kv: int, hd: int):
        """x = h + m (the previous block's residual and output); q, k with RoPE; v."""
        x = h + m
        qkv = linear(rms_norm(x, norm, eps), wqkv, bqkv)  # [T, (H + 2 KV) * hd]
        qk, v = qkv.split([(n_heads + n_kv) * hd, n_kv * hd], dim=-1)
        qk = apply_rope(qk.view(-1, n_heads + n_kv, hd), cos, sin)  # q and k at once
        q, k = qk.split([n_heads, n_kv], dim=1)
        return x, q, k, v.view(-1, n_kv, hd)

    @staticmethod
    def attention_block(q, keys, values, mask, wo, n_kv: int):
        return linear(grouped_attention(q, keys, values, mask, n_kv), wo)

    @staticmethod
    def mlp_block(x, a, norm, w_gate_up, w_down, eps: float):
        """h = x + a (attention output); returns h and the MLP's output."""
        h = x + a
        gate, up = linear(rms_norm(h, norm, eps), w_gate_up).chunk(2, dim=-1)
        return h, linear(F.silu(gate) * up, w_down)

    def prefill(self, tokens: list[int], cache: KVCache) -> torch.Tensor:
        """A prompt from position 0, causal, eager (every prompt length would compile anew);
        its rows become the cache's verified prefix. -> [vocab] logits of its last token."""
        n, dev = len(tokens), self.device
        positions = torch.arange(n, device=dev)
        logits = self(torch.tensor(tokens, device=dev), positions, positions, None, cache, eager=True, last_only=True)
        cache.restart(n)
        return logits[0]

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, rows: torch.Tensor,
                mask: torch.Tensor | None, cache: KVCache, eager: bool = False, last_only: bool = False) -> torch.Tensor:
        """tokens, positions, rows: [T] int64; mask: [T, L] bool over cache rows, or None for a
        prefill (tokens at rows and positions 0..T-1, causal). -> [T, vocab] fp32.

        eager: skip the compiled blocks (prefills: every prompt length would compile anew).
        last_only: the logits of the last token only ([1, vocab]; a prefill needs no more)."""
        a = self.args
        blocks = type(self) if eager else self
        L = len(tokens) if mask is None else mask.shape[1]
        cos, sin = self.cos[positions], self.sin[positions]
        h = self.embed_tokens(tokens)  # [T, dim]: the residual stream
        m = torch.zeros_like(h)  # the last block's output, added to h at the start of the next
        for i, layer in enumerate(self.layers):
            x, q, k, v = blocks.qkv_block(h, m, layer.attn_norm, weight_of(layer.wqkv), layer.bqkv, cos, sin,
                                          a.norm_eps, a.n_heads, a.n_kv_heads, a.head_dim)
            cache.write(i, rows, k, v)
            keys, values = cache.view(i, L)  # [L, KV, hd]
            attn = blocks.attention_block(q, keys, values, mask, weight_of(layer.wo), a.n_kv_heads)
            attn = self.group.all_reduce(attn)
            h, m = blocks.mlp_block(x, attn, layer.mlp_norm, weight_of(layer.w_gate_up), weight_of(layer.w_down),
                                    a.norm_eps)
            m = self.group.all_reduce(m)
        x = rms_norm((h + m)[-1:] if last_only else h + m, self.norm, a.norm_eps)
        head = self.embed if self.lm_head is None else self.lm_head
        logits = self.group.all_gather(F.linear(x, head))
        return logits[:, : self.full_vocab].float()
