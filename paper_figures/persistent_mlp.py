"""A persistent forward's measurements (NOTES v149-v184): `PYTHONPATH=. python3 paper_figures/persistent_mlp.py`
on a GPU (--model, --rows M, --build-rows, --block, --o-proj, --qkv, --attention, --context P, --rings
PAGE_KxDEPTH,.., --timeline: then the layer's time phase by phase, persistent_timeline.py).

The lead after the twenty-fourth session was a persistent forward ("No Bubbles"-style: one kernel,
weights paged into shared memory while the blocks wait on their dependencies) instead of one kernel
a projection. Before building one, this asks the question it rests on with the parts of a layer
that are GEMMs, at the Llama-3.2-1B's shapes (--model llama-3-8b: Llama-3-8B's, the GEMM phases
only): L layers (the next layer's input the last one's output), M rows, random bf16 weights,
distinct per layer, so nothing is served from L2.

- By default the MLP: gate_up with SwiGLU, then down. --block: the MLP block, the RMSNorm before
  gate_up and the residual after down. --o-proj: o_proj with its residual before the block, on a
  given attention output per layer (mid = h + attn @ Wo.T): a layer from its attention's output
  on. --qkv: the qkv projection on its RMSNorm first (its output checked, not read on: the
  attention between qkv and o is not in the probe, only its barrier). --attention: the whole layer,
  the attention between qkv and o (a draft step's M tokens after --context cached ones: a chain, or
  with --tree-rows a tree over that many drafted rows, persistent_tree.py; ours: tree_attention
  with the append; persistent: cuda/persistent_attention.cuh's phases S and R).

Sides, each in one CUDA graph:
- ours: today's kernels under PDL, a launch an op (gemm with norm= for qkv, gemm with residual= for
  o and down, gemm_swiglu with norm= for gate_up);
- persistent: cuda/persistent.cu, one launch, a grid barrier after every phase, each
  block's weight pages (one bulk copy of each page's image laid out on the host, paged()) streaming
  through a ring of shared-memory slots, issued by a producer warp, in two modes: deep (pages cross
  the barriers) or shallow (a phase's pages issued only once its barrier passed: what the paging is
  worth). (A page as one copy a weight row, 1.5x slower, was a mode until NOTES v166.) Activations
  are kept in slices (sliced()), one a page's k, so a page waits only for its own slice. Also deep
  in a launch a layer: what a forward that keeps its attention kernels would launch for each layer.

Each side's outputs (poisoned with NaN first) are checked against torch layer by layer on that
side's own inputs (layer_error: bf16 rounding apart); the persistent kernel's modes must agree
bitwise, and row 0 with a run of that row alone. Rows: us a layer (median of graph replays), the
floor (weight bytes / measured copy bandwidth; the page images read 0.8% more) and the ratio.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_core.kernels import tensor_map
from swiftspec_core.kernels.gemm import gemm, gemm_reference
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu, gemm_swiglu_reference
from swiftspec_core.kernels.persistent import (CHUNK, HEAD_DIM, KV_HEADS, LLAMA_1B, MASK_WORDS, SHAPES, SHARED_MAX,
                                               STATIC_RESERVE, Shape, activation_slices, attention_scratch, compiled,
                                               grid_blocks, launch, launch_args, paged, shared_bytes, sliced, unsliced)

from paper_figures.persistent_tree import Attention
from paper_figures.persistent_timeline import STAMP_SLOTS, marks, phase_names, sm_clock_ghz, summarize
from paper_figures.timing import device_line, fail, print_rows, relative_error

MODES = (True, False)  # deep, shallow


def parse_rings(text: str, rows: int, shape: Shape = LLAMA_1B) -> list[tuple[int, int]]:
    """--rings: PAGE_KxDEPTH,.. -> [(page_k, depth)]; each must fit a block's shared memory at `rows`."""
    try:
        rings = [(int(a), int(b)) for a, b in (ring.split("x") for ring in text.split(","))]
    except ValueError:
        fail(f"--rings takes PAGE_KxDEPTH,.. (e.g. 1024x3), not {text!r}")
    for page_k, depth in rings:
        need = shared_bytes(page_k, depth, rows, shape) + STATIC_RESERVE if page_k in (512, 1024) else 0
        if page_k not in (512, 1024) or depth < 2 or need > SHARED_MAX:
            fail(f"ring {page_k}x{depth}: PAGE_K 512 or 1024, DEPTH at least 2, and at most {SHARED_MAX} bytes of "
                 f"shared memory at M = {rows} (it would take {need})")
    return rings


@dataclass
class Weights:
    """The probe's L layers, random and distinct per layer (nothing is served from L2): gate_up
    [L, 2F, H] and down [L, H, F]; with the block, norm = (g [L, H], eps); with o_proj, attn [L, M, H]
    (each layer's attention output, given) and o [L, H, H]; with qkv, qkv [L, QKV, H] and its norm's
    g_qkv [L, H] (the same eps)."""
    gate_up: torch.Tensor
    down: torch.Tensor
    norm: tuple[torch.Tensor, float] | None = None
    attn: torch.Tensor | None = None
    o: torch.Tensor | None = None
    qkv: torch.Tensor | None = None
    g_qkv: torch.Tensor | None = None
    attention: "Attention | None" = None  # with it, attn is computed from qkv, not given

    def layer_norm(self, i: int):
        return None if self.norm is None else (self.norm[0][i], self.norm[1])

    def qkv_norm(self, i: int):
        return self.g_qkv[i], self.norm[1]

    def bytes_a_layer(self) -> int:
        """A layer's weights, and with the attention the cache rows it reads (k and v, the span)."""
        cache = 0 if self.attention is None else 2 * 2 * self.attention.span * KV_HEADS * HEAD_DIM
        return cache + 2 * sum(w[0].numel() for w in (self.gate_up, self.down, self.o, self.qkv) if w is not None)


def ours_layer(w: Weights, i: int, h, qkv, attn, mid, y, out) -> None:
    """Layer i on our kernels (gemm, gemm_swiglu, tree_attention under PDL): qkv = rmsnorm(h) @
    Wqkv.T with qkv; the attention into attn with it (else attn is given); mid = h + attn @ o.T with
    o_proj, then the MLP (block) on it."""
    if w.qkv is not None:
        gemm(h, w.qkv[i], out=qkv, norm=w.qkv_norm(i))
    if w.attention is not None:
        w.attention.run(qkv, i, attn)
    if w.o is not None:
        gemm(attn, w.o[i], out=mid, residual=h)
        h = mid
    gemm_swiglu(h, w.gate_up[i], out=y, norm=w.layer_norm(i))
    gemm(y, w.down[i], out=out, residual=h if w.norm is not None else None)


def layer_error(w: Weights, i: int, h, qkv, attn, mid, y, out) -> float:
    """The largest relative error of layer i's outputs (qkv, attn with the attention, mid, y, out)
    against torch's from the same inputs (h, and qkv, attn, mid and y as given)."""
    errors = []
    if w.qkv is not None:
        errors.append(relative_error(qkv, gemm_reference(h, w.qkv[i], norm=w.qkv_norm(i))))
    if w.attention is not None:
        a = w.attention
        reference = a.run(qkv, i, None, k=a.k[i].clone(), v=a.v[i].clone(), reference=True)
        errors.append(relative_error(attn, reference))
    if w.o is not None:
        errors.append(relative_error(mid, gemm_reference(attn, w.o[i], residual=h)))
        h = mid
    errors.append(relative_error(y, gemm_swiglu_reference(h, w.gate_up[i], norm=w.layer_norm(i))))
    errors.append(relative_error(out, gemm_reference(y, w.down[i], residual=h if w.norm is not None else None)))
    return max(errors)


class Persistent:
    """The probe kernel on one set of operands: x0 [M, H] and the weights of `shape`, page_k x depth
    rings, built for max_m rows (MAX_M, default M); the weights' page images laid out here, or taken
    from `images` (a run on the same weights and ring)."""

    def __init__(self, x0, w: Weights, layers: int, page_k: int, depth: int, images: "Persistent | None" = None,
                 max_m: int | None = None, shape: Shape = LLAMA_1B):
        try:
            sms = grid_blocks(x0.device, shape, page_k)
        except ValueError as why:
            fail(str(why))
        m = x0.shape[0]
        max_m = max_m or m
        self.fn, self.shared = compiled(page_k, depth, max_m, shape)
        self.shape = shape
        self.sms, self.layers, self.m, self.page_k, self.depth = sms, layers, m, page_k, depth
        self.x0, self.w = x0, w
        if images is not None:
            self.paged_gate_up, self.paged_down = images.paged_gate_up, images.paged_down
            self.paged_o, self.paged_qkv = images.paged_o, images.paged_qkv
        else:
            self.paged_gate_up, self.paged_down = paged(w.gate_up, "gate_up", page_k), paged(w.down, "down", page_k)
            self.paged_o = None if w.o is None else paged(w.o, "down", page_k)
            self.paged_qkv = None if w.qkv is None else paged(w.qkv, "qkv_rope" if w.attention else "down", page_k)
        self.x0_sliced = sliced(x0, page_k)
        dev = x0.device
        a = w.attention
        if a is None:
            self.attn_sliced = None if w.attn is None else sliced(w.attn[:, :m], page_k)
        else:  # attn written by the kernel's merge; the caches are the engine's (a.k, a.v)
            self.attn_sliced = activation_slices(layers, k=shape.hidden, m=m, page_k=page_k, device=dev)
            # the engine's caches, paged by tensor maps, one a first layer (a launch a layer starts there)
            self.maps = [tuple(tensor_map.tiled(c[i:], box=(HEAD_DIM, 1, CHUNK, 1)) for c in (a.k, a.v))
                         for i in range(layers)]
            self.qbuf, self.part_ml, self.part_o = attention_scratch(max_m, a.chunks, dev)
        self.y = activation_slices(layers, k=shape.ffn, m=m, page_k=page_k, device=dev)
        self.out = activation_slices(layers, k=shape.hidden, m=m, page_k=page_k, device=dev)
        self.mid = torch.empty_like(self.out)
        self.qkv = torch.empty(layers, m, shape.qkv, dtype=torch.bfloat16, device=dev)
        self.counters = torch.zeros(2, dtype=torch.int32, device=dev)

    def __call__(self, deep: bool, layer: int | None = None, stamps: torch.Tensor | None = None) -> None:
        """Every layer in one launch, or (layer i) that layer alone: the launch a forward that kept
        its attention kernels would make for each layer's MLP. stamps: int64 [barriers + 1, G, 8],
        written with the blocks' %globaltimer stamps (persistent_timeline.py)."""
        w, a = self.w, self.w.attention
        first, count = (0, self.layers) if layer is None else (layer, 1)
        # the phases present (an absent one's operands: null pointers)
        norm = {} if w.norm is None else dict(mlp_norm=w.norm[0][first], eps=w.norm[1])
        o_proj = {} if w.o is None else dict(attn=self.attn_sliced[first], o=self.paged_o[first], mid=self.mid[first])
        qkv = {} if w.qkv is None else dict(qkv_w=self.paged_qkv[first], qkv_norm=w.g_qkv[first], qkv=self.qkv[first])
        attention = {} if a is None else dict(
            k_cache=a.k[first], v_cache=a.v[first], cos=a.cos, sin=a.sin, qbuf=self.qbuf, part_ml=self.part_ml,
            part_o=self.part_o, block=a.block, span=a.chunks * CHUNK, cache_rows=a.k.shape[1], maps=self.maps[first])
        args = launch_args(x0=self.x0_sliced if first == 0 else self.out[first - 1], gate_up=self.paged_gate_up[first],
                           down=self.paged_down[first], y=self.y[first], out=self.out[first], counters=self.counters,
                           layers=count, m=self.m, deep=deep, stamps=stamps, **norm, **o_proj, **qkv, **attention)
        launch(self.fn, self.sms, self.shared, args)

    def poison(self) -> None:
        """NaN into every output the kernel writes (an unwritten one then fails the checks)."""
        for t in (self.qkv, self.mid, self.y, self.out) + ((self.attn_sliced,) if self.w.attention else ()):
            t.fill_(float("nan"))

    def outputs(self) -> tuple:
        """(qkv, attn (the attention's output), mid, y, out) [L, M, ...] from their slices; None for
        what the run has not (qkv, attn without the attention, mid without o_proj)."""
        return (None if self.w.qkv is None else self.qkv.clone(),
                None if self.w.attention is None else unsliced(self.attn_sliced, self.m),
                None if self.w.o is None else unsliced(self.mid, self.m), unsliced(self.y, self.m),
                unsliced(self.out, self.m))


def check_persistent(run: Persistent) -> dict:
    """Every mode's outputs (poisoned first) against torch layer by layer, on the kernel's own inputs;
    the modes (deep or shallow, one launch or a launch a layer) must agree bitwise,
    and row 0 with row 0 of a run of that row alone (its bits do not depend on M: a row's sums run
    in an order fixed by the shapes)."""
    outs = []
    for mode in MODES + ("a launch a layer",):
        run.poison()
        if mode == "a launch a layer":
            for layer in range(run.layers):
                run(MODES[0], layer=layer)
        else:
            run(mode)
        torch.cuda.synchronize()
        outs.append(run.outputs())
    qkv, attn, mid, y, out = outs[0]
    pick = lambda t, i: None if t is None else t[i]  # noqa: E731
    given = run.w.attn  # the attention output o_proj reads when the attention is not run
    errors = [layer_error(run.w, i, run.x0 if i == 0 else out[i - 1], pick(qkv, i),
                          pick(attn, i) if run.w.attention else pick(given, i), pick(mid, i), y[i], out[i])
              for i in range(run.layers)]
    same = all(a is None or torch.equal(a, b) for other in outs[1:] for a, b in zip(outs[0], other))
    alone = Persistent(run.x0[:1], run.w, run.layers, run.page_k, run.depth, images=run, shape=run.shape)
    alone(MODES[0])
    torch.cuda.synchronize()
    invariant = all(b is None or torch.equal(a[:, 0], b[:, 0]) for a, b in zip(alone.outputs(), outs[0]))
    return {"error": max(errors), "modes bitwise alike": same, "row 0 as alone": invariant}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="llama-3.2-1b",
                        help=f"the layers' shapes: {', '.join(SHAPES)} (llama-3-8b: the GEMM phases only, not --attention)")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--rows", type=int, default=8, help="M, 1..16")
    parser.add_argument("--build-rows", type=int, default=None,
                        help="build the persistent kernel for this many rows (MAX_M, --rows..16; default --rows): "
                             "what a second n8 tile of x rows costs at the same M")
    parser.add_argument("--block", action="store_true",
                        help="the MLP block on both sides: the RMSNorm before gate_up, the residual after down")
    parser.add_argument("--o-proj", action="store_true",
                        help="o_proj (with its residual) before the MLP block, on a given attention output (implies --block)")
    parser.add_argument("--qkv", action="store_true",
                        help="the qkv projection (on its RMSNorm) first, its output checked, not read on (implies --o-proj)")
    parser.add_argument("--attention", action="store_true",
                        help="the attention between qkv and o on both sides: a chain of M tokens (or a tree: --tree-rows) "
                             "after --context cached "
                             "ones, RoPE and the append inside (implies --qkv)")
    parser.add_argument("--context", type=int, default=1000, help="cached positions before the M new ones (--attention)")
    parser.add_argument("--tree-rows", type=int, default=0,
                        help="draft-tree rows after the context that the M new tokens extend, parents at random "
                             "(--attention; 0: the M tokens a chain)")
    parser.add_argument("--span", type=int, default=0,
                        help="cache rows the persistent kernel's attention reads (--attention; a decoder's graph "
                             "span, 512, 1024, ..., past the rows in use; 0: the rows in use)")
    parser.add_argument("--visible", type=int, default=0,
                        help="visible rows a token in the staged block the kernel reads (--attention; a drafter's: "
                             "its tree's rows + 1, 385 at the run defaults; 0: the longest path)")
    parser.add_argument("--timeline", action="store_true",
                        help="then where the first ring's layer spends its time (deep and shallow), phase by phase")
    parser.add_argument("--rings", default="1024x3",
                        help="the persistent kernel's rings to time, PAGE_Kx DEPTH, comma-separated (PAGE_K 512 or 1024)")
    args = parser.parse_args()
    build_rows = args.build_rows or args.rows
    if not 1 <= args.rows <= build_rows <= 16 or args.layers < 1 or args.context < 0 or \
            not 0 <= args.tree_rows <= 32 * MASK_WORDS - args.rows or args.span < 0 or args.visible < 0:
        fail(f"--rows takes 1..16, --build-rows --rows..16, --layers at least 1, --context at least 0, --tree-rows "
             f"0..{32 * MASK_WORDS} less --rows, --span and --visible at least 0 (got {args.rows}, {args.build_rows}, "
             f"{args.layers}, {args.context}, {args.tree_rows}, {args.span}, {args.visible})")
    if args.model not in SHAPES:
        fail(f"--model {args.model}: choose {', '.join(SHAPES)}")
    shape = SHAPES[args.model]
    if args.attention and shape != LLAMA_1B:
        fail(f"--attention: the kernel's attention phases take Llama-3.2-1B's heads of {HEAD_DIM}, not {args.model}'s")
    rings = parse_rings(args.rings, build_rows, shape)
    if not torch.cuda.is_available():
        fail("persistent_mlp.py needs a GPU")
    bandwidth, _ = device_line()
    torch.manual_seed(0)
    with_qkv = args.qkv or args.attention
    o_proj = args.o_proj or with_qkv
    dev, L, m, block = torch.device("cuda"), args.layers, args.rows, args.block or o_proj
    H, F = shape.hidden, shape.ffn
    w = Weights((torch.randn(L, 2 * F, H, device=dev) / H**0.5).to(torch.bfloat16),
                (torch.randn(L, H, F, device=dev) / F**0.5).to(torch.bfloat16))
    if block:
        w.norm = ((1 + 0.1 * torch.randn(L, H, device=dev)).to(torch.bfloat16), 1e-5)
    if o_proj:
        w.o = (torch.randn(L, H, H, device=dev) / H**0.5).to(torch.bfloat16)
        if not args.attention:
            w.attn = torch.randn(L, m, H, device=dev).to(torch.bfloat16)
    if args.attention:
        w.attention = Attention.random(L, args.context, m, dev, tree_rows=args.tree_rows, visible=args.visible,
                                       span=args.span)
    if with_qkv:
        w.qkv = (torch.randn(L, shape.qkv, H, device=dev) / H**0.5).to(torch.bfloat16)
        w.g_qkv = (1 + 0.1 * torch.randn(L, H, device=dev)).to(torch.bfloat16)
    x0 = torch.randn(m, H, device=dev).to(torch.bfloat16)
    floor_us = w.bytes_a_layer() / bandwidth * 1e6

    mid, out = (torch.full((L, m, H), float("nan"), dtype=torch.bfloat16, device=dev) for _ in range(2))
    y = torch.full((L, m, F), float("nan"), dtype=torch.bfloat16, device=dev)
    qkv = torch.full((L, m, shape.qkv), float("nan"), dtype=torch.bfloat16, device=dev)
    attn = w.attn if w.attention is None else torch.full((L, m, H), float("nan"), dtype=torch.bfloat16, device=dev)
    pick = lambda t, i: None if t is None else t[i]  # noqa: E731
    sides = lambda i: (x0 if i == 0 else out[i - 1], qkv[i], pick(attn, i), mid[i], y[i], out[i])  # noqa: E731
    ours = lambda i: ours_layer(w, i, *sides(i))  # noqa: E731
    for i in range(L):
        ours(i)
    ours_error = max(layer_error(w, i, *sides(i)) for i in range(L))
    launches = 2 + o_proj + with_qkv + args.attention
    rows = [{"side": f"ours ({launches} L launches, PDL)", "in flight KB a block": "", "us a layer": time_calls(ours, L),
             "error": f"{ours_error:.1e}", "modes bitwise alike": "", "row 0 as alone": ""}]
    for page_k, depth in rings:
        run = Persistent(x0, w, L, page_k, depth, max_m=build_rows, shape=shape)
        check = check_persistent(run)
        same = {"error": f"{check['error']:.1e}", "modes bitwise alike": check["modes bitwise alike"],
                "row 0 as alone": check["row 0 as alone"]}
        for deep in MODES:
            rows.append({"side": f"persistent {page_k}x{depth}, {'deep' if deep else 'shallow'}",
                         "in flight KB a block": depth * page_k * 32 // 1024,
                         "us a layer": time_calls(lambda i, deep=deep: run(deep), 1) / L, **same})
        rows.append({"side": f"persistent {page_k}x{depth}, deep, a launch a layer",
                     "in flight KB a block": depth * page_k * 32 // 1024,
                     "us a layer": time_calls(lambda i: run(True, layer=i), L), **same})
        del run
    for row in rows:
        row["floor us"] = floor_us
        row["x floor"] = row["us a layer"] / floor_us
    shape = f"a tree of {args.tree_rows} drafted rows and M" if args.tree_rows else "a chain of M"
    what = (f"layer (RMSNorm, qkv; the attention over {args.context} cached positions and {shape}; "
            "o + residual; RMSNorm, gate_up + SwiGLU, down, residual)" if args.attention else
            "qkv, o_proj and MLP block (RMSNorm, qkv; o + residual; RMSNorm, gate_up + SwiGLU, down, residual)"
            if with_qkv else
            "o_proj and MLP block (o + residual, RMSNorm, gate_up + SwiGLU, down, residual)" if o_proj else
            "MLP block (RMSNorm, gate_up + SwiGLU, down, residual)" if block else "MLP (gate_up + SwiGLU, down)")
    print(f"{args.model}'s {what}, M = {m} (the persistent kernel built for {build_rows}), {L} layers of random bf16 weights"
          f"{'; the floor counts the cache rows read' if args.attention else ''}\n")
    print_rows(rows)
    print("\nerror: max |output - torch| / max |torch| over the layers' outputs, on each side's own inputs.")
    if args.timeline:
        names = phase_names(with_qkv, args.attention, o_proj)
        run = Persistent(x0, w, L, *rings[0], max_m=build_rows, shape=shape)
        stamps = torch.zeros(L * len(names) + 1, run.sms, STAMP_SLOTS, dtype=torch.int64, device=dev)
        for deep in MODES:
            for _ in range(3):  # warm; the last run's stamps are read
                run(deep, stamps=stamps)
            torch.cuda.synchronize()
            host = stamps.cpu().numpy()
            print(f"\nWhere a layer's time goes, persistent {rings[0][0]}x{rings[0][1]}, "
                  f"{'deep' if deep else 'shallow'}, SM clock {sm_clock_ghz(host):.2f} GHz (one run after two, "
                  "medians over layers 2..; persistent_timeline.py says what each column is)\n")
            print_rows(summarize(host, names))
            print()
            print_rows(marks(host, names))


if __name__ == "__main__":
    main()
