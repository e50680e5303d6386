"""A persistent forward's first measurements (NOTES v149-v160): `PYTHONPATH=. python3 paper_figures/persistent_mlp.py`
on a GPU (--rows M, --block, --o-proj, --qkv, --rings PAGE_KxDEPTH,..).

The lead after the twenty-fourth session was a persistent forward ("No Bubbles"-style: one kernel,
weights paged into shared memory while the blocks wait on their dependencies) instead of one kernel
a projection. Before building one, this asks the question it rests on with the parts of a layer
that are GEMMs, at the Llama-3.2-1B's shapes: L layers (the next layer's input the last one's
output), M rows, random bf16 weights, distinct per layer, so nothing is served from L2.

- By default the MLP: gate_up with SwiGLU, then down. --block: the MLP block, the RMSNorm before
  gate_up and the residual after down. --o-proj: o_proj with its residual before the block, on a
  given attention output per layer (mid = h + attn @ Wo.T): a layer from its attention's output
  on. --qkv: the qkv projection on its RMSNorm first (its output checked, not read on: the
  attention between qkv and o is not in the probe, only its barrier).

Sides, each in one CUDA graph:
- ours: today's kernels under PDL, a launch an op (gemm with norm= for qkv, gemm with residual= for
  o and down, gemm_swiglu with norm= for gate_up);
- persistent: paper_figures/persistent_mlp.cu, one launch, a grid barrier after every phase, each
  block's weight pages streaming through a ring of shared-memory slots, in four modes: deep (pages
  cross the barriers) or shallow (a phase's pages issued only once its barrier passed: what the
  paging is worth), and a page as one bulk copy of its image laid out on the host (paged()) or as
  one copy a weight row (what the copy count costs). Activations are kept in slices (sliced()), one
  a page's k, so a page waits only for its own slice. Also deep with a copy a page in a launch a
  layer: what a forward that keeps its attention kernels would launch for each layer.

Each side's outputs (poisoned with NaN first) are checked against torch layer by layer on that
side's own inputs (layer_error: bf16 rounding apart); the persistent kernel's modes must agree
bitwise, and row 0 with a run of that row alone. Rows: us a layer (median of graph replays), the
floor (weight bytes / measured copy bandwidth; the page images read 0.8% more) and the ratio.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_core.kernels import build
from swiftspec_core.kernels.gemm import gemm, gemm_reference
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu, gemm_swiglu_reference

from paper_figures.timing import device_line, fail, print_rows, relative_error

HIDDEN, FFN, QKV = 2048, 8192, 3072  # Llama-3.2-1B (qkv: 32 q heads, 8 k and 8 v heads of 64)
THREADS, WARPS, MAX_A_ITEMS = 256, 8, 8
SOURCE = Path(__file__).with_name("persistent_mlp.cu")
SHARED_MAX = 227 * 1024  # an H100 / H200 block's shared memory at most
STATIC_RESERVE = 256  # the kernel's mbarriers (static shared memory)
MODES = ((True, True), (False, True), (True, False), (False, False))  # (deep, a copy a page)


def shared_bytes(page_k: int, depth: int, max_m: int) -> int:
    """persistent_mlp.cu's SMEM_BYTES: the ring, then phase A's x slices and partials or phase B's y
    slices (a slice: max_m rows of page_k + 8)."""
    row = page_k * 2 + 16
    region_a = HIDDEN // page_k * max_m * row + MAX_A_ITEMS * WARPS * 32 * 16 + HIDDEN * 2  # x, partials, g
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


def paged(w: torch.Tensor, layout: str, page_k: int) -> torch.Tensor:
    """w [L, N, K] as the kernel's page images: [L, N / 16, K / page_k, 16, page_k + 8] (each page's
    16 rows padded by 16 bytes, as in shared memory). Tile i holds rows 16 i .. 16 i + 15 of w
    (layout "down": down, o, qkv), or for gate_up (layout "gate_up") gate rows 8 i .. 8 i + 7, then
    up rows 8 i .. of the second half."""
    layers, n, k = w.shape
    if layout == "gate_up":  # [L, 2, F / 8, 8, K] -> [L, F / 8, 2 * 8, K]: gate's 8 rows, then up's
        w = w.view(layers, 2, n // 16, 8, k).transpose(1, 2).reshape(layers, n // 16, 16, k)
    else:
        w = w.view(layers, n // 16, 16, k)
    w = w.view(layers, n // 16, 16, k // page_k, page_k).transpose(2, 3)  # [L, items, pages, 16, page_k]
    return torch.nn.functional.pad(w, (0, 8)).contiguous()


@dataclass
class Weights:
    """The probe's L layers, random and distinct per layer (nothing is served from L2): gate_up
    [L, 2F, H] and down [L, H, F]; with the block, norm = (g [L, H], eps); with o_proj, attn [L, M, H]
    (each layer's attention output, given) and o [L, H, H]; with qkv, qkv [L, 3072, H] and its norm's
    g_qkv [L, H] (the same eps)."""
    gate_up: torch.Tensor
    down: torch.Tensor
    norm: tuple[torch.Tensor, float] | None = None
    attn: torch.Tensor | None = None
    o: torch.Tensor | None = None
    qkv: torch.Tensor | None = None
    g_qkv: torch.Tensor | None = None

    def layer_norm(self, i: int):
        return None if self.norm is None else (self.norm[0][i], self.norm[1])

    def qkv_norm(self, i: int):
        return self.g_qkv[i], self.norm[1]

    def bytes_a_layer(self) -> int:
        return 2 * sum(w[0].numel() for w in (self.gate_up, self.down, self.o, self.qkv) if w is not None)


def ours_layer(w: Weights, i: int, h, qkv, mid, y, out) -> None:
    """Layer i on our kernels (gemm, gemm_swiglu under PDL): qkv = rmsnorm(h) @ Wqkv.T with qkv,
    mid = h + attn @ o.T with o_proj, then the MLP (block) on it."""
    if w.qkv is not None:
        gemm(h, w.qkv[i], out=qkv, norm=w.qkv_norm(i))
    if w.o is not None:
        gemm(w.attn[i], w.o[i], out=mid, residual=h)
        h = mid
    gemm_swiglu(h, w.gate_up[i], out=y, norm=w.layer_norm(i))
    gemm(y, w.down[i], out=out, residual=h if w.norm is not None else None)


def layer_error(w: Weights, i: int, h, qkv, mid, y, out) -> float:
    """The largest relative error of layer i's outputs (qkv, mid, y, out) against torch's from the
    same inputs (h, and mid and y as given)."""
    errors = []
    if w.qkv is not None:
        errors.append(relative_error(qkv, gemm_reference(h, w.qkv[i], norm=w.qkv_norm(i))))
    if w.o is not None:
        errors.append(relative_error(mid, gemm_reference(w.attn[i], w.o[i], residual=h)))
        h = mid
    errors.append(relative_error(y, gemm_swiglu_reference(h, w.gate_up[i], norm=w.layer_norm(i))))
    errors.append(relative_error(out, gemm_reference(y, w.down[i], residual=h if w.norm is not None else None)))
    return max(errors)


class Persistent:
    """The probe kernel on one set of operands: x0 [M, H] and the weights, page_k x depth rings."""

    def __init__(self, x0, w: Weights, layers: int, page_k: int, depth: int):
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        if sms < 128:
            fail(f"the probe deals 1024 gate_up items to at most 8 a block: it needs >= 128 SMs, this GPU has {sms}")
        m = x0.shape[0]
        self.shared = shared_bytes(page_k, depth, m)
        defines = f"#define PAGE_K {page_k}\n#define DEPTH {depth}\n#define MAX_M {m}\n"
        module = build.compile_source(build.inline_includes(defines + SOURCE.read_text()))
        self.fn = module.get_function("persistent_mlp")
        self.fn.max_dynamic_shared_size_bytes = self.shared
        self.sms, self.layers, self.m, self.page_k, self.depth = sms, layers, m, page_k, depth
        self.x0, self.w = x0, w
        self.paged_gate_up, self.paged_down = paged(w.gate_up, "gate_up", page_k), paged(w.down, "down", page_k)
        self.paged_o = None if w.o is None else paged(w.o, "down", page_k)
        self.paged_qkv = None if w.qkv is None else paged(w.qkv, "down", page_k)
        self.x0_sliced = sliced(x0, page_k)
        self.attn_sliced = None if w.attn is None else sliced(w.attn[:, :m], page_k)
        dev = x0.device
        self.y = torch.empty(layers, FFN // page_k, m, page_k + 8, dtype=torch.bfloat16, device=dev)
        self.out = torch.empty(layers, HIDDEN // page_k, m, page_k + 8, dtype=torch.bfloat16, device=dev)
        self.mid = torch.empty_like(self.out)
        self.qkv = torch.empty(layers, m, QKV, dtype=torch.bfloat16, device=dev)
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)

    def __call__(self, deep: bool, pages: bool, layer: int | None = None) -> None:
        """Every layer in one launch, or (layer i) that layer alone: the launch a forward that kept
        its attention kernels would make for each layer's MLP."""
        p, i32, w = build.ptr, np.int32, self.w
        first, count = (0, self.layers) if layer is None else (layer, 1)
        x = self.x0_sliced if first == 0 else self.out[first - 1]
        null = np.uint64(0)
        o_args = (null,) * 4 if w.o is None else (p(self.attn_sliced[first]), p(w.o[first]), p(self.paged_o[first]),
                                                  p(self.mid[first]))
        qkv_args = (null,) * 4 if w.qkv is None else (p(w.qkv[first]), p(self.paged_qkv[first]), p(w.g_qkv[first]),
                                                      p(self.qkv[first]))
        build.launch_ex(self.fn.kernel.ptr, (self.sms,), (THREADS,),
                        (p(x), p(w.gate_up[first]), p(w.down[first]), p(self.paged_gate_up[first]),
                         p(self.paged_down[first]), p(self.y[first]), p(self.out[first]), p(self.counters), i32(count),
                         i32(self.m), i32(int(deep)), i32(int(pages)),
                         null if w.norm is None else p(w.norm[0][first]), np.float32(0.0 if w.norm is None else w.norm[1]),
                         *o_args, *qkv_args),
                        self.shared, torch.cuda.current_stream().cuda_stream, False)

    def outputs(self) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """(qkv, None without it; mid, None without o_proj; y; out) [L, M, ...] from their slices."""
        return (None if self.w.qkv is None else self.qkv.clone(), None if self.w.o is None else unsliced(self.mid),
                unsliced(self.y), unsliced(self.out))


def check_persistent(run: Persistent) -> dict:
    """Every mode's outputs (poisoned first) against torch layer by layer, on the kernel's own inputs;
    the modes (deep or shallow, rows or pages, one launch or a launch a layer) must agree bitwise,
    and row 0 with row 0 of a run of that row alone (its bits do not depend on M: a row's sums run
    in an order fixed by the shapes)."""
    outs = []
    for mode in MODES + ("a launch a layer",):
        for t in (run.qkv, run.mid, run.y, run.out):
            t.fill_(float("nan"))
        if mode == "a launch a layer":
            for layer in range(run.layers):
                run(*MODES[0], layer=layer)
        else:
            run(*mode)
        torch.cuda.synchronize()
        outs.append(run.outputs())
    qkv, mid, y, out = outs[0]
    errors = [layer_error(run.w, i, run.x0 if i == 0 else out[i - 1], None if qkv is None else qkv[i],
                          None if mid is None else mid[i], y[i], out[i]) for i in range(run.layers)]
    same = all(a is None or torch.equal(a, b) for other in outs[1:] for a, b in zip(outs[0], other))
    alone = Persistent(run.x0[:1], run.w, run.layers, run.page_k, run.depth)
    alone(*MODES[0])
    torch.cuda.synchronize()
    invariant = all(b is None or torch.equal(a[:, 0], b[:, 0]) for a, b in zip(alone.outputs(), outs[0]))
    return {"error": max(errors), "modes bitwise alike": same, "row 0 as alone": invariant}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--rows", type=int, default=8, help="M, 1..8")
    parser.add_argument("--block", action="store_true",
                        help="the MLP block on both sides: the RMSNorm before gate_up, the residual after down")
    parser.add_argument("--o-proj", action="store_true",
                        help="o_proj (with its residual) before the MLP block, on a given attention output (implies --block)")
    parser.add_argument("--qkv", action="store_true",
                        help="the qkv projection (on its RMSNorm) first, its output checked, not read on (implies --o-proj)")
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
    o_proj = args.o_proj or args.qkv
    dev, L, m, block = torch.device("cuda"), args.layers, args.rows, args.block or o_proj
    w = Weights((torch.randn(L, 2 * FFN, HIDDEN, device=dev) / HIDDEN**0.5).to(torch.bfloat16),
                (torch.randn(L, HIDDEN, FFN, device=dev) / FFN**0.5).to(torch.bfloat16))
    if block:
        w.norm = ((1 + 0.1 * torch.randn(L, HIDDEN, device=dev)).to(torch.bfloat16), 1e-5)
    if o_proj:
        w.attn = torch.randn(L, m, HIDDEN, device=dev).to(torch.bfloat16)
        w.o = (torch.randn(L, HIDDEN, HIDDEN, device=dev) / HIDDEN**0.5).to(torch.bfloat16)
    if args.qkv:
        w.qkv = (torch.randn(L, QKV, HIDDEN, device=dev) / HIDDEN**0.5).to(torch.bfloat16)
        w.g_qkv = (1 + 0.1 * torch.randn(L, HIDDEN, device=dev)).to(torch.bfloat16)
    x0 = torch.randn(m, HIDDEN, device=dev).to(torch.bfloat16)
    floor_us = w.bytes_a_layer() / bandwidth * 1e6

    mid, out = (torch.full((L, m, HIDDEN), float("nan"), dtype=torch.bfloat16, device=dev) for _ in range(2))
    y = torch.full((L, m, FFN), float("nan"), dtype=torch.bfloat16, device=dev)
    qkv = torch.full((L, m, QKV), float("nan"), dtype=torch.bfloat16, device=dev)
    ours = lambda i: ours_layer(w, i, x0 if i == 0 else out[i - 1], qkv[i], mid[i], y[i], out[i])  # noqa: E731
    for i in range(L):
        ours(i)
    ours_error = max(layer_error(w, i, x0 if i == 0 else out[i - 1], qkv[i], mid[i], y[i], out[i]) for i in range(L))
    launches = 2 + o_proj + args.qkv
    rows = [{"side": f"ours ({launches} L launches, PDL)", "in flight KB a block": "", "us a layer": time_calls(ours, L),
             "error": f"{ours_error:.1e}", "modes bitwise alike": "", "row 0 as alone": ""}]
    for page_k, depth in rings:
        run = Persistent(x0, w, L, page_k, depth)
        check = check_persistent(run)
        same = {"error": f"{check['error']:.1e}", "modes bitwise alike": check["modes bitwise alike"],
                "row 0 as alone": check["row 0 as alone"]}
        for deep, pages in MODES:
            rows.append({"side": f"persistent {page_k}x{depth}, {'deep' if deep else 'shallow'}, "
                                 f"{'a copy a page' if pages else 'a copy a row'}",
                         "in flight KB a block": depth * page_k * 32 // 1024,
                         "us a layer": time_calls(lambda i, mode=(deep, pages): run(*mode), 1) / L, **same})
        rows.append({"side": f"persistent {page_k}x{depth}, deep, a copy a page, a launch a layer",
                     "in flight KB a block": depth * page_k * 32 // 1024,
                     "us a layer": time_calls(lambda i: run(True, True, layer=i), L), **same})
        del run
    for row in rows:
        row["floor us"] = floor_us
        row["x floor"] = row["us a layer"] / floor_us
    what = ("qkv, o_proj and MLP block (RMSNorm, qkv; o + residual; RMSNorm, gate_up + SwiGLU, down, residual)"
            if args.qkv else
            "o_proj and MLP block (o + residual, RMSNorm, gate_up + SwiGLU, down, residual)" if o_proj else
            "MLP block (RMSNorm, gate_up + SwiGLU, down, residual)" if block else "MLP (gate_up + SwiGLU, down)")
    print(f"Llama-3.2-1B's {what}, M = {m}, {L} layers of random bf16 weights\n")
    print_rows(rows)
    print("\nerror: max |output - torch| / max |torch| over the layers' outputs, on each side's own inputs.")


if __name__ == "__main__":
    main()
