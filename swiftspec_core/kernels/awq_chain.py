"""A persistent chain of AWQ GEMMs (cuda/awq_chain.cu): one launch, a block an SM, runs a list of
GEMMs (phases) one after another with a grid barrier between them, every warp's ring of weight
chunks running on across phases, so that a GEMM does not pay its own start and end (NOTES v204: the
70B's o and qkv run at ~62% and ~55% of the copy bandwidth as separate launches, held by those
fixed costs). A probe of issue 11's persistent route (paper_figures/awq_chain_probe.py times it):
measured slower than separate launches at every 70B shape (NOTES v204-v208), so no forward uses it.

A phase is awq_gemm(x, w) at M <= 8 rows, group 128, computed as awq_gemm's launch_shape at (S, C)
= (WARPS, its parts) computes it, bit for bit (chain_reference): the chain changes when a GEMM's
work runs, not its order of operations, so rows stay invariant."""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import torch

from . import build
from .awq_gemm import CLUSTERS, check_operands, launch_shape
from swiftspec_core.models.awq import TILE_COLUMNS, TiledAWQWeight

WARPS = 16  # CHAIN_WARPS: a block's warps, splitting a tile's groups (S)
STAGES = 8  # CHAIN_STAGES: 1 KB chunks in a warp's ring
GROUP = 128  # the one group size built (CHAIN_CHUNKS = 4)
MAX_ROWS = 8  # M: the r8 path only
MAX_PHASES = 64  # CHAIN_MAX_PHASES
ELEMENTS = 512  # CHAIN_ELEMENTS: a tile's fp32 sums at M <= 8
META_BYTES = 160  # a group's scales and zeros in a ring slot
WORDS = 9  # int64 words of a ChainPhase: 7 pointers, then (n, k) and (parts, 0) as int32 pairs


def shared_bytes(warps: int = WARPS, stages: int = STAGES) -> int:
    """The kernel's dynamic shared memory: each warp's ring, then each warp's sums for the combine."""
    return warps * stages * (1024 + META_BYTES) + warps * ELEMENTS * 4


class Phase(NamedTuple):
    """One GEMM of a chain: out[M, N] = x[M, K] @ W^T, its tiles split in `parts` (1, 2, 4, 8) over blocks."""
    x: torch.Tensor
    w: TiledAWQWeight
    out: torch.Tensor
    parts: int = 1


def check_phase(phase: Phase, warps: int = WARPS) -> None:
    """ValueError unless the kernel runs this phase: awq_gemm's operand checks, M <= 8, group 128,
    parts in CLUSTERS with parts x warps <= K / 128 (every warp of every part has a group)."""
    x, w, out, parts = phase
    check_operands(x, w, None, out)
    if x.shape[0] > MAX_ROWS or w.group != GROUP:
        raise ValueError(f"awq_chain: M = {x.shape[0]} (at most {MAX_ROWS}), group {w.group} (only {GROUP})")
    if parts not in CLUSTERS or parts * warps > x.shape[1] // GROUP:
        raise ValueError(f"awq_chain: {parts} parts of {warps} warps on {x.shape[1] // GROUP} groups "
                         f"(parts in {CLUSTERS}, at most one warp a group)")


@functools.cache
def _compiled(device: int, warps: int, stages: int, x_l1: bool):
    import cupy

    defines = f"#define CHAIN_WARPS {warps}\n#define CHAIN_STAGES {stages}\n#define CHAIN_X_L1 {int(x_l1)}\n"
    with cupy.cuda.Device(device):
        fn = build.compile_source(defines + build.source("awq_chain")).get_function("awq_chain")
    fn.max_dynamic_shared_size_bytes = shared_bytes(warps, stages)
    return fn


class AWQChain:
    """The chain's launch over fixed phases (graph-safe: the phases' pointers are laid out once).
    __call__() runs it on the current stream; its outputs are the phases' out tensors."""

    def __init__(self, phases: list[Phase], warps: int = WARPS, stages: int = STAGES, barriers: bool = True,
                 stamps: bool = False, x_l1: bool = False):
        """barriers=False (no grid barrier between phases) and x_l1 (x through L1) only for phases
        that read nothing an earlier one writes: the probe's measures of what the barriers and x's
        reads through L2 cost; stamps: keep each phase's arrivals and departures, int64 ns
        [phases, blocks, 2] in self.stamps."""
        if not 1 <= len(phases) <= MAX_PHASES:
            raise ValueError(f"awq_chain: {len(phases)} phases (1..{MAX_PHASES})")
        m = phases[0].x.shape[0]
        for phase in phases:
            check_phase(phase, warps)
            if phase.x.shape[0] != m:
                raise ValueError("awq_chain: every phase has the same M")
        device = phases[0].x.device
        self.phases, self.m, self.warps, self.stages = phases, m, warps, stages
        # partials [tiles, parts, 512] fp32 and tickets [tiles] (zero) where parts > 1
        self.scratch = [(torch.empty(-(-p.w.n // TILE_COLUMNS), p.parts, ELEMENTS, device=device),
                         torch.zeros(-(-p.w.n // TILE_COLUMNS), dtype=torch.int32, device=device))
                        if p.parts > 1 else (None, None) for p in phases]
        words = []
        for p, (partials, tickets) in zip(phases, self.scratch):
            pointers = [p.x, p.w.qweight, p.w.qzeros, p.w.scales, p.out, partials, tickets]
            words += [0 if t is None else t.data_ptr() for t in pointers]
            words += [p.w.n | p.x.shape[1] << 32, p.parts]
        self.descriptors = torch.tensor(words, dtype=torch.int64, device=device)  # [phases * WORDS]
        self.barrier = torch.zeros(2, dtype=torch.int32, device=device)
        self.blocks = torch.cuda.get_device_properties(device).multi_processor_count
        self.barriers, self.x_l1 = barriers, x_l1
        self.stamps = torch.zeros(len(phases), self.blocks, 2, dtype=torch.int64, device=device) if stamps else None

    def __call__(self) -> None:
        fn = _compiled(self.descriptors.device.index, self.warps, self.stages, self.x_l1)
        args = (build.ptr(self.descriptors), np.int32(len(self.phases)), np.int32(self.m), build.ptr(self.barrier),
                np.int32(int(self.barriers)), np.uint64(0) if self.stamps is None else build.ptr(self.stamps))
        # No PDL: the grid barriers want every block resident from the start (a block an SM).
        build.launch_ex(fn.kernel.ptr, (self.blocks,), (32 * self.warps,), args, shared_bytes(self.warps, self.stages),
                        torch.cuda.current_stream(self.descriptors.device).cuda_stream, False)


def chain_reference(phases: list[Phase], warps: int = WARPS) -> list[torch.Tensor]:
    """Each phase as awq_gemm's own launch at (S, C) = (warps, parts): what the chain must equal bitwise."""
    outs = []
    for p in phases:
        outs.append(torch.empty_like(p.out))
        launch_shape(p.x, p.w, None, outs[-1], warps, p.parts)
    return outs
