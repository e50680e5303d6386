"""A timeline of one tree_attention call: when each block starts, stages, finishes its items, takes
its merge ticket, waits and merges, from timers its thread 0 reads.

    PYTHONPATH=. python3 paper_figures/attention_trace.py [--models llama-3-8b,llama-3.2-1b] [--m 8] [--context 1000]

The runtime's kernel is not touched: this script inlines cuda/attention.cu as build.py does, adds
the timer reads at fixed lines of it (asserting each line is there), compiles that copy with
NVRTC, launches it exactly as kernels/attention.py does (chain block after `context` cached rows,
the kernel bench's case), checks its output bitwise against the runtime's, and prints, per
phase, the spread over blocks (us after the first block's start, from %globaltimer) and each
block's own phase lengths (from clock64, in us at the ratio the two timers show).
"""
from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
import torch

from swiftspec_bench.kernel_ops import chain_block, randn
from swiftspec_bench.kernel_shapes import shard_args
from swiftspec_core.graphs import spans
from swiftspec_core.kernels import attention as attn
from swiftspec_core.kernels.build import OPTIONS, cuda_include, ptr, source
from swiftspec_core.models.rope import rope_tables
from swiftspec_core.staged import VISIBLE

PHASES = ("start", "staged", "items done", "ticket", "merge may start", "merge done")
SLOTS = 16  # per block: a globaltimer and a clock64 per phase, then the share and the SM


def stamp(phase: int) -> str:
    return (f"  if (threadIdx.x == 0) {{ unsigned long long g_, c_; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(g_)); "
            f"c_ = clock64(); const long long b_ = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); "
            f"attn_trace[b_ * {SLOTS} + {2 * phase}] = g_; attn_trace[b_ * {SLOTS} + {2 * phase + 1}] = c_; }}\n")


def instrumented_source() -> str:
    s = source("attention")
    anchors = [  # (line, stamp before or after it, phase)
        ("  pdl_start();  // before the staging", "before", 0),
        ("  __syncthreads();\n\n  bf16 *qw =", "after_sync", 1),
        ("  // Take a ticket:", "before", 2),
        ("  if (share < 0) return;", "before", 3),
        ("  // The output: a thread a (query row, 8 dims)", "before", 4),
        ("  // The last merging block to finish resets", "before", 5),
    ]
    for line, where, phase in anchors:
        assert s.count(line) == 1, f"attention.cu changed: {line!r} found {s.count(line)} times"
        if where == "before":
            s = s.replace(line, stamp(phase) + line)
        else:  # after the __syncthreads() that starts the anchor
            head = "  __syncthreads();\n"
            s = s.replace(line, head + stamp(phase) + line[len(head):])
    extra = ("  if (threadIdx.x == 0) { unsigned smid_; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid_)); "
             "const long long b_ = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); "
             f"attn_trace[b_ * {SLOTS} + 12] = (unsigned long long)(share + 1000); attn_trace[b_ * {SLOTS} + 13] = smid_; }}\n")
    s = s.replace("  if (share < 0) return;", extra + "  if (share < 0) return;")
    decl = "__device__ unsigned long long attn_trace[65536 * %d];\n" % SLOTS
    return s.replace('#define CHUNK 64', decl + '#define CHUNK 64', 1)


def trace(model: str, m: int, context: int) -> None:
    import cupy

    a = shard_args(model, 1)
    H, KV, hd = a.n_heads, a.n_kv_heads, a.head_dim
    rows = context + m + 1
    span = next(s for s in spans(rows) if s >= context + m)
    k_cache, v_cache = randn(rows, KV, hd), randn(rows, KV, hd)
    qkv, block = randn(m, (H + 2 * KV) * hd), chain_block(context, m)
    cos, sin = rope_tables(a, context + m, device="cuda")
    want = attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)

    module = cupy.RawModule(code=instrumented_source(), options=OPTIONS + cuda_include(), backend="nvrtc")
    fn = module.get_function(f"tree_attention_hd{hd}")
    smem = attn.shared_bytes(hd)
    fn.max_dynamic_shared_size_bytes = smem
    G, nchunks = H // KV, -(-span // attn.CHUNK)
    resident = attn.MIN_BLOCKS * torch.cuda.get_device_properties(0).multi_processor_count
    TQ, groups = attn.query_groups(m, nchunks * KV, resident)
    merging = attn.merging_blocks(nchunks, KV * groups, resident)
    part_ml = torch.empty(KV * nchunks * m * G * 2, dtype=torch.float32, device="cuda")
    part_acc = torch.empty(KV * nchunks * m * G * hd, dtype=torch.float32, device="cuda")
    counters = torch.zeros(attn.COUNTERS, dtype=torch.int32, device="cuda")
    out = torch.full_like(want, float("nan"))
    grid = (nchunks, KV, groups)
    args = (ptr(qkv), ptr(block), ptr(cos), ptr(sin), ptr(k_cache), ptr(v_cache), ptr(part_ml), ptr(part_acc),
            ptr(counters), ptr(out), np.int32(m), np.int32(H), np.int32(KV), np.int32(block.shape[1] - VISIBLE),
            np.int32(span), np.int32(rows), np.int32(TQ), np.int32(merging), np.float32(hd ** -0.5 * math.log2(math.e)))
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with stream:
        for _ in range(5):  # warm: the last call's timers are read
            fn(grid, (attn.THREADS,), args, shared_mem=smem)
    torch.cuda.synchronize()
    assert torch.equal(out, want), "the instrumented copy's output differs from the runtime kernel's"
    n_blocks = grid[0] * grid[1] * grid[2]
    timers = cupy.ndarray((n_blocks * SLOTS,), dtype=cupy.uint64, memptr=module.get_global("attn_trace"))
    raw = cupy.asnumpy(timers).reshape(n_blocks, SLOTS)
    g, c = raw[:, 0:12:2].astype(np.int64), raw[:, 1:12:2].astype(np.int64)
    share, sm = raw[:, 12].astype(np.int64) - 1000, raw[:, 13]
    t0 = g[:, 0].min()
    merger = share >= 0
    total_g, total_c = (g[:, 3] - g[:, 0]).astype(float), (c[:, 3] - c[:, 0]).astype(float)
    ns_per_cycle = float(np.median(total_g[total_c > 0] / total_c[total_c > 0]))
    chunk = np.arange(n_blocks) % grid[0]
    print(f"\n{model}: M = {m}, context {context}, span {span}, grid {grid} ({n_blocks} blocks on {len(set(sm))} SMs), "
          f"TQ {TQ}, merging blocks {merging}; {ns_per_cycle:.3f} ns a clock64 tick; output bitwise as the runtime's")
    print("\n| phase | first us | median us | last us | last chunk's blocks, median us |\n|---|---|---|---|---|")
    for p, name in enumerate(PHASES):
        have = merger if p >= 4 else np.ones(n_blocks, bool)
        t = (g[have, p] - t0) / 1e3
        lc = (g[have & (chunk == grid[0] - 1), p] - t0) / 1e3
        print(f"| {name} | {t.min():.2f} | {np.median(t):.2f} | {t.max():.2f} | "
              f"{np.median(lc) if lc.size else float('nan'):.2f} |")
    print("\n| a block's phase | median us | max us | last chunk's, median us |\n|---|---|---|---|")
    for p in range(1, 6):
        have = merger if p >= 4 else np.ones(n_blocks, bool)
        d = (c[have, p] - c[have, p - 1]) * ns_per_cycle / 1e3
        lc = (c[have & (chunk == grid[0] - 1), p] - c[have & (chunk == grid[0] - 1), p - 1]) * ns_per_cycle / 1e3
        print(f"| {PHASES[p - 1]} -> {PHASES[p]} | {statistics.median(d):.2f} | {d.max():.2f} | "
              f"{np.median(lc) if lc.size else float('nan'):.2f} |")
    end = (g[merger, 5].max() - t0) / 1e3
    print(f"\nfirst start to last merge done: {end:.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-8b,llama-3.2-1b")
    parser.add_argument("--m", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    args = parser.parse_args()
    for model in args.models.split(","):
        trace(model, args.m, args.context)


if __name__ == "__main__":
    main()
