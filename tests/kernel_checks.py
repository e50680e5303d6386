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
