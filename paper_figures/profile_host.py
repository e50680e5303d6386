"""The host's share of a draft step, measured on the CPU: a `swiftspec-bench run` whose fixed-width
forwards are graphs.PaddedForward without the model (its checks, span lookup and staged.write, on
the CPU; the block's copy is the GPU graph's first node, no host call) returning fixed random
logits, so what runs is the decoders' own Python:
the tree, the grafter, the replay, the staging and the top-k read back.

    PYTHONPATH=. python3 paper_figures/profile_host.py OUT.md [--functions N] -- run --target tiny-llama \
        --draft tiny-llama --weights random --device cpu --systems tree --acceptance replay:DIR \
        --tree-bs 12 --datasets qa --limit 2 --out RUN_DIR [other run options]

On the GPU this Python sits between a draft step's top-k read back and the next step's block copy,
with the GPU idle (profile_decode.py's idle tables: ~200-330 us a step on the H200's host). OUT.md
gets the host time a forward call, by caller (draft steps, verifications), over the run's timed
decodes, and with --functions N cProfile's N costliest swiftspec_core functions (their own time
a draft step; cProfile slows Python ~2x, so read them as shares). The stub's own logits cost is
left out: they are made once, at its width. CPU only (--device cpu).
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

from paper_figures.timing import fail
from swiftspec_bench import cli, systems
from swiftspec_core import graphs
from swiftspec_core.errors import UserError
from swiftspec_core.decoders import drafter as drafter_module, verifier as verifier_module


class StagedStub(graphs.PaddedForward):
    """graphs.PaddedForward as the decoders call it (its checks, span and staging: the same code,
    graphs off), without the model: its forward returns fixed random logits."""

    calls: dict[str, int] = defaultdict(int)  # per caller (draft, verify): calls in timed decodes
    timing = False

    def __init__(self, model, cache, width: int, max_visible: int, caller: str):
        super().__init__(model, cache, width, max_visible, graph=False)
        self.caller = caller
        self.logits = torch.randn(width, model.full_vocab, generator=torch.Generator().manual_seed(width))

    def _run(self, span: int) -> torch.Tensor:
        StagedStub.calls[self.caller] += StagedStub.timing
        return self.logits


def stub_for(caller: str):
    def make(model, cache, width, max_visible):
        if model.device.type != "cpu":
            raise UserError("profile_host.py runs on the CPU (--device cpu)")
        return StagedStub(model, cache, width, max_visible, caller)
    return make


def main() -> None:
    args = sys.argv[1:]
    ours, run_args = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
    if len(ours) not in (1, 3) or (len(ours) == 3 and (ours[1] != "--functions" or not ours[2].isdigit())):
        fail("usage: profile_host.py OUT.md [--functions N] -- run [run options]")
    out, functions = Path(ours[0]), int(ours[2]) if len(ours) == 3 else 0
    drafter_module.make_forward = stub_for("draft")
    verifier_module.make_forward = stub_for("verify")
    plain, seconds, profiler = systems.run_query, [0.0], cProfile.Profile()
    built: set[str] = set()  # systems whose first query has run

    def timed(*a, **kw):
        if a[0] not in built:
            built.add(a[0])
            return plain(*a, **kw)  # each system's first query: its sides are built, not timed
        StagedStub.timing = True
        if functions:
            profiler.enable()
        t = time.perf_counter()
        try:
            return plain(*a, **kw)
        finally:
            seconds[0] += time.perf_counter() - t
            profiler.disable()
            StagedStub.timing = False

    systems.run_query = timed
    sys.argv = ["swiftspec-bench", *run_args]
    try:
        cli.main()
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    steps, verifies = StagedStub.calls["draft"], StagedStub.calls["verify"]
    if not steps:
        fail("no timed draft step (give --limit 2 or more: each system's first query is not timed)")
    lines = [f"host time of the timed decodes: {seconds[0] * 1e3:.1f} ms over {steps} draft steps and "
             f"{verifies} verifications: **{seconds[0] / steps * 1e6:.1f} us a draft step** (everything "
             "the decoders did, verifications' Python included, over the draft steps)"]
    if functions:
        stats = pstats.Stats(profiler)
        rows = sorted(((v[2], f"{Path(k[0]).name}:{k[2]}") for k, v in stats.stats.items()
                       if "swiftspec_core" in k[0] or k[0] == "~"), reverse=True)[:functions]
        lines += ["", "| function (own time, under cProfile; ~: a builtin) | us a draft step |", "|---|---|"]
        lines += [f"| {name} | {t / steps * 1e6:.1f} |" for t, name in rows]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
