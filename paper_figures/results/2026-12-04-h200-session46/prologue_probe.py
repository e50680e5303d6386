"""Session 46, call 4 (NOTES v261): what the AWQ GEMM's ~1.3-1.5 us prologue is (call 3: entry to
its PDL wait, 0.80 us at qkv's 11 warps a block, 1.25 at down's 19, 1.47 at o's 22: ~0.06 us a warp).

1. The real kernel, stamped (forward_timeline.py's build with its five AWQ marks moved into the
   prologue): thread 0's entry, then A the block function's first line (after the stamped build's
   barrier at the body's start: every warp of the block has arrived), B its lane constants, C its
   accumulators zeroed, D its first chunks' copies issued (at the PDL wait), E the wait's return.
   Spans per block, medians (10th / 90th percentile) over the blocks of one replay's launches:
   turnaround (entry after its SM's previous block's last thread), arrive (entry -> A), lanes
   (A -> B), zero (B -> C), copies (C -> D), wait (D -> E), rest (E -> thread 0's exit).
2. A bare kernel (warp_starts): every warp's lane 0 reads its SM's clock at entry; blocks of 704
   threads (o's 22 warps), 608 (down's 19), 352 (qkv's 11, two an SM), 1024 and 128, one block an
   SM (147 KB of shared memory) or with room for two (8 KB), PDL on, 64 launches in a graph, each
   block busy ~10 us: the spread of its warps' first clocks (last - first), cycles and ns.

M = 8, plan()'s shapes, weight copies rotated past L2. Random INT4 weights and x (labelled).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/prologue_probe.py
"""
import json
import statistics

import numpy as np
import torch

import paper_figures.forward_timeline as ft
from swiftspec_bench.kernel_bench import median_us
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_core.graphs import capture
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import awq_gemm, plan
from swiftspec_core.models.args import awq_bytes

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672)}  # Llama-3-70B
PROLOGUE_MARKS = (
    ("  extern __shared__ __align__(16) unsigned char smem[];\n  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n",
     "  extern __shared__ __align__(16) unsigned char smem[];\n  SWIFTSPEC_MARK(0);\n"
     "  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"),
    ("    c = *slot;\n    __syncwarp();\n  }\n", "    c = *slot;\n    __syncwarp();\n  }\n  SWIFTSPEC_MARK(1);\n"),
    ("for (int v = 0; v < Acc::kPieces; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);\n",
     "for (int v = 0; v < Acc::kPieces; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);\n  SWIFTSPEC_MARK(2);\n"),
    ("  pdl_start();\n  // The sums of squares", "  SWIFTSPEC_MARK(3);\n  pdl_start();\n  SWIFTSPEC_MARK(4);\n  // The sums of squares"),
)
COLUMNS = ("turnaround", "arrive", "lanes", "zero", "copies", "wait", "rest")

WARP_STARTS = r"""
#include "common.cuh"
#include "ll_line.cuh"
// starts[launch][block][32]: each warp's lane 0's clock64 at entry; info[launch][block][4]: thread 0's
// globaltimer at entry and exit, its SM, its clock64 at exit.
extern "C" __global__ void warp_starts(long long* starts, long long* info, int it, int work_ns) {
  const long long c0 = clock64();
  const long long g0 = (long long)global_ns();
  const long long slot = (long long)it * gridDim.x + blockIdx.x;
  if ((threadIdx.x & 31) == 0) starts[slot * 32 + (threadIdx.x >> 5)] = c0;
  pdl_start();
  while ((long long)global_ns() < g0 + work_ns) {}
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    info[slot * 4 + 0] = g0, info[slot * 4 + 1] = (long long)global_ns(), info[slot * 4 + 2] = sm;
    info[slot * 4 + 3] = clock64();
  }
}
"""


def cell(v) -> str:
    return f"{statistics.median(v):.2f} ({np.percentile(v, 10):.2f} / {np.percentile(v, 90):.2f})"


def real_kernel() -> list[dict]:
    ft.MARK_SETS["awq_gemm_block.cuh"] = PROLOGUE_MARKS
    ft.instrument_builds()
    device = torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    rows = []
    for op, (n, k) in SHAPES.items():
        copies = input_copies(awq_bytes(n * k, 128))
        calls = max(CALLS, copies)
        ws = [random_awq(n, k) for _ in range(copies)]
        x = torch.randn(8, k, device="cuda").to(torch.float16)
        out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)

        def run() -> None:
            for i in range(calls):
                awq_gemm(x, ws[i % copies], out=out)
        graph, _ = capture(run)
        us = median_us(graph, calls)
        ft.records(device, check=False)
        graph.replay()
        torch.cuda.synchronize()
        ordered = ft.launches(ft.records(device))
        spans = {c: [] for c in COLUMNS}
        for prev, a in zip(ordered, ordered[1:]):
            prev_last = {}
            for sm, last in zip(ft.sm_ids(prev).tolist(), prev[:, ft.LAST].astype(np.int64).tolist()):
                prev_last[sm] = max(prev_last.get(sm, 0), last)
            marks = a[:, 5:5 + len(ft.MARKS)].astype(np.int64)
            for j, sm in enumerate(ft.sm_ids(a).tolist()):
                if sm in prev_last and (marks[j] > 0).all():
                    t = [prev_last[sm], int(a[j, 1]), *marks[j].tolist(), int(a[j, 2])]
                    for c, d in zip(COLUMNS, np.diff(t)):
                        spans[c].append(d / 1e3)
        row = dict(op=op, x="fp16", plan=plan(n, k, 128, sms), us_a_call=round(us, 2),
                   **{c: cell(v) for c, v in spans.items()}, blocks=len(spans["rest"]))
        rows.append(row)
        print(json.dumps(row), flush=True)
        del graph
        ws.clear()
        torch.cuda.empty_cache()
    return rows


def bare_kernel() -> list[dict]:
    fn = build.compile_source(build.inline_includes(WARP_STARTS)).get_function("warp_starts")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    launches, rows = 64, []
    for threads, per_sm, shared_kb in ((704, 1, 147), (704, 2, 8), (608, 1, 147), (352, 2, 70), (1024, 1, 147),
                                       (128, 1, 147)):
        blocks, shared = sms * per_sm, shared_kb * 1024
        build.set_function_attribute(fn.kernel.ptr, build.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        starts = torch.zeros(launches, blocks, 32, dtype=torch.int64, device="cuda")
        info = torch.zeros(launches, blocks, 4, dtype=torch.int64, device="cuda")

        def go() -> None:
            for it in range(launches):
                build.launch_ex(fn.kernel.ptr, (blocks,), (threads,),
                                (build.ptr(starts), build.ptr(info), np.int32(it), np.int32(10_000)), shared,
                                torch.cuda.current_stream().cuda_stream, True)
        go()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            go()
        graph.replay()
        torch.cuda.synchronize()
        w = threads // 32
        s = starts[1:, :, :w].cpu().numpy()  # [launches - 1, blocks, warps] cycles
        spread = (s.max(axis=2) - s.min(axis=2)).flatten()
        inf = info[1:].cpu().numpy()
        ghz = np.median((inf[:, :, 3] - s[:, :, 0]) / (inf[:, :, 1] - inf[:, :, 0]))  # cycles a ns (warp 0's)
        order = np.argsort(s, axis=2)  # which warp started when
        rows.append(dict(threads=threads, warps=w, blocks_an_sm=per_sm, shared_kb=shared_kb,
                         spread_cycles=cell(spread), spread_ns=cell(spread / ghz), clock_ghz=round(float(ghz), 3),
                         ns_a_warp=round(float(np.median(spread / ghz)) / max(w - 1, 1), 1),
                         in_order=float(np.mean(np.all(np.diff(order, axis=2) > 0, axis=2)))))
        print(json.dumps(rows[-1]), flush=True)
        del graph
    return rows


def table(rows: list[dict]) -> None:
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(v) for v in r.values()) + " |")


def main() -> None:
    real = real_kernel()
    bare = bare_kernel()
    print(f"\n# {torch.cuda.get_device_name()}; random INT4 weights and x\n\n## The AWQ GEMM's prologue, stamped "
          "(us, median (10th / 90th percentile) over blocks)\n")
    table(real)
    print("\n## Bare blocks: the spread of their warps' first clocks\n")
    table(bare)


if __name__ == "__main__":
    main()
