"""Session 30 (v193; runs on branch persistent-blocks, session30/persistent-blocks.patch, not main): the Llama-3-8B fused forward with the persistent o_proj + MLP blocks (on)
against our three GEMMs a layer (off: persistent_blocks.unsupported answering "off"), one engine of
random bf16 weights, graph replays (kernel_bench.time_forward: median us), widths 1, 8, 12, 16 after
1000 cached tokens, in the order on, off, off, on; the floor (weights + cache / copy bandwidth) beside.
Usage: PYTHONPATH=. python3 blocks_ab.py OUT.md"""
import statistics
import sys

import torch

from swiftspec_bench.kernel_bench import build_shard, time_forward, use_kernels
from swiftspec_bench.kernel_shapes import Case, floor_bytes
from swiftspec_core.kernels import persistent_blocks
from swiftspec_core.runtime.floor import copy_bandwidth

WIDTHS, CONTEXT = (1, 8, 12, 16), 1000
supported = persistent_blocks.unsupported


def blocks(on: bool) -> None:
    persistent_blocks.unsupported = supported if on else (lambda model, width: "off")


def main() -> None:
    bandwidth = copy_bandwidth()
    engine = build_shard("llama-3-8b", 1, CONTEXT + 17)
    use_kernels(engine, "ours")
    times = {(on, w): [] for on in (True, False) for w in WIDTHS}
    for on in (True, False, False, True):
        blocks(on)
        for w in WIDTHS:
            times[on, w].append(time_forward(engine, w, CONTEXT))
            print(f"blocks {'on ' if on else 'off'} width {w:2d}: {times[on, w][-1]:8.1f} us", flush=True)
    lines = [f"Llama-3-8B fused forward, random bf16 weights, context {CONTEXT}, copy bandwidth "
             f"{bandwidth / 1e12:.3f} TB/s; {torch.cuda.get_device_name()}", "",
             "| width | blocks off us (2 runs) | blocks on us (2 runs) | on - off | floor us | off x floor | on x floor |",
             "|---|---|---|---|---|---|---|"]
    for w in WIDTHS:
        floor = floor_bytes(Case(op="forward", model="llama-3-8b", tp=1, m=w, context=CONTEXT,
                                 impl="ours")) / bandwidth * 1e6
        off, on = statistics.median(times[False, w]), statistics.median(times[True, w])
        lines.append(f"| {w} | {' / '.join(f'{t:.1f}' for t in times[False, w])} | "
                     f"{' / '.join(f'{t:.1f}' for t in times[True, w])} | {on - off:+.1f} | {floor:.1f} | "
                     f"{off / floor:.3f} | {on / floor:.3f} |")
    open(sys.argv[1], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
