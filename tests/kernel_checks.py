"""Checks shared by the GEMM kernels' GPU tests."""
from __future__ import annotations


def assert_rows_bitwise_invariant(name: str, x, run, random_rows, check_bitwise) -> None:
    """A row's bits do not depend on how many rows share the call, its index or the other rows.
    x: [16, K] rows; run(rows) -> [M, N] (its output poisoned first); random_rows(m, seed) -> [m, K];
    check_bitwise(got, want, what) fails with a message naming what differs."""
    full = run(x)
    for m in range(1, 17):  # the first m rows alone: same bits as in the 16-row call
        check_bitwise(run(x[:m]), full[:m], f"{name}: rows 0..{m - 1} alone vs in M=16")
    for row in (0, 3, 8, 15):  # a row alone, and at another index among other random rows
        check_bitwise(run(x[row:row + 1])[0], full[row], f"{name}: row {row} alone (M=1)")
        for m, at in ((16, 15 - row), (5, 4), (9, 8)):
            others = random_rows(m, 400 + row + m)
            others[at] = x[row]
            check_bitwise(run(others)[at], full[row], f"{name}: row {row} at {at} of M={m}")


def replay_on(graph, x, out, fresh):
    """Replay a graph captured on (x -> out) with x set to `fresh` and out poisoned first; -> out."""
    import torch

    x.copy_(fresh)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    return out


def replays_with_fresh_inputs(run, xs, outs, fresh, check, replays: int = 3) -> None:
    """run() (calls writing outs from xs) once eagerly (what is made at a first call exists before
    the capture), then captured in one graph and replayed `replays` times: before each, xs[i] set
    to fresh(replay, i) and every out poisoned; after it, check(replay, i, out) for each."""
    import torch

    run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    for replay in range(replays):
        for i, x in enumerate(xs):
            x.copy_(fresh(replay, i))
        for out in outs:
            out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for i, out in enumerate(outs):
            check(replay, i, out)


def pairs_in_order(w):
    """An AWQ gate_up [2F, K] (tiled) with its tiles in stream-K's swiglu order (gate tile p, then its
    up tile) as a plain weight: the stream-K GEMM of it sums the same units in the same order as
    the stream-K awq_swiglu (cuda/awq_streamk.cuh)."""
    import torch
    from swiftspec_core.models import awq

    half = w.qweight.shape[0] // 2
    order = torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).reshape(-1).to(w.qweight.device)
    return awq.TiledAWQWeight(w.qweight[order].contiguous(), w.qzeros[order].contiguous(),
                              w.scales[order].contiguous(), w.n)


def gate_then_up(out):
    """[M, 2F] in pairs_in_order's columns (64 of gate, 64 of up, ..) -> [M, 2F] gate | up."""
    import torch

    m, n = out.shape
    pairs = out.view(m, n // 128, 2, 64)
    return torch.cat([pairs[:, :, 0].reshape(m, -1), pairs[:, :, 1].reshape(m, -1)], dim=1)


def swiglu_sums(x, w, norms: tuple = ()):
    """The bf16 gate | up sums awq_swiglu (or awq_swiglu_norms with these norms operands) takes SwiGLU
    of, bitwise: the planned GEMM's, or where stream-K runs the gate_up, the stream-K GEMM of its
    tiles in pairs order."""
    from swiftspec_core.kernels.awq_gemm import _sm_count, fuses_swiglu, launch_streamk, prefers_streamk, run_planned

    n, k, group, sms = w.n, x.shape[1], w.group, _sm_count(x.device.index)
    if not prefers_streamk(n, k, group, sms, swiglu=True):  # fused at plan()'s shape, or two kernels
        return run_planned(x, w, None, None, norms=norms, streamk=not fuses_swiglu(n, k, group, sms))
    import torch

    out = torch.empty(x.shape[0], w.n, dtype=torch.bfloat16, device=x.device)
    launch_streamk(x, pairs_in_order(w), None, out, norms=norms)
    return gate_then_up(out)
