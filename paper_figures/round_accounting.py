"""Where a round's time goes in a run folder, with the prefill taken out, and SwiftSpec against a baseline.

    python3 paper_figures/round_accounting.py paper_figures/results/2026-11-30-2xh200 [--against tree@tp2]

The rows time each round's verification (target_s) and, across processes, the target's wait on the
link (link_wait_s), but not the prefill. The prefill is estimated from ar's rows by least squares:
latency - sum(target_s) = prefill_per_token * prompt_tokens + host_per_round * rounds. Prints, per
system, the round time with that prefill removed against verification + link wait, and each
swiftspec system's per-query speed ratio against the baseline (same dataset, question and turn).
"""
from __future__ import annotations

import argparse

import numpy as np

from swiftspec_bench.compare import QUERY
from swiftspec_bench.results import read_frame


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--against", default="tree@tp2")
    a = ap.parse_args()
    d = read_frame(a.run_dir)
    d["loop_s"] = [sum(t) + sum(w if w is not None else []) for t, w in zip(d.target_s, d.link_wait_s)]
    ar = d[d.system == "ar"]
    (per_token, per_round), *_ = np.linalg.lstsq(np.c_[ar.prompt_tokens, ar.rounds],
                                                 ar.latency_s - ar.loop_s, rcond=None)
    print(f"ar fit: prefill {per_token * 1e6:.1f} us a prompt token, host {per_round * 1e3:.2f} ms a round")
    base = d[d.system == a.against].set_index(QUERY).tokens_per_s
    for system, g in d.groupby("system"):
        decode = (g.latency_s - per_token * g.prompt_tokens).sum()
        print(f"{system:18s} round {decode / g.rounds.sum() * 1e3:6.2f} ms without prefill; verify + link wait "
              f"{g.loop_s.sum() / g.rounds.sum() * 1e3:6.2f} ms; ratio {decode / g.loop_s.sum():.3f}")
        if system.startswith("swiftspec") and len(base):
            r = g.set_index(QUERY).tokens_per_s / base
            by = (g.groupby("dataset").tokens_per_s.mean()
                  / d[d.system == a.against].groupby("dataset").tokens_per_s.mean())
            print(f"{'':18s} vs {a.against}: mean tok/s {g.tokens_per_s.mean() / base.mean():.3f}x, faster on "
                  f"{int((r > 1).sum())}/{int(r.notna().sum())} queries, median {r.median():.3f}, "
                  f"p5 {r.quantile(0.05):.3f}; " + ", ".join(f"{k} {v:.2f}" for k, v in by.items()))


if __name__ == "__main__":
    main()
