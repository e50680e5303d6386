"""When each block of each of our kernels starts and ends inside one replay of a forward's graph, by
place in a layer: how much each kernel adds to the forward (its last block's end after the kernel
before it), and how that splits into its blocks' spread of ends (the tail) and the rest.

    PYTHONPATH=. python3 paper_figures/forward_timeline.py [--models llama-3-8b] [--quant none|awq] [--width 8]

The runtime's kernels are not touched: this script hands build.py instrumented sources (every
`extern "C" __global__` body opens with a scope whose thread 0 reads %globaltimer on entry and on
leaving, and whose last thread to leave (a shared count, set before a barrier at the body's start)
writes the grid's id (%gridid, one a launch), its SM, those times and its own exit to a record of
its module), in a fresh process before any kernel is built. One replay's records are grouped by launch,
launches ordered by their first start, and matched one to one with our kernels in the order
torch.profiler lists them for the same graph (its names also give each launch its place:
profile_forward.label_kernels). A block's times are its thread 0's (entry to exit), so a block
waiting under PDL counts from when it became resident: `adds` is what the forward's critical path
sees. Timing only: it adds a barrier at the start, a shared atomic a thread at the end and 24 bytes of
shared memory to every kernel; the exit lag column says how much later than thread 0 a launch's last
thread leaves (what its dependents' PDL wait waits for).

The bf16 GEMMs (sources that inline gemm_tile.cuh) also stamp MARKS inside, from thread 0 (warp 0):
when it reaches its PDL wait and when the wait returns, when its first x has arrived (thread 0
waits for it before its loop, where it would wait at its first mma), when its main loop ends and
when the block's combine barrier passes (40 bytes more of shared memory there; no stamp inside the
loop, which moved ptxas's registers by up to +16 / -48); the phases table splits their time at
those stamps (NOTES v127, v137). The AWQ GEMMs (sources that inline awq_gemm_block.cuh) stamp the
same five places in their terms (NOTES v244): their first chunk of codes landed in warp 0's ring
stands for "x arrived", and "combined" is the block's barrier after the loop (the sums' combine and
the stores are then the epilogue).
"""
from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict

import numpy as np
import torch

from swiftspec_bench.kernel_bench import build_shard, forward_graph, use_kernels
from swiftspec_core.kernels import build
from swiftspec_core.runtime.floor import copy_bandwidth

from paper_figures.forward_ablation import PROJECTIONS, weight_bytes
from paper_figures.profile_forward import ORDER, kernel_events, label_kernels

CAPACITY = 1 << 20  # records a module holds, one replay's (a 70B forward: ~80 layers x 5 launches x ~250 blocks)
# The GEMMs' stamps, in the order a block passes them.
MARKS = ("waiting", "waited", "x arrived", "loop done", "combined")
FIELDS = 6 + len(MARKS)  # a record: gridid, start ns, end ns, site << 32 | smid, block, the marks (0: none), last
LAST = FIELDS - 1  # the field of the block's last thread's exit (its end is thread 0's)
# Where gemm_tile.cuh's blocks stamp: (its text, that text with the mark), each asserted to occur once.
GEMM_MARK_AT = (
    ("  pdl_wait();\n  load_x(cur, warp);",
     "  SWIFTSPEC_MARK(0);\n  pdl_wait();\n  SWIFTSPEC_MARK(1);\n  load_x(cur, warp);"),
    ("    __syncthreads();\n  }\n  // c0 is warp-uniform",  # thread 0 waits here for its first x, not in the loop
     "    __syncthreads();\n  }\n  SWIFTSPEC_MARK_AFTER(2, cur.lo[0].x);\n  // c0 is warp-uniform"),
    ("    cur = next;\n  }\n  pdl_trigger();", "    cur = next;\n  }\n  SWIFTSPEC_MARK(3);\n  pdl_trigger();"),
    ("squares.hi;\n  }\n  __syncthreads();\n}", "squares.hi;\n  }\n  __syncthreads();\n  SWIFTSPEC_MARK(4);\n}"),
)
# awq_gemm_block.cuh's: the PDL wait, warp 0's first chunk in its ring (thread 0 has waited for it
# there anyway), warp 0's loop done, the barrier after every warp's loop.
AWQ_MARK_AT = (
    ("  pdl_start();\n  // The sums of squares", "  SWIFTSPEC_MARK(0);\n  pdl_start();\n  SWIFTSPEC_MARK(1);\n  // The sums of squares"),
    ("chunk n - 1's stage\n", "chunk n - 1's stage\n      if (n == 0) SWIFTSPEC_MARK(2);\n"),
    ("  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums\n  __syncthreads();\n",
     "  SWIFTSPEC_MARK(3);\n  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums\n"
     "  __syncthreads();\n  SWIFTSPEC_MARK(4);\n"),
)
MARK_SETS = {"gemm_tile.cuh": GEMM_MARK_AT, "awq_gemm_block.cuh": AWQ_MARK_AT}  # by the header whose text they stamp
MARKED = "#define SWIFTSPEC_TL_MARKS\n"  # before PRELUDE in a source with the marks
PRELUDE = """
#ifdef SWIFTSPEC_TL_MARKS
__shared__ unsigned long long swiftspec_tl_marks[%d];
#define SWIFTSPEC_MARK(i) \\
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(swiftspec_tl_marks[i]))
#define SWIFTSPEC_MARK_AFTER(i, v) \\
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) { asm volatile("" :: "r"(v)); SWIFTSPEC_MARK(i); }
#define SWIFTSPEC_TL_MARK(i) swiftspec_tl_marks[i]
#else
#define SWIFTSPEC_TL_MARK(i) 0ull
#endif
__device__ unsigned long long swiftspec_tl[%d * %d];
__device__ unsigned int swiftspec_tl_n;
struct SwiftspecShared {  // a block's: thread 0's entry and exit, the threads still running
  unsigned long long t0, t1;
  unsigned left;
};
struct SwiftspecTimeline {  // forward_timeline.py: thread 0's entry and exit of every block, its last thread's exit
  SwiftspecShared *b;
  unsigned site;
  __device__ __forceinline__ SwiftspecTimeline(unsigned s, SwiftspecShared *shared) : b(shared), site(s) {
    if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
#ifdef SWIFTSPEC_TL_MARKS
      for (int k = 0; k < %d; ++k) swiftspec_tl_marks[k] = 0;
#endif
      b->left = blockDim.x * blockDim.y * blockDim.z;
      asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(b->t0));
    }
    __syncthreads();  // every thread is at the body's start: left is set before any thread leaves
  }
  __device__ __forceinline__ ~SwiftspecTimeline() {
    if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
      asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(b->t1));
      __threadfence_block();
    }
    if (atomicSub(&b->left, 1u) != 1u) return;  // the block's last thread writes its record
    __threadfence_block();
    unsigned long long last, grid;
    unsigned sm;
    asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(last));
    asm volatile("mov.u64 %%0, %%%%gridid;" : "=l"(grid));
    asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(sm));
    const unsigned i = atomicAdd(&swiftspec_tl_n, 1u);
    if (i >= %d) return;
    unsigned long long *r = swiftspec_tl + (unsigned long long)%d * i;
    r[0] = grid, r[1] = b->t0, r[2] = b->t1, r[3] = ((unsigned long long)site << 32) | sm;
    r[4] = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    for (int k = 0; k < %d; ++k) r[5 + k] = SWIFTSPEC_TL_MARK(k);
    r[%d] = last;
  }
};
""" % (len(MARKS), CAPACITY, FIELDS, len(MARKS), CAPACITY, FIELDS, len(MARKS), LAST)
_KERNEL = re.compile(r'extern "C" __global__')


def instrument(text: str) -> tuple[str, int]:
    """A source (includes inlined) with the scope at the top of every kernel body -> (source, kernels).
    A body's `{` is the first at parenthesis depth 0 after `extern "C" __global__` (launch bounds and
    parameters are balanced); the scope goes on the same line, so a kernel written in a macro stays
    one (its lines end in a backslash). A source that inlines gemm_tile.cuh or awq_gemm_block.cuh gets
    its MARKS too."""
    marked = False
    for header, mark_at in MARK_SETS.items():
        if mark_at[0][0] not in text:
            continue
        marked = True
        for plain, stamped in mark_at:
            if text.count(plain) != 1:
                raise ValueError(f"{header} no longer has one {plain!r}: update MARK_SETS")
            text = text.replace(plain, stamped)
    out, last, sites = [], 0, 0
    for match in _KERNEL.finditer(text):
        depth, i = 0, match.end()
        while not (text[i] == "{" and depth == 0):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append(text[last:i + 1])
        out.append(f" __shared__ SwiftspecShared swiftspec_tl_b; SwiftspecTimeline swiftspec_tl_scope({sites}, "
                   f"&swiftspec_tl_b);")
        last, sites = i + 1, sites + 1
    return (MARKED if marked else "") + PRELUDE + "".join(out) + text[last:], sites


_plain_source = build.source
_built: set[str] = set()


def _instrumented_source(name: str) -> str:
    _built.add(name)
    return instrument(_plain_source(name))[0]


def instrument_builds() -> None:
    """From now on build.py builds every cuda/ source instrumented (call before any kernel is built;
    edge_pairs.py times real kernels with it too)."""
    build.source = _instrumented_source


def _ours(name: str) -> bool:
    """A kernel of cuda/ by its profiler name (torch's are C++ signatures, copies and sets are named so)."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None


def records(device: int, check: bool = True) -> np.ndarray:
    """Every built module's records since the last reset -> [n, FIELDS] uint64; resets them. check:
    fail where a module's records overflowed (not when dropping the warm-up's, which may)."""
    import cupy

    rows = []
    for name in sorted(_built):
        m = build.module(name, device)
        count = cupy.ndarray((1,), dtype=cupy.uint32, memptr=m.get_global("swiftspec_tl_n"))
        n = min(int(count.get()[0]), CAPACITY)
        if check and n == CAPACITY:
            raise RuntimeError(f"{name}: the timeline's {CAPACITY} records overflowed")
        table = cupy.ndarray((CAPACITY * FIELDS,), dtype=cupy.uint64, memptr=m.get_global("swiftspec_tl"))
        rows.append(cupy.asnumpy(table[: n * FIELDS]).reshape(n, FIELDS))
        count[...] = 0
    return np.concatenate(rows) if rows else np.zeros((0, FIELDS), dtype=np.uint64)


def place_bytes(engine) -> dict[str, int]:
    """A layer's weight bytes by place (the 4-bit codes, zeros and scales where AWQ)."""
    return {place: weight_bytes(getattr(engine.layers[0], attr)) for place, attr in PROJECTIONS.items()}


def launches(rec: np.ndarray) -> list[np.ndarray]:
    """Records -> one array of records a launch (by %gridid), launches in the order of their first start."""
    grids = defaultdict(list)
    for r in rec:
        grids[int(r[0])].append(r)
    return sorted((np.array(v) for v in grids.values()), key=lambda a: int(a[:, 1].min()))


def sm_ids(a: np.ndarray) -> np.ndarray:
    """Records -> each one's SM (field 3's low half; its high half is the kernel's site)."""
    return a[:, 3] & 0xFFFFFFFF


def placement(a: np.ndarray) -> dict:
    """A launch's records -> the SMs its blocks ran on and the most blocks any one of them ran (a
    consumer launched under PDL lands where its producer leaves room: NOTES v116)."""
    counts = np.unique(sm_ids(a), return_counts=True)[1]
    return dict(sms=len(counts), most_an_sm=int(counts.max()))


def sm_gap(a: np.ndarray) -> float:
    """A launch's records -> its last end after the mean over its SMs of each SM's last end (us): what
    a perfectly balanced launch would save (SMs given the same work finish ~10% apart, and not the
    same SMs from one GEMM to the next: NOTES, v129 / v130 outcome)."""
    sm, end = sm_ids(a), a[:, 2].astype(np.int64)
    last_by_sm = [int(end[sm == s].max()) for s in np.unique(sm)]
    return (int(end.max()) - float(np.mean(last_by_sm))) / 1e3


def after_previous(places: list[str], ordered: list[np.ndarray]):
    """(place, a launch's records, the last end of the launch before it: None for the first) in order."""
    prev_end = None
    for place, a in zip(places, ordered):
        yield place, a, prev_end
        prev_end = int(a[:, 2].max())


def summarize(places: list[str], ordered: list[np.ndarray], weights: dict[str, int], bandwidth: float) -> list[dict]:
    """Each launch's times against the launch before it, medians by place (in ORDER); floors from a
    layer's weight bytes over the copy bandwidth (B/s)."""
    by_place = defaultdict(list)
    for place, a, prev_end in after_previous(places, ordered):
        start, end = a[:, 1].astype(np.int64), a[:, 2].astype(np.int64)
        last = int(end.max())
        by_place[place].append(dict(
            adds=(last - prev_end) / 1e3 if prev_end is not None else float("nan"),
            lead=(int(start.min()) - prev_end) / 1e3 if prev_end is not None else float("nan"),
            tail=(last - float(np.median(end))) / 1e3, ends=(last - int(end.min())) / 1e3,
            block=float(np.median(end - start)) / 1e3, sm_gap=sm_gap(a), blocks=len(a), **placement(a),
            lag=(int(a[:, LAST].max()) - last) / 1e3 if a.shape[1] > LAST else float("nan")))
    rows = []
    for place in sorted(by_place, key=lambda x: ORDER.index(x) if x in ORDER else len(ORDER)):
        runs = by_place[place]
        # Medians over the launches that have the value (the forward's first has no adds or lead).
        known = {k: [r[k] for r in runs if r[k] == r[k]]
                 for k in ("adds", "lead", "tail", "ends", "block", "sm_gap", "lag")}
        med = {k: statistics.median(v) if v else float("nan") for k, v in known.items()}
        floor = weights[place] / bandwidth * 1e6 if place in weights else float("nan")
        rows.append(dict(place=place, launches=len(runs), blocks=runs[0]["blocks"],
                         sms=statistics.median(r["sms"] for r in runs),
                         most_an_sm=statistics.median(r["most_an_sm"] for r in runs), floor_us=floor,
                         **{f"{k}_us": v for k, v in med.items()}))
    return rows


PHASES = ("reach", "in wait", "release", "x", "loop", "combine", "epilogue")  # a GEMM block's spans


def phases(places: list[str], ordered: list[np.ndarray]) -> dict[str, dict]:
    """The marked launches' (the GEMMs') blocks split at their stamps, medians (us) over every block of
    a place: reach, its arrival at its PDL wait after the last end of the launch before it (negative:
    it waited there first); in wait, the wait's return after both that end and its arrival (what the
    wait itself costs once nothing is left to wait for); release, the wait's return after that end;
    x, its first x's arrival after that; loop, the rest of its main loop; combine, the block's
    barrier after the loop; epilogue, its exit after the barrier."""
    spans = defaultdict(list)
    for place, a, prev_end in after_previous(places, ordered):
        marks = a[:, 5:5 + len(MARKS)].astype(np.int64)  # [blocks, MARKS] ns, 0 where none
        if prev_end is not None and (marks > 0).all():
            waiting, waited = marks[:, 0] - prev_end, marks[:, 1] - prev_end
            stamps = np.column_stack([np.full(len(a), prev_end), marks[:, 1:], a[:, 2].astype(np.int64)])
            spans[place].append(np.column_stack([waiting, waited - np.maximum(waiting, 0),
                                                 np.diff(stamps, axis=1)]) / 1e3)  # [blocks, PHASES]
    return {place: dict(zip(PHASES, np.median(np.concatenate(runs), axis=0).tolist()))
            for place, runs in spans.items()}


def layer_blocks(places: list[str], ordered: list[np.ndarray], layer: int) -> list[dict]:
    """Every block of a layer's launches (each place's layer-th; the forward's first launch has no
    kernel before it and is left out), by start (then block), times in us after the last end of the
    launch before it."""
    seen, rows = defaultdict(int), []
    for place, a, prev_end in after_previous(places, ordered):
        if seen[place] == layer and prev_end is not None:
            for r, sm in sorted(zip(a.tolist(), sm_ids(a).tolist()), key=lambda rs: (rs[0][1], rs[0][4])):
                rows.append(dict(place=place, block=int(r[4]), sm=int(sm),
                                 start_us=(int(r[1]) - prev_end) / 1e3, end_us=(int(r[2]) - prev_end) / 1e3))
        seen[place] += 1
    return rows


def timeline(model: str, width: int, context: int, quant: str,
             layer: int = 2) -> tuple[list[dict], dict, list[dict]]:
    engine = build_shard(model, 1, context + width + 1, quant=quant)
    use_kernels(engine, "ours")
    graph, keep = forward_graph(engine, width, context)
    graph.replay()
    torch.cuda.synchronize()
    names = [e.name for e in kernel_events(graph)]
    places = [p for n, p in zip(names, label_kernels(names)) if _ours(n)]
    device = torch.cuda.current_device()
    records(device, check=False)  # drop the capture's, the warm-up's and the profiled replay's
    torch.cuda.synchronize()  # the counters' reset (CuPy's stream) before the replay (torch's)
    graph.replay()
    torch.cuda.synchronize()
    ordered = launches(records(device))
    if len(ordered) != len(places):
        raise RuntimeError(f"{len(ordered)} launches recorded, {len(places)} of our kernels profiled")
    rows = summarize(places, ordered, place_bytes(engine), copy_bandwidth())
    split = phases(places, ordered)
    for r in rows:
        r.update(model=model, quant=quant, **{f"{k}_us": v for k, v in split.get(r["place"], {}).items()})
    span = (max(int(a[:, 2].max()) for a in ordered) - min(int(a[:, 1].min()) for a in ordered)) / 1e3
    blocks = [dict(model=model, **b) for b in layer_blocks(places, ordered, layer)]
    del keep, engine, graph
    torch.cuda.empty_cache()
    summary = dict(model=model, quant=quant, width=width, context=context, launches=len(ordered), span_us=span)
    return rows, summary, blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-8b")
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--quant", choices=("none", "awq"), default="none")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--blocks", default=None, help="CSV of every block of one layer's launches (--layer)")
    parser.add_argument("--layer", type=int, default=2)
    args = parser.parse_args()
    instrument_builds()  # before any kernel is built (module() reads it)
    all_rows, all_blocks = [], []
    for model in args.models.split(","):
        rows, s, blocks = timeline(model, args.width, args.context, args.quant, args.layer)
        all_rows, all_blocks = all_rows + rows, all_blocks + blocks
        print(f"\n{model} (quant {s['quant']}), width {s['width']}, context {s['context']}: {s['launches']} launches "
              f"of our kernels, first start to last end {s['span_us']:.1f} us (one replay, instrumented)")
        print("\n| place | launches | blocks | SMs | most an SM | adds us (median) | floor us | lead us | tail us "
              "| ends spread us | a block us | SM gap us | exit lag us |\n" + "|---" * 13 + "|")
        for r in rows:
            cells = [r["place"], r["launches"], r["blocks"], f"{r['sms']:g}", f"{r['most_an_sm']:g}"]
            cells += [f"{r[k]:.2f}" for k in ("adds_us", "floor_us", "lead_us", "tail_us", "ends_us", "block_us",
                                                 "sm_gap_us", "lag_us")]
            print("| " + " | ".join(map(str, cells)) + " |")
        marked = [r for r in rows if "release_us" in r]
        if marked:
            print("\n| place | " + " | ".join(f"{k} us" for k in PHASES) + " |\n|---|" + "---|" * len(PHASES))
            for r in marked:
                print(f"| {r['place']} | " + " | ".join(f"{r[k + '_us']:.2f}" for k in PHASES) + " |")
    print("\nadds: the launch's last end after the last end of the kernel before it; lead: its first start "
          "after that end (negative: resident early, under PDL); tail: its last end after its median end; "
          "ends spread: last end after first end; a block: median entry to exit of thread 0; SMs, most an "
          "SM: the SMs a launch's blocks ran on and the most any one ran; SM gap: the last end after the mean "
          "of the SMs' last ends; exit lag: the last exit of any thread of the launch after its last thread 0's "
          "(medians over launches). The GEMMs' phases (medians over their blocks, thread 0's stamps): reach, "
          "its arrival at the PDL wait after the kernel before ends (negative: early); in wait, the wait's "
          "return after both; release, the wait's return after the kernel before ends; x, its first x loads' "
          "arrival; loop, the rest of the main loop; combine, the block's barrier; epilogue, the combine and "
          "stores to its exit.")
    import pandas as pd

    for path, table in ((args.csv, all_rows), (args.blocks, all_blocks)):
        if path:
            pd.DataFrame(table).to_csv(path, index=False)


if __name__ == "__main__":
    main()
