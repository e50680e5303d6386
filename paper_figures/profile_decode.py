"""Where one decode's time goes on the GPU: a `swiftspec-bench run` whose first timed query runs
under torch's profiler, its kernels tabled by name.

    PYTHONPATH=. python3 paper_figures/profile_decode.py OUT.md -- run --target llama-3-8b \
        --draft llama-3.2-1b --weights random --device cuda --systems tree --kernels persistent \
        --datasets qa --limit 1 --out RUN_DIR [other run options]

Everything after `--` is the run's own command line: the same run, its rows written as usual. The
run's warm-up decode is not profiled; its first timed one is (one system, one process: --tp and
--split decodes run in workers the profiler does not see). OUT.md gets one table: per kernel name
(its first 60 characters), calls, median and total us, and its share of the decode's wall time;
then the wall time, the kernels' sum and the rest (the GPU idle between kernels: the host's work
and launches). It answers what a kernel bench leaves out (NOTES v190: a persistent draft step that
wins in the bench and loses inside the tree decoder).
"""
from __future__ import annotations

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
                  f"the rest (GPU idle between kernels) {(wall_us - total) / 1e3:.1f} ms"]
    return lines


def main() -> None:
    if "--" not in sys.argv[1:] or sys.argv.index("--") != 2:
        sys.exit("usage: profile_decode.py OUT.md -- run [run options]")
    out, run_args = Path(sys.argv[1]), sys.argv[3:]
    plain, calls = systems.run_query, [0]

    def profiled(*args, **kwargs):
        calls[0] += 1
        if calls[0] != WARM_UPS + 1:
            return plain(*args, **kwargs)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            result, latency = plain(*args, **kwargs)
        out.write_text(f"{args[0]}, {len(args[2])} prompt tokens, {len(result.tokens)} new tokens, "
                       f"{result.rounds} rounds\n\n" + "\n".join(kernel_table(prof.events(), latency * 1e6)) + "\n")
        return result, latency

    systems.run_query = profiled  # the runner calls it through the module
    sys.argv = ["swiftspec-bench", *run_args]
    cli.main()


if __name__ == "__main__":
    main()
