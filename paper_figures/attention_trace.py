"""A timeline of one tree_attention call: when each block starts, stages, passes the steps of
thread 0's item (q roped, scores, softmax, values), finishes its items, takes its merge ticket
and, the last block of a (kv head, query group), merges (thread 0's first output: its loop over
the chunks, its store), from timers its thread 0 reads.

    PYTHONPATH=. python3 paper_figures/attention_trace.py [--models llama-3-8b,llama-3.2-1b] [--m 8] [--context 1000]
                                                          [--no-append] [--cold [--code-warm]]

The runtime's kernel is not touched: this script inlines cuda/attention.cu as build.py does, adds
the timer reads at fixed lines of it (asserting each line is there), compiles that copy with
NVRTC, launches it with kernels/attention.py's own arguments (tree_attention_launch; a chain block
after `context` cached rows, the kernel bench's case; the cache append inside, as the forward runs
it, unless --no-append), checks its output and appended cache bitwise against the runtime's, and
prints, per phase, the spread over blocks (us after the first block's start, from
%globaltimer) and each block's own phase lengths (from clock64, in us at the ratio the two timers
show).
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from swiftspec_bench.kernel_ops import chain_block, l2_bytes, randn
from swiftspec_bench.kernel_shapes import shard_args
from swiftspec_core.graphs import spans
from swiftspec_core.kernels import attention as attn
from swiftspec_core.kernels.build import launch_ex, compile_source, source
from swiftspec_core.models.rope import rope_tables
from timing import fail

# Phases in the order a block passes them; those inside the item and merge loops are stamped by
# thread 0 in each it takes (the last one's stamp stays: at M = 8 a warp takes one item, a merging
# thread one output).
PHASES = ("start", "staged", "q roped", "scores", "softmax", "values", "items done", "ticket", "merge start",
          "merge max", "merge summed", "merge done")
MERGED, TICKET, MERGING = PHASES.index("merge done"), PHASES.index("ticket"), PHASES.index("merge start")
SLOTS = 2 * len(PHASES) + 2  # per block: a globaltimer and a clock64 a phase, whether it merged, its SM
BLOCK_ID = "const long long b_ = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); "


def stamp(phase: int, fenced: bool = False) -> str:
    """Thread 0's two timers into the phase's slots. fenced: the timer read is a compiler barrier for
    memory accesses (a "memory" clobber), so loads written before it are issued before it."""
    clobber = ' : : "memory"' if fenced else ""
    return ("  if (threadIdx.x == 0) { unsigned long long g_, c_; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(g_)"
            f"{clobber}); c_ = clock64(); {BLOCK_ID}attn_trace[b_ * {SLOTS} + {2 * phase}] = g_; "
            f"attn_trace[b_ * {SLOTS} + {2 * phase + 1}] = c_; }}\n")


def instrumented_source() -> str:
    s = source("attention")
    merged = ("  if (threadIdx.x == 0) { unsigned smid_; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid_)); "
              f"{BLOCK_ID}attn_trace[b_ * {SLOTS} + {SLOTS - 2}] = is_last; attn_trace[b_ * {SLOTS} + {SLOTS - 1}] = smid_; }}\n")
    P = PHASES.index
    anchors = [  # (text, what goes before it, what after it)
        ("  // PDL: the kernel before this one writes qkv", stamp(0), ""),
        ("  for (int item = warp; item < (t1 - t0) * passes; item += NWARPS) {\n", stamp(P("staged")), ""),  # after the barrier
        ("    auto value_of = [&](int r) { return row_of(v_tile, v_cache, new_v, r); };\n    __syncwarp();\n", "",
         stamp(P("q roped"))),
        ("    // Softmax a head over the chunk", stamp(P("scores")), ""),
        ("      l2[h] = l;\n    }\n    __syncwarp();\n", "", stamp(P("softmax"))),
        ("    // Partials of the item's heads below G", stamp(P("values")), ""),
        ("  // Who merges (attention_merge.cuh's merge_role).", stamp(P("items done")), ""),
        ("  if (!is_last) return;", stamp(TICKET) + merged, ""),
        ("    float m = NEG_INF, l = 0.f;\n", stamp(P("merge start")), ""),
        # after the batch's max, the first use of its chunks' (max, sum) loads: every load of the
        # batch issued before it (none moves past a fenced timer read), the (max, sum) ones landed
        ("      const float keep = exp2f(m - m_new);", stamp(P("merge max"), fenced=True), ""),
        ("    uint4 packed;\n", stamp(P("merge summed")), ""),
        ("    *reinterpret_cast<uint4 *>(out + (long long)t * H * HD + (long long)h * HD + d) = packed;\n  }\n",
         "", stamp(MERGED)),
    ]
    for text, before, after in anchors:
        assert s.count(text) == 1, f"attention.cu changed: {text!r} found {s.count(text)} times"
        s = s.replace(text, before + text + after)
    return "__device__ unsigned long long attn_trace[65536 * %d];\n" % SLOTS + s  # before every use


def trace(model: str, m: int, context: int, append: bool = True, cold: bool = False, code_warm: bool = False) -> None:
    """cold: the L2 cache emptied of the call's buffers before the traced call (a buffer of twice its
    size read through it), as a forward's layer finds them after its weights went by (~440 MB a 70B
    AWQ layer). code_warm (with cold): then one call of the same kernel on copies of every input and
    its own partials, so that the kernel's code is fetched again and the traced call's data is not
    (only the merge counters, one per device, are shared)."""
    import cupy

    a = shard_args(model, 1)
    H, KV, hd = a.n_heads, a.n_kv_heads, a.head_dim
    rows = context + m + 1
    span = next(s for s in spans(rows) if s >= context + m)
    k_cache, v_cache = randn(rows, KV, hd), randn(rows, KV, hd)
    qkv, block = randn(m, (H + 2 * KV) * hd), chain_block(context, m)
    cos, sin = rope_tables(a, context + m, device="cuda")
    want_k, want_v = k_cache.clone(), v_cache.clone()  # the runtime kernel appends into its own copies
    want = attn.tree_attention(qkv, block, cos, sin, want_k, want_v, span, H, KV, append=append)

    module = compile_source(instrumented_source())
    out = torch.full_like(want, float("nan"))
    kernel, grid, args, partials = attn.tree_attention_launch(qkv, block, cos, sin, k_cache, v_cache, span, H,
                                                              KV, out, append=append)
    fn = module.get_function(kernel)
    smem = attn.shared_bytes(hd, m if append else 0)
    fn.max_dynamic_shared_size_bytes = smem
    stream = torch.cuda.current_stream().cuda_stream
    n_blocks = grid[0] * grid[1] * grid[2]
    if code_warm:  # the decoy's buffers (and the partials its args point to) live until it ran
        decoy = [t.clone() for t in (qkv, block, cos, sin, k_cache, v_cache, out)]
        _, _, decoy_args, decoy_partials = attn.tree_attention_launch(*decoy[:6], span, H, KV, decoy[6], append=append)
    # twice the L2 cache, written now so that its dirty lines are gone by the traced call
    scratch = torch.ones(2 * l2_bytes() // 4, dtype=torch.int32, device="cuda") if cold else None
    timers = cupy.ndarray((n_blocks * SLOTS,), dtype=cupy.uint64, memptr=module.get_global("attn_trace"))
    for i in range(5):  # warm; the last call's timers are read (the append writes the same rows each time)
        if i == 4:  # which blocks merge changes from call to call: no stamp of an earlier call stays
            torch.cuda.synchronize()
            timers.fill(0)
            if cold:  # clean lines of another buffer in their place, as weights read leave them
                scratch.max()
            if code_warm:  # its stamps are cleared below
                launch_ex(fn.kernel.ptr, grid, (attn.THREADS,), decoy_args, smem, stream, pdl=False)
                torch.cuda.synchronize()
                timers.fill(0)
            cupy.cuda.runtime.deviceSynchronize()
        launch_ex(fn.kernel.ptr, grid, (attn.THREADS,), args, smem, stream, pdl=False)
    torch.cuda.synchronize()
    del partials
    assert torch.equal(out, want), "the instrumented copy's output differs from the runtime kernel's"
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v), "its cache append differs"
    raw = cupy.asnumpy(timers).reshape(n_blocks, SLOTS)
    n = len(PHASES)
    g, c = raw[:, 0:2 * n:2].astype(np.int64), raw[:, 1:2 * n:2].astype(np.int64)
    merger, sm = raw[:, SLOTS - 2] >= 1, raw[:, SLOTS - 1]  # is_last: the merging part + 1
    t0 = g[:, 0].min()
    total_g, total_c = (g[:, TICKET] - g[:, 0]).astype(float), (c[:, TICKET] - c[:, 0]).astype(float)
    ns_per_cycle = float(np.median(total_g[total_c > 0] / total_c[total_c > 0]))
    chunk = np.arange(n_blocks) % grid[0]

    def stamped(p: int) -> np.ndarray:
        """The blocks that stamped phase p: an item phase needs an item, a merge phase a merging block
        with an output to merge (with two mergers the second may have none: NOTES, call 1 of session 21)."""
        return (g[:, p] > 0) & (merger if p >= MERGING else True)

    print(f"\n{model}: M = {m}, context {context}, span {span}, append {'inside' if append else 'apart'}, "
          f"L2 {'emptied first' if cold else 'warm'}{', then the code fetched by a call on copies' if code_warm else ''}, "
          f"grid {grid} "
          f"({n_blocks} blocks on {len(set(sm))} SMs), "
          f"{int(merger.sum())} merging; {ns_per_cycle:.3f} ns a clock64 tick; output bitwise as the runtime's")
    print("\n| phase | first us | median us | last us | last chunk's blocks, median us |\n|---|---|---|---|---|")
    for p, name in enumerate(PHASES):
        have = stamped(p)
        t = (g[have, p] - t0) / 1e3
        lc = (g[have & (chunk == grid[0] - 1), p] - t0) / 1e3
        print(f"| {name} | {t.min():.2f} | {np.median(t):.2f} | {t.max():.2f} | "
              f"{np.median(lc) if lc.size else float('nan'):.2f} |")
    print("\n| a block's phase | median us | max us | last chunk's, median us |\n|---|---|---|---|")
    for p in range(1, n):
        have = stamped(p) & stamped(p - 1)
        d = (c[have, p] - c[have, p - 1]) * ns_per_cycle / 1e3
        lc = (c[have & (chunk == grid[0] - 1), p] - c[have & (chunk == grid[0] - 1), p - 1]) * ns_per_cycle / 1e3
        if not d.size:
            continue
        print(f"| {PHASES[p - 1]} -> {PHASES[p]} | {statistics.median(d):.2f} | {d.max():.2f} | "
              f"{np.median(lc) if lc.size else float('nan'):.2f} |")
    print(f"\nfirst start to last merge done: {(g[merger, MERGED].max() - t0) / 1e3:.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-8b,llama-3.2-1b")
    parser.add_argument("--m", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--no-append", action="store_true", help="the kernel without the cache append inside "
                        "(the forward runs it with: the default)")
    parser.add_argument("--cold", action="store_true", help="empty the L2 cache before the traced call (a "
                        "forward's layer finds its caches, partials and counters there after its weights went by)")
    parser.add_argument("--code-warm", action="store_true", help="with --cold: then one call on copies of the "
                        "inputs, which fetches the kernel's code again and not the traced call's data")
    args = parser.parse_args()
    if args.code_warm and not args.cold:
        fail("--code-warm goes with --cold (the L2 is warm without it)")
    for model in args.models.split(","):
        trace(model, args.m, args.context, append=not args.no_append, cold=args.cold, code_warm=args.code_warm)


if __name__ == "__main__":
    main()
