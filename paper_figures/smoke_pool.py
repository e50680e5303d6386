"""A quick look at the multi-GPU systems before the full benchmark (nothing here is a result).

    python3 paper_figures/smoke_pool.py --target llama-3-8b --draft llama-3.2-1b --tokens 128

Random bf16 weights and a made-up replay profile: checks that each placement starts, serves and
times rounds; prints tokens/s and where a round's time goes.
"""
from __future__ import annotations

import argparse
import statistics

from swiftspec_core.decoders.base import SpecSettings
from swiftspec_core.replay import ReplayProfile
from swiftspec_core.runtime.service import WorkerPlan, WorkerPool

PROFILE = ReplayProfile(emitted=(1, 2, 3, 4, 5, 6, 7, 8, 8, 8), bonus_in_tree=(True, True, False),
                        topk_logprobs=(-0.2, -2.5, -3.5, -4.0, -4.5, -5.0, -5.5, -6.0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="llama-3-8b")
    ap.add_argument("--draft", default="llama-3.2-1b")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", default="ar:1,swiftspec:1+1,tree:2,chain:2,ar:2")
    a = ap.parse_args()
    for run in a.runs.split(","):
        system, where = run.split(":")
        split = tuple(map(int, where.split("+"))) if "+" in where else None
        world = sum(split) if split else int(where)
        plan = WorkerPlan(system, a.target, a.draft, "random", "bfloat16", 0, 1024, SpecSettings())
        pool = WorkerPool(plan, world_size=world, device="cuda", split=split)
        try:
            rows = []
            for i in range(3):
                res, lat = pool.decode(list(range(10, 200)), max_new_tokens=a.tokens, eos_ids=set(),
                                       replay=PROFILE if system != "ar" else None, replay_seed=i)
                rows.append((len(res.tokens) / lat, lat / max(res.rounds, 1), res))
            res = rows[-1][2]
            med = lambda xs: statistics.median(xs) * 1e3 if xs else 0.0  # noqa: E731
            print(f"{run:14s} tok/s {statistics.median(r[0] for r in rows):7.1f}  round_ms {rows[-1][1] * 1e3:6.2f}  "
                  f"target_ms {med(res.target_s):6.2f}  draft_crit_ms {med(res.draft_s):6.2f}  "
                  f"draft_par_ms {med(res.draft_parallel_s):6.2f}  link_wait_ms {med(res.link_wait_s):6.2f}  "
                  f"acc {res.mean_accepted:.2f}  d {pool.draft_steps}", flush=True)
        finally:
            pool.close()


if __name__ == "__main__":
    main()
