"""Session 46, call 2 (NOTES v259): does a block's shared memory set how late the next kernel's
blocks start? The 70B o's awq_gemm blocks reach their PDL wait ~1.4-1.8 us after the launch before
ends (awq_phases.py, NOTES v250) where edge_probe.py's small blocks were released ~0.5 us after it
(v143). edge_probe.run's producer -> consumer pairs (early trigger, PDL wait, as awq_gemm), both
kernels one block an SM of 704 threads (o's 22 warps) with 8 to 200 KB of dynamic shared memory,
and 256-thread blocks at 147 KB (o's): the consumer's first entry (lead) and release (first /
median / last block) after the producer's last end, and the pair's time.

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/dispatch_probe.py
"""
import torch

from paper_figures.edge_probe import PAIRS, Side, run
from paper_figures.timing import print_rows

WORK_NS = 10_000


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(704, kb) for kb in (8, 64, 100, 147, 200)] + [(256, 147), (704, 8)]  # the first again last
    rows = []
    for threads, kb in shapes:
        row = run(Side(sms, threads, kb), Side(sms, threads, kb), late=False, counter=False, work_ns=WORK_NS)
        rows.append({"threads": threads, "shared KB": kb, **row})
        print(rows[-1], flush=True)
    print(f"\n{torch.cuda.get_device_name()}, {sms} SMs, work {WORK_NS} ns + 0..1.5 us a block, {PAIRS} pairs a "
          "graph, early trigger, PDL wait\n")
    print_rows(rows)
    print("\nrelease (first / median / last consumer block) and lead (first entry): after the producer's last "
          "block's end stamp, us.")


if __name__ == "__main__":
    main()
