"""INT4 AWQ weights in AutoAWQ's GEMM layout (the layout of AWQ checkpoints on the hub), and
round-to-nearest quantization into it.

A linear layer of out_features N and in_features K, in groups of G input columns (G = 128 on the
hub), is three tensors:

    qweight  int32   [K, N / 8]   4-bit codes, 8 output columns packed in one int32
    qzeros   int32   [K / G, N / 8] 4-bit zero points, packed the same way
    scales   float16 [K / G, N]

and w[n, k] = (code[k, n] - zero[k // G, n]) * scale[k // G, n]. The 8 nibbles of an int32 are
not in column order: AutoAWQ packs column 8c + ORDER[i] into bits 4i..4i+3 of int32 c (its
kernels' dequantize unpacks in that interleaved order), so column 8c + j sits in nibble
REVERSE_ORDER[j]. The same order holds for qzeros.

The engine keeps nn.Linear's [N, K] orientation everywhere else; unpack()/pack() convert between
the packed triple and plain [N, K] codes with [N, K / G] zeros and scales (what sharding selects
columns of), and dequantize() gives the [N, K] weight.

The fused GEMM (cuda/awq_gemm.cu) reads another arrangement of the same tensors, tile(): in the
hub's layout the 64 output columns a thread block computes are 32 bytes of each qweight row, rows
N / 2 bytes apart (a DRAM page apart at these N); tiled, each 64-column block's rows are
back to back, so the 32 K rows x 64 columns a warp stages at once (1 KB) are contiguous, and the
chunks a cluster's warps read at once follow one another. A permutation (zero-padded to whole
blocks): untile() gives the hub's tensors back, bit for bit.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

GROUP = 128  # input columns per scale and zero point: what the hub's AWQ checkpoints use
PACK = 8  # 4-bit codes per int32
ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble i of an int32 holds column 8c + ORDER[i]
REVERSE_ORDER = tuple(ORDER.index(j) for j in range(PACK))  # column 8c + j is in nibble REVERSE_ORDER[j]
TILE_COLUMNS = 64  # output columns of one tile (8 int32 of a qweight row): a thread block of the fused GEMM
QUANT_METHODS = ("none", "awq")  # --quant
PARTS = ("qweight", "qzeros", "scales")  # an AWQ layer's tensors, by their hub names


class AWQWeight(NamedTuple):
    """One linear layer's packed weights (the hub's names and layout)."""
    qweight: torch.Tensor  # int32 [K, N / 8]
    qzeros: torch.Tensor  # int32 [K / G, N / 8]
    scales: torch.Tensor  # float16 [K / G, N]

    @property
    def shape(self) -> tuple[int, int]:
        """(N, K), as nn.Linear's weight."""
        return self.scales.shape[1], self.qweight.shape[0]

    @property
    def group(self) -> int:
        return self.qweight.shape[0] // self.qzeros.shape[0]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self)


class TiledAWQWeight(NamedTuple):
    """An AWQWeight in the fused GEMM's layout (tile()): B = ceil(N / 64) blocks of 64 output columns,
    each block's slice of the hub's tensors contiguous, zeros past column N."""
    qweight: torch.Tensor  # int32 [B, K, 8]: [b, k, i] = hub qweight[k, 8b + i]
    qzeros: torch.Tensor  # int32 [B, K / G, 8]: [b, g, i] = hub qzeros[g, 8b + i]
    scales: torch.Tensor  # float16 [B, K / G, 64]: [b, g, j] = hub scales[g, 64b + j]
    n: int  # output columns (N)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.qweight.shape[1]

    @property
    def group(self) -> int:
        return self.qweight.shape[1] // self.qzeros.shape[1]

    def nbytes(self) -> int:
        """The bytes of its three tensors (columns past N included), as AWQWeight.nbytes."""
        return sum(t.numel() * t.element_size() for t in self[:3])


def _by_block(t: torch.Tensor, width: int) -> torch.Tensor:
    """[R, C] -> [ceil(C / width), R, width]: out[b, r, i] = t[r, width b + i], zeros past column C."""
    r, c = t.shape
    full = c // width
    out = t.new_zeros(-(-c // width), r, width)
    out[:full] = t[:, : full * width].view(r, full, width).transpose(0, 1)
    if c % width:
        out[full, :, : c % width] = t[:, full * width:]
    return out


def _from_blocks(t: torch.Tensor, c: int) -> torch.Tensor:
    """The inverse of _by_block: [B, R, width] -> [R, c]."""
    blocks, r, width = t.shape
    return t.transpose(0, 1).reshape(r, blocks * width)[:, :c].contiguous()


def tile(w: AWQWeight) -> TiledAWQWeight:
    """The fused GEMM's layout of w (a new copy, on w's device; w unchanged)."""
    n8 = w.qweight.shape[1]
    return TiledAWQWeight(_by_block(w.qweight, TILE_COLUMNS // PACK), _by_block(w.qzeros, TILE_COLUMNS // PACK),
                          _by_block(w.scales, TILE_COLUMNS), PACK * n8)


def untile(w: TiledAWQWeight) -> AWQWeight:
    """The hub's layout back (the inverse of tile)."""
    return AWQWeight(_from_blocks(w.qweight, w.n // PACK), _from_blocks(w.qzeros, w.n // PACK),
                     _from_blocks(w.scales, w.n))


def check_shape(n: int, k: int, group: int) -> None:
    if n % PACK:
        raise ValueError(f"awq: {n} output columns are not a multiple of {PACK} (8 codes per int32)")
    if k % group:
        raise ValueError(f"awq: {k} input columns are not a multiple of the group size {group}")


def _pack_nibbles(values: torch.Tensor) -> torch.Tensor:
    """[R, C] integers in 0..15 -> [R, C / 8] int32 in AutoAWQ's nibble order."""
    r, c = values.shape
    v = values.to(torch.int64).view(r, c // PACK, PACK)  # [R, C/8, 8]: column 8c + j at [:, c, j]
    packed = torch.zeros(r, c // PACK, dtype=torch.int64, device=values.device)
    for nibble, column in enumerate(ORDER):
        packed |= v[:, :, column] << (4 * nibble)
    # Two's complement wrap: a code >= 8 in the top nibble makes a negative int32, as on the hub.
    return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)


def _unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    """[R, C / 8] int32 -> [R, C] uint8 codes (the inverse of _pack_nibbles)."""
    r, c8 = packed.shape
    shifts = torch.tensor([4 * REVERSE_ORDER[j] for j in range(PACK)], dtype=torch.int32, device=packed.device)
    # An arithmetic shift of a negative int32 brings in ones from the left; & 0xF drops them.
    return ((packed[:, :, None] >> shifts) & 0xF).to(torch.uint8).view(r, c8 * PACK)  # [R, C/8, 8] -> [R, C]


def pack(codes: torch.Tensor, zeros: torch.Tensor, scales: torch.Tensor) -> AWQWeight:
    """codes [N, K], zeros [N, K / G] (integers 0..15), scales [N, K / G] -> the hub's triple."""
    n, k = codes.shape
    check_shape(n, k, k // zeros.shape[1])
    return AWQWeight(_pack_nibbles(codes.t()), _pack_nibbles(zeros.t()), scales.t().to(torch.float16).contiguous())


def unpack(w: AWQWeight) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The triple -> (codes [N, K] uint8, zeros [N, K / G] uint8, scales [N, K / G] float16)."""
    return (_unpack_nibbles(w.qweight).t().contiguous(), _unpack_nibbles(w.qzeros).t().contiguous(),
            w.scales.t().contiguous())


def quantize(weight: torch.Tensor, group: int = GROUP) -> AWQWeight:
    """Round-to-nearest asymmetric 4-bit quantization of an nn.Linear weight [N, K], per group of
    `group` input columns, into AutoAWQ's layout.

    As AutoAWQ: scale = (max - min) / 15, zero = round(-min / scale), code = round(w / scale) + zero
    clamped to 0..15; the scale is stored in fp16, and the codes are chosen for that stored scale.
    Unlike AutoAWQ the range always includes 0 (min <= 0 <= max) and the scale is rounded up, never
    down, to fp16 (so (max - min) / scale <= 15): then a clamped code is off by half a step at most,
    and every weight is within scale / 2 of its dequantized value."""
    n, k = weight.shape
    check_shape(n, k, group)
    w = weight.detach().float().reshape(n, k // group, group)  # [N, K/G, G]
    lo = w.amin(dim=-1).clamp(max=0.0)
    hi = w.amax(dim=-1).clamp(min=0.0)
    exact = (hi - lo).clamp(min=1e-5) / 15
    scales = exact.to(torch.float16)  # [N, K/G]
    scales = torch.where(scales.float() < exact, torch.nextafter(scales, torch.full_like(scales, float("inf"))), scales)
    s = scales.float()
    zeros = torch.round(-lo / s).clamp(0, 15)
    codes = (torch.round(w / s[..., None]) + zeros[..., None]).clamp(0, 15)
    return pack(codes.reshape(n, k).to(torch.uint8), zeros.to(torch.uint8), scales)


# The dequantize kernel for tiled bf16 weights on CUDA (kernels/awq_dequantize.py), handed in from
# above rather than imported: kernels/ imports models/ (tests/test_layout.py: no cycle between parts).
TiledKernel = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]  # (qweight, qzeros, scales, n)
_tiled_kernel: TiledKernel | None = None


def use_dequantize_kernel(kernel: TiledKernel | None) -> None:
    """Send dequantize(tiled weight on CUDA, bf16) to kernel(qweight, qzeros, scales, n) from now on
    (kernels.awq_dequantize.awq_dequantize: bitwise the torch path); None: the torch path again.
    kernels.awq_dequantize.use_for_prefills hands it in, in every process that builds --kernels fused
    engines (the only ones holding tiled weights)."""
    global _tiled_kernel
    _tiled_kernel = kernel


def dequantize(w: AWQWeight | TiledAWQWeight, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The [N, K] weight: (code - zero) * scale, computed in fp32 (exact: a 5-bit integer times an
    fp16 scale) and rounded once to `dtype`. A tiled weight on CUDA in bf16 (what a fused engine's
    prefill asks for) goes through the dequantize kernel where one was handed in (use_dequantize_kernel:
    the same bits, codes read once); any other is computed in torch, a tiled one untiled first (a
    temporary copy)."""
    if isinstance(w, TiledAWQWeight):
        if _tiled_kernel is not None and w.qweight.is_cuda and dtype == torch.bfloat16:
            return _tiled_kernel(w.qweight, w.qzeros, w.scales, w.n)
        w = untile(w)
    codes = _unpack_nibbles(w.qweight)  # [K, N]
    k, n = codes.shape
    g = w.group
    zeros = _unpack_nibbles(w.qzeros).float()[:, None]  # [K/G, 1, N]
    q = codes.float().view(k // g, g, n) - zeros  # [K/G, G, N], in -15..15
    return (q * w.scales.float()[:, None]).view(k, n).t().to(dtype)


def linear(x: torch.Tensor, weight, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear over a plain weight or an AWQ one (either layout). An AWQ weight is dequantized to
    x's dtype on every call (nothing kept; by the kernel for a tiled weight on CUDA in bf16 where one
    was handed in, see dequantize): the engine then holds 4-bit bytes only, which is what lets a 70B target fit one GPU;
    the dequantized weight equals the bf16 twin's (dequantize(w, x.dtype)), bit for bit either way."""
    if isinstance(weight, (AWQWeight, TiledAWQWeight)):
        weight = dequantize(weight, x.dtype)
    return torch.nn.functional.linear(x, weight, bias)


# --- whole engine states ---------------------------------------------------------------------------

QUANTIZED = ("wqkv", "wo", "w_gate_up", "w_down")  # the layer projections AWQ covers


def is_quantized(name: str) -> bool:
    """An engine state name of a quantizable projection weight (layers.3.wqkv), not a bias or norm."""
    return name.startswith("layers.") and name.rsplit(".", 1)[-1] in QUANTIZED


def group_for(args) -> int:
    """The group size --quant awq uses for a model: the hub's 128 where every projection's input
    width divides by it (every real shape here), else the largest of 64 and 32 that does (the tiny
    presets' 64-wide layers). ValueError where none does."""
    widths = (args.dim, args.n_heads * args.head_dim, args.ffn_dim)
    for g in (GROUP, 64, 32):
        if all(w % g == 0 for w in widths):
            return g
    raise ValueError(f"awq: input widths {widths} are not all multiples of 32")


def quantized_args(args):
    """`args` (a ModelArgs) of the same model with its layer projections in AWQ, at group_for's group."""
    return args.with_(quant="awq", quant_group=group_for(args))


def quantize_state(state: dict[str, torch.Tensor], group: int = GROUP) -> dict[str, torch.Tensor]:
    """An engine state with every layer projection replaced by its AWQ tensors (NAME.qweight,
    NAME.qzeros, NAME.scales), quantized by round-to-nearest; the other entries as they are."""
    out = {}
    for name, t in state.items():
        if is_quantized(name):
            out.update({f"{name}.{part}": v for part, v in zip(PARTS, quantize(t, group))})
        else:
            out[name] = t
    return out


def packed_entries(state: dict[str, torch.Tensor]) -> dict[str, AWQWeight]:
    """{projection name: its AWQWeight} of a quantized engine state."""
    return {name: AWQWeight(*(state[f"{name}.{part}"] for part in PARTS))
            for name in {k.rsplit(".", 1)[0] for k in state if k.endswith(".qweight")}}


def dequantized_state(state: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The plain twin of a quantized engine state: every AWQ projection dequantized to `dtype`."""
    packed = packed_entries(state)
    out = {k: v for k, v in state.items() if k.rsplit(".", 1)[0] not in packed}
    out.update({name: dequantize(w, dtype) for name, w in packed.items()})
    return out
