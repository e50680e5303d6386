"""Where a round's time goes in a run folder, with the prefill taken out, and SwiftSpec against a baseline.

    python3 paper_figures/round_accounting.py paper_figures/results/2026-11-30-2xh200 [--against tree@tp2]

The rows time each round's verification (target_s) and, across processes, the target's wait on the
link (link_wait_s); newer rows also the prefill (prefill_s). Where a row lacks it, the prefill is
estimated from ar's rows by least squares: latency - sum(target_s) = prefill_per_token *
prompt_tokens + host_per_round * rounds. Prints, per system, the round time with the prefill
removed against verification + link wait (what is left: the host's work between rounds), and each
swiftspec system's per-query speed ratio against the baseline (same dataset, question and turn).
Systems are matched by their name before the labels (`tree@tp2` is `tree@tp2:graft:fused` too).
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from swiftspec_bench.compare import QUERY
from swiftspec_bench.results import read_frame


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--against", default="tree@tp2")
    a = ap.parse_args()
    d = read_frame(a.run_dir)
    d["loop_s"] = [sum(t) + sum(w if w is not None else []) for t, w in zip(d.target_s, d.link_wait_s)]
    name = d.system.str.split(":").str[0]  # the system before its labels
    ar = d[name == "ar"]
    (per_token, per_round), *_ = np.linalg.lstsq(np.c_[ar.prompt_tokens, ar.rounds],
                                                 ar.latency_s - ar.loop_s, rcond=None)
    print(f"ar fit (rows without prefill_s): prefill {per_token * 1e6:.1f} us a prompt token, host "
          f"{per_round * 1e3:.2f} ms a round")
    prefill = d.prefill_s.astype(float) if "prefill_s" in d else pd.Series(np.nan, index=d.index)
    d["prefill"] = prefill.fillna(per_token * d.prompt_tokens)
    against = d[name == a.against]
    base = against.set_index(QUERY).tokens_per_s
    for system, g in d.groupby("system"):
        decode = (g.latency_s - g.prefill).sum()
        print(f"{system:28s} round {decode / g.rounds.sum() * 1e3:6.2f} ms without prefill; verify + link wait "
              f"{g.loop_s.sum() / g.rounds.sum() * 1e3:6.2f} ms; ratio {decode / g.loop_s.sum():.3f}")
        if system.startswith("swiftspec") and len(base):
            r = g.set_index(QUERY).tokens_per_s / base
            by = (g.groupby("dataset").tokens_per_s.mean()
                  / against.groupby("dataset").tokens_per_s.mean())
            print(f"{'':28s} vs {a.against}: mean tok/s {g.tokens_per_s.mean() / base.mean():.3f}x, faster on "
                  f"{int((r > 1).sum())}/{int(r.notna().sum())} queries, median {r.median():.3f}, "
                  f"p5 {r.quantile(0.05):.3f}; " + ", ".join(f"{k} {v:.2f}" for k, v in by.items()))


if __name__ == "__main__":
    main()
