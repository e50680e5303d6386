"""Tensor-parallel sharding of a full engine state, with zero padding where shapes do not divide.

Megatron-style: wqkv (and bqkv) and w_gate_up are split by output rows (column-parallel), wo and
w_down by input columns (row-parallel, one all-reduce each in the forward), embed and lm_head by
vocabulary rows. Every rank gets the same local shapes, so one CUDA graph or kernel config fits all.

Padding is exact: a padded q head has zero q rows and zero wo columns, a padded ffn unit zero
gate/up rows and a zero w_down column (silu(0) * 0 = 0), a padded vocabulary row a zero embedding
(never looked up) and a zero logit (sliced off after the all-gather). So any TP size gives the
TP 1 result up to summation order.

AWQ projections (args.quant == "awq") shard by the same rules on their codes, zero points and
scales (models/awq.py unpacks them to [N, K] and [N, K / G]): column-parallel picks output
columns with their scales; row-parallel splits K in whole groups, so a group is never split across
ranks (the ffn is padded to whole groups per rank; wo's heads must fill whole groups). A padded
output column has scale 0, a padded input column the code of its group's zero point: both
dequantize to exactly 0, as the padding above.

GQA under TP: local q head j uses local kv head j // (q_per_rank // kv_per_rank), the same rule
the forward (transformer.grouped_attention) applies to the full model. head_layout picks, per rank, which
global kv heads to hold (replicating a kv head on several ranks where its q heads are split
between them) so that rule sends every real q head to the kv head it had in the full model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .args import ModelArgs
from .awq import PARTS, AWQWeight, pack, packed_entries, unpack

PAD = -1  # a padded head: its rows are zero


@dataclass(frozen=True)
class HeadLayout:
    q_per_rank: int
    kv_per_rank: int
    q_heads: tuple[tuple[int, ...], ...]  # [rank][local q head] -> global q head or PAD
    kv_heads: tuple[tuple[int, ...], ...]  # [rank][local kv head] -> global kv head or PAD


def _kv_slots(q_heads: tuple[int, ...], group: int, n_slots: int) -> tuple[int, ...] | None:
    """The global kv head of each of n_slots local kv slots, or None if some slot would need two."""
    per_slot = len(q_heads) // n_slots
    slots = []
    for s in range(n_slots):
        needed = {h // group for h in q_heads[s * per_slot:(s + 1) * per_slot] if h != PAD}
        if len(needed) > 1:
            return None
        slots.append(needed.pop() if needed else PAD)
    return tuple(slots)


def head_layout(n_heads: int, n_kv_heads: int, size: int) -> HeadLayout:
    """Place q heads contiguously on `size` ranks and choose the kv heads each rank holds.

    Among q_per_rank from ceil(n_heads / size) up (a multiple of the GQA group can align rank
    boundaries with kv groups: 32 q / 8 kv heads on 3 ranks hold 12 q + 3 kv heads each rather
    than 11 q + 11 kv), take the one with the fewest weight rows per rank: q and wo (2 per q
    head) plus k and v (2 per kv head; also the KV cache). Ties go to fewer padded q heads.
    """
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads {n_heads} is not a multiple of n_kv_heads {n_kv_heads}")
    group = n_heads // n_kv_heads
    best = None
    first = -(-n_heads // size)
    for hq in range(first, first + group + 1):
        q = tuple(tuple(h if h < n_heads else PAD for h in range(r * hq, (r + 1) * hq)) for r in range(size))
        for n_kv in (d for d in range(1, hq + 1) if hq % d == 0):  # n_kv = hq always fits
            kv = [_kv_slots(q[r], group, n_kv) for r in range(size)]
            if all(k is not None for k in kv):
                break
        cost = 2 * hq + 2 * n_kv
        if best is None or cost < best[0]:
            best = (cost, HeadLayout(hq, n_kv, q, tuple(kv)))
    return best[1]


def _take_rows(w: torch.Tensor, index: list[int]) -> torch.Tensor:
    """Rows of w in the order of `index`; PAD gives a zero row. Works for 1-d (bias) and 2-d."""
    zero = torch.zeros((1,) + tuple(w.shape[1:]), dtype=w.dtype, device=w.device)
    idx = torch.tensor([len(w) if i == PAD else i for i in index], device=w.device)
    return torch.cat([w, zero]).index_select(0, idx)


def _head_rows(heads: tuple[int, ...], head_dim: int, offset: int) -> list[int]:
    return [PAD if h == PAD else offset + h * head_dim + d for h in heads for d in range(head_dim)]


def _split_rows(w: torch.Tensor, rank: int, size: int, per: int | None = None) -> torch.Tensor:
    """Rank's block of `per` rows (default: the fewest that cover w) after zero-padding the row
    count to size * per."""
    per = per or -(-w.shape[0] // size)
    part = w[rank * per:(rank + 1) * per]
    if part.shape[0] < per:
        pad = torch.zeros((per - part.shape[0],) + tuple(w.shape[1:]), dtype=w.dtype, device=w.device)
        part = torch.cat([part, pad])
    return part.contiguous()


def shard_state(args: ModelArgs, state: dict[str, torch.Tensor], rank: int,
                size: int) -> tuple[ModelArgs, dict[str, torch.Tensor], int]:
    """This rank's shard of a full engine state -> (local args, local state, first vocab row)."""
    if not 0 <= rank < size:
        raise ValueError(f"rank {rank} is outside a group of {size}")
    a, hd = args, args.head_dim
    layout = head_layout(a.n_heads, a.n_kv_heads, size)
    q_heads, kv_heads = layout.q_heads[rank], layout.kv_heads[rank]
    q_size, kv_size = a.n_heads * hd, a.n_kv_heads * hd
    qkv_index = (_head_rows(q_heads, hd, 0) + _head_rows(kv_heads, hd, q_size)
                 + _head_rows(kv_heads, hd, q_size + kv_size))
    o_index = _head_rows(q_heads, hd, 0)
    per_vocab = -(-a.vocab_size // size)
    g = a.quant_group if a.quant == "awq" else 1
    per_ffn = -(-a.ffn_dim // (g * size)) * g  # whole groups per rank under AWQ
    packed = packed_entries(state) if a.quant == "awq" else {}

    out = {}
    for name, w in state.items():
        kind = re.sub(r"^layers\.\d+\.", "", name)
        base = name.rsplit(".", 1)[0]
        if base in packed:  # NAME.qweight / .qzeros / .scales: the three sharded at once
            if name.endswith(".qweight"):
                local = _shard_awq(kind.split(".")[0], packed[base], qkv_index, o_index, per_ffn, rank, size)
                out.update({f"{base}.{part}": t for part, t in zip(PARTS, local)})
        elif kind in ("attn_norm", "mlp_norm", "norm"):
            out[name] = w  # replicated
        elif kind in ("wqkv", "bqkv"):
            out[name] = _take_rows(w, qkv_index)
        elif kind == "wo":
            out[name] = _take_rows(w.t(), o_index).t().contiguous()
        elif kind == "w_gate_up":
            gate, up = w.chunk(2)  # gate and up split alike, so unit i's gate and up stay together
            out[name] = torch.cat([_split_rows(gate, rank, size, per_ffn), _split_rows(up, rank, size, per_ffn)])
        elif kind == "w_down":
            out[name] = _split_rows(w.t(), rank, size, per_ffn).t().contiguous()
        elif kind in ("embed", "lm_head"):
            out[name] = _split_rows(w, rank, size)
        else:
            raise KeyError(f"no sharding rule for state entry {name!r}")
    local = args.with_(n_heads=layout.q_per_rank, n_kv_heads=layout.kv_per_rank,
                       ffn_dim=per_ffn, vocab_size=per_vocab)
    return local, out, rank * per_vocab


def _shard_awq(kind: str, w: AWQWeight, qkv_index: list[int], o_index: list[int], per_ffn: int, rank: int,
               size: int) -> AWQWeight:
    """This rank's AWQ tensors of one projection (kind: wqkv, wo, w_gate_up or w_down)."""
    codes, zeros, scales = unpack(w)  # [N, K], [N, K/G], [N, K/G]
    g = w.group
    if kind == "wqkv":
        parts = [_take_rows(t, qkv_index) for t in (codes, zeros, scales)]
    elif kind == "w_gate_up":
        parts = [torch.cat([_split_rows(half, rank, size, n) for half in t.chunk(2)])
                 for t, n in ((codes, per_ffn), (zeros, per_ffn), (scales, per_ffn))]
    elif kind == "w_down":  # K split in whole groups: per_ffn is a multiple of g
        parts = [_split_rows(t.t(), rank, size, n).t() for t, n in
                 ((codes, per_ffn), (zeros, per_ffn // g), (scales, per_ffn // g))]
    elif kind == "wo":
        parts = _take_awq_columns(codes, zeros, scales, o_index, g)
    else:
        raise KeyError(f"no AWQ sharding rule for {kind!r}")
    return pack(*(t.contiguous() for t in parts))


def awq_column_groups(index: list[int], g: int) -> list[int]:
    """The global group (PAD: none) each local group of g input columns `index` draws from. A
    ValueError unless every local group is whole and draws its real columns from one global group:
    a group is never split across ranks."""
    if len(index) % g:
        raise ValueError(f"awq: a rank's {len(index)} input columns are not whole groups of {g}")
    groups = []
    for j in range(0, len(index), g):
        sources = {c // g for c in index[j:j + g] if c != PAD}
        if len(sources) > 1:
            raise ValueError(f"awq: local columns {j}..{j + g - 1} would join groups {sorted(sources)}; "
                             f"a group is never split across ranks")
        groups.append(sources.pop() if sources else PAD)
    return groups


def check_awq_shards(args: ModelArgs, size: int) -> None:
    """Before any weight loads: a ValueError where an AWQ model (args.quant == "awq") cannot be split
    over `size` ranks. Only o_proj's input columns (a rank's q heads) can break awq_column_groups's
    rule; down_proj's are split in whole groups by construction (shard_state's per_ffn)."""
    layout = head_layout(args.n_heads, args.n_kv_heads, size)
    for heads in layout.q_heads:
        awq_column_groups(_head_rows(heads, args.head_dim, 0), args.quant_group)


def _take_awq_columns(codes, zeros, scales, index: list[int], g: int):
    """Input columns `index` (PAD: a zero column) of an AWQ weight, whose every local group of g
    columns must draw its real columns from one global group (whose zero and scale it takes)."""
    groups = awq_column_groups(index, g)
    local_zeros = _take_rows(zeros.t(), groups).t()
    local_codes = _take_rows(codes.t(), index).t()
    pad = torch.tensor([c == PAD for c in index], device=codes.device)
    # A padded column holds its group's zero point: (code - zero) * scale = 0 whatever the scale.
    local_codes = torch.where(pad, local_zeros.repeat_interleave(g, dim=1), local_codes)
    return local_codes, local_zeros, _take_rows(scales.t(), groups).t()
