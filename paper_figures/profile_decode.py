"""Where one decode's time goes on the GPU: a `swiftspec-bench run` whose first timed query runs
under torch's profiler, its kernels tabled by name.

    PYTHONPATH=. python3 paper_figures/profile_decode.py OUT.md -- run --target llama-3-8b \
        --draft llama-3.2-1b --weights random --device cuda --systems tree --kernels persistent \
        --datasets qa --limit 1 --out RUN_DIR [other run options]

Everything after `--` is the run's own command line: the same run, its rows written as usual. The
run's warm-up decode is not profiled; its first timed one is (one system, one process: --tp and
--split decodes run in workers the profiler does not see). OUT.md gets one table: per kernel name
(its first 60 characters), calls, median and total us, and its share of the decode's wall time;
then the wall time, the kernels' sum and the rest (kernels that overlap under PDL count twice in the
sum, so the rest understates the GPU's idle); then the idle itself (idle_tables: the gaps with no
kernel running, between which kernels, and what the host was doing meanwhile). It answers what a kernel bench leaves out (NOTES v190: a persistent draft step that
wins in the bench and loses inside the tree decoder).
"""
from __future__ import annotations

import bisect
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from swiftspec_bench import cli, systems

WARM_UPS = 1  # runner.warm_up decodes the first timed query once before it is timed


def kernel_table(events, wall_us: float) -> list[str]:
    """Markdown lines: the CUDA kernels of `events` by name, the most time first."""
    by_name: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.device_type == DeviceType.CUDA and e.time_range.elapsed_us() > 0:
            by_name[e.name[:60]].append(e.time_range.elapsed_us())
    rows = sorted(by_name.items(), key=lambda kv: -sum(kv[1]))
    total = sum(sum(d) for _, d in rows)
    lines = ["| kernel | calls | median us | total us | share of the decode |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {len(d)} | {statistics.median(d):.2f} | {sum(d):.0f} | {sum(d) / wall_us:.1%} |"
              for name, d in rows]
    lines += ["", f"decode wall {wall_us / 1e3:.1f} ms; kernels' sum {total / 1e3:.1f} ms; "
                  f"the rest {(wall_us - total) / 1e3:.1f} ms (PDL's overlaps count twice in the sum: idle below)"]
    return lines


def idle_tables(events, top: int = 12, least_us: float = 5.0) -> list[str]:
    """Markdown lines: where the GPU waits. Every gap of at least `least_us` between one kernel's
    end (the latest so far) and the next kernel's start, summed by (kernel before, kernel after),
    the most idle first; then the host's work during those gaps: the top-level CPU events (the
    runtime's calls and torch's ops; a Python stretch between them shows as none) overlapping them,
    by name, their overlap summed."""
    kernels = sorted((e.time_range.start, e.time_range.end, e.name[:40]) for e in events
                     if e.device_type == DeviceType.CUDA and e.time_range.elapsed_us() > 0)
    gaps, (_, end, before) = [], kernels[0]
    for start, stop, name in kernels[1:]:
        if start - end >= least_us:
            gaps.append((end, start, before, name))
        if stop > end:
            end, before = stop, name
    by_pair: dict[tuple[str, str], list[float]] = defaultdict(list)
    for g0, g1, a, b in gaps:
        by_pair[a, b].append(g1 - g0)
    lines = ["| idle after | before | gaps | median us | total us |", "|---|---|---|---|---|"]
    lines += [f"| {a} | {b} | {len(d)} | {statistics.median(d):.1f} | {sum(d):.0f} |"
              for (a, b), d in sorted(by_pair.items(), key=lambda kv: -sum(kv[1]))[:top]]
    host = sorted((e.time_range.start, e.time_range.end, e.name[:50]) for e in events
                  if e.device_type == DeviceType.CPU and e.cpu_parent is None)
    starts, longest = [h[0] for h in host], max((h[1] - h[0] for h in host), default=0.0)
    overlap: dict[str, float] = defaultdict(float)
    for g0, g1, _, _ in gaps:  # the host calls that start in (g0 - longest, g1) may overlap the gap
        for h0, h1, name in host[bisect.bisect_left(starts, g0 - longest):bisect.bisect_left(starts, g1)]:
            overlap[name] += max(0.0, min(g1, h1) - max(g0, h0))
    idle = sum(g1 - g0 for g0, g1, _, _ in gaps)
    lines += ["", f"gaps of {least_us:g} us or more: {len(gaps)}, {idle / 1e3:.1f} ms; the host's top-level calls "
                  "during them (overlap; the rest of the gaps: Python between calls):", "",
              "| host call | overlap us | share of the gaps |", "|---|---|---|"]
    lines += [f"| {name} | {t:.0f} | {t / idle:.1%} |"
              for name, t in sorted(overlap.items(), key=lambda kv: -kv[1])[:top] if idle > 0]
    return lines


def main() -> None:
    if "--" not in sys.argv[1:] or sys.argv.index("--") != 2:
        print("error: usage: profile_decode.py OUT.md -- run [run options]", file=sys.stderr)
        sys.exit(2)
    out, run_args = Path(sys.argv[1]), sys.argv[3:]
    plain, calls = systems.run_query, [0]

    def profiled(*args, **kwargs):
        calls[0] += 1
        if calls[0] != WARM_UPS + 1:
            return plain(*args, **kwargs)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            result, latency = plain(*args, **kwargs)
        out.write_text(f"{args[0]}, {len(args[2])} prompt tokens, {len(result.tokens)} new tokens, "
                       f"{result.rounds} rounds\n\n" + "\n".join(kernel_table(prof.events(), latency * 1e6)) + "\n\n"
                       + "\n".join(idle_tables(prof.events())) + "\n")
        return result, latency

    systems.run_query = profiled  # the runner calls it through the module
    sys.argv = ["swiftspec-bench", *run_args]
    cli.main()


if __name__ == "__main__":
    main()
