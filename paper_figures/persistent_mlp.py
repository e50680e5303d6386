"""A persistent forward's first measurement (NOTES v149-v152): `PYTHONPATH=. python3 paper_figures/persistent_mlp.py`
on a GPU (--rows M, --rings PAGE_KxDEPTH,..).

The lead after the twenty-fourth session was a persistent forward ("No Bubbles"-style: one kernel,
weights paged into shared memory while the blocks wait on their dependencies) instead of one kernel
a projection. Before building one, this asks the question it rests on with the part of a layer that
has no attention: L layers of the MLP at the Llama-3.2-1B's shapes (gate_up with SwiGLU, then down,
the next layer's x the last one's output), M rows, random bf16 weights, distinct per layer, so
nothing is served from L2. Sides, each in one CUDA graph:

- ours: today's kernels, gemm_swiglu then gemm, 2 L launches under PDL (the forward's MLP, without
  its norm and residual);
- persistent: paper_figures/persistent_mlp.cu, one launch, a grid barrier after every phase, each
  block's weight pages streaming through a ring of shared-memory slots, in four modes: deep (pages
  cross the barriers) or shallow (a phase's pages issued only once its barrier passed: what the
  paging is worth), and a page as one bulk copy of its image laid out on the host (paged()) or as
  one copy a weight row (what the copy count costs). x, y and out are kept in slices (sliced()),
  one a page's k, so a page waits only for its own slice.

Each side's outputs are checked first (poisoned with NaN): the persistent kernel's y and out of every
layer against torch on the same inputs (bf16 rounding apart), its four modes bitwise alike, and row
0 bitwise as in a run of that row alone; ours against torch. Rows: us a layer (median of graph
replays), the floor (weight bytes / measured copy bandwidth; the page images read 0.8% more) and
the ratio.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_core.kernels import build
from swiftspec_core.kernels.gemm import gemm, gemm_reference
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu, gemm_swiglu_reference

from paper_figures.timing import device_line, fail, print_rows

HIDDEN, FFN = 2048, 8192  # Llama-3.2-1B
THREADS, WARPS, MAX_A_ITEMS = 256, 8, 8
SOURCE = Path(__file__).with_name("persistent_mlp.cu")
SHARED_MAX = 227 * 1024  # an H100 / H200 block's shared memory at most
STATIC_RESERVE = 256  # the kernel's mbarriers (static shared memory)
MODES = ((True, True), (False, True), (True, False), (False, False))  # (deep, a copy a page)


def shared_bytes(page_k: int, depth: int, max_m: int) -> int:
    """persistent_mlp.cu's SMEM_BYTES: the ring, then phase A's x slices and partials or phase B's y
    slices (a slice: max_m rows of page_k + 8)."""
    row = page_k * 2 + 16
    region_a = HIDDEN // page_k * max_m * row + MAX_A_ITEMS * WARPS * 32 * 16
    return depth * 16 * row + max(region_a, FFN // page_k * max_m * row)


def sliced(x: torch.Tensor, page_k: int) -> torch.Tensor:
    """[..., M, K] as the kernel keeps x0, y and out: [..., K / page_k, M, page_k + 8] (padding zero)."""
    *lead, m, k = x.shape
    x = x.reshape(*lead, m, k // page_k, page_k).transpose(-2, -3)
    return torch.nn.functional.pad(x, (0, 8)).contiguous()


def unsliced(x: torch.Tensor) -> torch.Tensor:
    """sliced()'s inverse: [..., S, M, page_k + 8] -> [..., M, S page_k]."""
    *lead, slices, m, row = x.shape
    return x[..., :row - 8].transpose(-2, -3).reshape(*lead, m, slices * (row - 8))


def parse_rings(text: str, rows: int) -> list[tuple[int, int]]:
    """--rings: PAGE_KxDEPTH,.. -> [(page_k, depth)]; each must fit a block's shared memory at `rows`."""
    try:
        rings = [(int(a), int(b)) for a, b in (ring.split("x") for ring in text.split(","))]
    except ValueError:
        fail(f"--rings takes PAGE_KxDEPTH,.. (e.g. 1024x3), not {text!r}")
    for page_k, depth in rings:
        need = shared_bytes(page_k, depth, rows) + STATIC_RESERVE if page_k in (512, 1024) else 0
        if page_k not in (512, 1024) or depth < 2 or need > SHARED_MAX:
            fail(f"ring {page_k}x{depth}: PAGE_K 512 or 1024, DEPTH at least 2, and at most {SHARED_MAX} bytes of "
                 f"shared memory at M = {rows} (it would take {need})")
    return rings


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| (NaN where got holds NaN: an unwritten output)."""
    return ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()


def paged(w: torch.Tensor, rows: int, page_k: int) -> torch.Tensor:
    """w [L, N, K] as the kernel's page images: [L, N / 16, K / page_k, 16, page_k + 8] (each page's
    16 rows padded by 16 bytes, as in shared memory), rows 16 i .. 16 i + 15 of w for page row i,
    except for gate_up (rows = "gate_up"): gate rows 8 i .. 8 i + 7, then up rows 8 i .. of the
    second half."""
    layers, n, k = w.shape
    if rows == "gate_up":  # [L, 2, F / 8, 8, K] -> [L, F / 8, 2 * 8, K]: gate's 8 rows, then up's
        w = w.view(layers, 2, n // 16, 8, k).transpose(1, 2).reshape(layers, n // 16, 16, k)
    else:
        w = w.view(layers, n // 16, 16, k)
    w = w.view(layers, n // 16, 16, k // page_k, page_k).transpose(2, 3)  # [L, items, pages, 16, page_k]
    return torch.nn.functional.pad(w, (0, 8)).contiguous()


class Persistent:
    """The probe kernel on one set of operands."""

    def __init__(self, x0, w_gate_up, w_down, layers: int, m: int, page_k: int, depth: int):
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        if sms < 128:
            fail(f"the probe deals 1024 gate_up items to at most 8 a block: it needs >= 128 SMs, this GPU has {sms}")
        self.shared = shared_bytes(page_k, depth, m)
        defines = f"#define PAGE_K {page_k}\n#define DEPTH {depth}\n#define MAX_M {m}\n"
        module = build.compile_source(build.inline_includes(defines + SOURCE.read_text()))
        self.fn = module.get_function("persistent_mlp")
        self.fn.max_dynamic_shared_size_bytes = self.shared
        self.sms, self.layers, self.m, self.page_k, self.depth = sms, layers, m, page_k, depth
        self.x0, self.w_gate_up, self.w_down = x0, w_gate_up, w_down
        self.paged_gate_up, self.paged_down = paged(w_gate_up, "gate_up", page_k), paged(w_down, "down", page_k)
        self.x0_sliced = sliced(x0, page_k)
        dev = x0.device
        self.y = torch.empty(layers, FFN // page_k, m, page_k + 8, dtype=torch.bfloat16, device=dev)
        self.out = torch.empty(layers, HIDDEN // page_k, m, page_k + 8, dtype=torch.bfloat16, device=dev)
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)

    def __call__(self, deep: bool, pages: bool) -> None:
        p, i32 = build.ptr, np.int32
        build.launch_ex(self.fn.kernel.ptr, (self.sms,), (THREADS,),
                        (p(self.x0_sliced), p(self.w_gate_up), p(self.w_down), p(self.paged_gate_up), p(self.paged_down),
                         p(self.y), p(self.out), p(self.counters), i32(self.layers), i32(self.m), i32(int(deep)),
                         i32(int(pages))),
                        self.shared, torch.cuda.current_stream().cuda_stream, False)


def check_persistent(run: Persistent) -> dict:
    """Every mode's outputs (poisoned first) against torch layer by layer, on the kernel's own inputs;
    the modes (deep or shallow, rows or pages) must agree bitwise, and row 0 with row 0 of a run of
    that row alone (its bits do not depend on M: a row's sums run in an order fixed by the shapes)."""
    outs = []
    for mode in MODES:
        run.y.fill_(float("nan"))
        run.out.fill_(float("nan"))
        run(*mode)
        torch.cuda.synchronize()
        outs.append((unsliced(run.y), unsliced(run.out)))
    y, out = outs[0]
    errors_y, errors_out = [], []
    for layer in range(run.layers):
        x = run.x0 if layer == 0 else out[layer - 1]
        errors_y.append(relative_error(y[layer], gemm_swiglu_reference(x, run.w_gate_up[layer])))
        errors_out.append(relative_error(out[layer], gemm_reference(y[layer], run.w_down[layer])))
    same = all(torch.equal(a, b) for other in outs[1:] for a, b in zip(outs[0], other))
    alone = Persistent(run.x0[:1], run.w_gate_up, run.w_down, run.layers, 1, run.page_k, run.depth)
    alone(*MODES[0])
    torch.cuda.synchronize()
    invariant = torch.equal(unsliced(alone.y)[:, 0], y[:, 0]) and torch.equal(unsliced(alone.out)[:, 0], out[:, 0])
    return {"y error": max(errors_y), "out error": max(errors_out), "modes bitwise alike": same,
            "row 0 as alone": invariant}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--rows", type=int, default=8, help="M, 1..8")
    parser.add_argument("--rings", default="1024x3",
                        help="the persistent kernel's rings to time, PAGE_Kx DEPTH, comma-separated (PAGE_K 512 or 1024)")
    args = parser.parse_args()
    if not 1 <= args.rows <= 8 or args.layers < 1:
        fail(f"--rows takes 1..8 and --layers at least 1 (got {args.rows}, {args.layers})")
    rings = parse_rings(args.rings, args.rows)
    if not torch.cuda.is_available():
        fail("persistent_mlp.py needs a GPU")
    bandwidth, _ = device_line()
    torch.manual_seed(0)
    dev, L, m = torch.device("cuda"), args.layers, args.rows
    w_gate_up = (torch.randn(L, 2 * FFN, HIDDEN, device=dev) / HIDDEN**0.5).to(torch.bfloat16)
    w_down = (torch.randn(L, HIDDEN, FFN, device=dev) / FFN**0.5).to(torch.bfloat16)
    x0 = torch.randn(m, HIDDEN, device=dev).to(torch.bfloat16)
    floor_us = (w_gate_up[0].numel() + w_down[0].numel()) * 2 / bandwidth * 1e6

    y = torch.empty(L, m, FFN, dtype=torch.bfloat16, device=dev)
    out = torch.empty(L, m, HIDDEN, dtype=torch.bfloat16, device=dev)

    def ours(layer: int) -> None:
        gemm_swiglu(x0 if layer == 0 else out[layer - 1], w_gate_up[layer], out=y[layer])
        gemm(y[layer], w_down[layer], out=out[layer])

    y.fill_(float("nan"))
    out.fill_(float("nan"))
    for layer in range(L):
        ours(layer)
    ours_error = max(max(relative_error(y[i], gemm_swiglu_reference(x0 if i == 0 else out[i - 1], w_gate_up[i])),
                         relative_error(out[i], gemm_reference(y[i], w_down[i]))) for i in range(L))

    rows = [{"side": "ours (2 L launches, PDL)", "in flight KB a block": "", "us a layer": time_calls(ours, L),
             "error": f"{ours_error:.1e}", "modes bitwise alike": "", "row 0 as alone": ""}]
    for page_k, depth in rings:
        run = Persistent(x0, w_gate_up, w_down, L, m, page_k, depth)
        check = check_persistent(run)
        for deep, pages in MODES:
            us = time_calls(lambda i, mode=(deep, pages): run(*mode), 1) / L
            rows.append({"side": f"persistent {page_k}x{depth}, {'deep' if deep else 'shallow'}, "
                                 f"{'a copy a page' if pages else 'a copy a row'}",
                         "in flight KB a block": depth * page_k * 32 // 1024, "us a layer": us,
                         "error": f"{max(check['y error'], check['out error']):.1e}",
                         "modes bitwise alike": check["modes bitwise alike"],
                         "row 0 as alone": check["row 0 as alone"]})
        del run
    for row in rows:
        row["floor us"] = floor_us
        row["x floor"] = row["us a layer"] / floor_us
    print(f"MLP of Llama-3.2-1B (gate_up + SwiGLU, down), M = {m}, {L} layers of random bf16 weights\n")
    print_rows(rows)
    print("\nerror: max |out - torch| / max |torch| over the layers' y and out, on each side's own inputs.")


if __name__ == "__main__":
    main()
