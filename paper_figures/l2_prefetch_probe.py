"""Does a per-thread `prefetch.global.L2` put a buffer into L2, how fast, and does a reader then find
it there (NOTES v112)? On one GPU, for a buffer of each size:

    PYTHONPATH=. python3 paper_figures/l2_prefetch_probe.py [--mib 8,32] [--repeats 20]

Rows (median us of CUDA events around the timed launch; L2 flushed by writing a 256 MiB buffer
before each repeat): the reader alone from HBM (cold) and from L2 (read twice: warm); the reader
after a prefetch kernel and a 40 us spin (prefetched: near warm if the prefetch brought whole
lines), with 128-byte and 32-byte steps; the prefetch kernel alone (its blocks' issue time); and
prefetch then reader back to back (the pair against the cold reader: the overlap it buys).
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from swiftspec_core.kernels.build import compile_source

SOURCE = r"""
extern "C" __global__ void reader(const uint4 *buf, long long n16, unsigned *sink) {
  const long long blocks = gridDim.x, share = (n16 + blocks - 1) / blocks;
  const long long end = min(n16, (blockIdx.x + 1) * share);
  unsigned acc = 0;
  for (long long i = blockIdx.x * share + threadIdx.x; i < end; i += blockDim.x) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(buf + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // keeps the loads
}
extern "C" __global__ void prefetch(const char *buf, long long bytes, int step) {
  const long long blocks = gridDim.x, share = ((bytes + blocks - 1) / blocks + 127) / 128 * 128;
  const long long end = min(bytes, (blockIdx.x + 1) * share);
  for (long long at = blockIdx.x * share + (long long)step * threadIdx.x; at < end; at += (long long)step * blockDim.x)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(buf + at));
}
extern "C" __global__ void spin(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < (unsigned long long)ns);
}
"""


def main() -> None:
    import cupy

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", default="8,32")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    module = compile_source(SOURCE)
    reader, prefetch, spin = (module.get_function(k) for k in ("reader", "prefetch", "spin"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    sink = torch.zeros(4096, dtype=torch.int32, device="cuda")
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    print(f"{torch.cuda.get_device_name()}, {sms} SMs, L2 {torch.cuda.get_device_properties(0).L2_cache_size >> 20} MiB")
    print("\n| MiB | case | median us | GB/s |\n|---|---|---|---|")
    for mib in (int(m) for m in args.mib.split(",")):
        buf = torch.randint(0, 255, (mib << 20,), dtype=torch.uint8, device="cuda")
        n = buf.numel()
        read = lambda: reader((2 * sms,), (512,), (buf.data_ptr(), np.int64(n // 16), sink.data_ptr()))  # noqa: E731
        pref = lambda step: prefetch((2 * sms,), (256,), (buf.data_ptr(), np.int64(n), np.int32(step)))  # noqa: E731
        wait = lambda: spin((1,), (32,), (np.int64(40_000),))  # noqa: E731
        cases = {  # name: (untimed launches, timed launches)
            "reader cold": ((), (read,)),
            "reader warm": ((read,), (read,)),
            "reader after prefetch 128 B + 40 us": ((lambda: pref(128), wait), (read,)),
            "reader after prefetch 32 B + 40 us": ((lambda: pref(32), wait), (read,)),
            "prefetch 128 B alone": ((), (lambda: pref(128),)),
            "prefetch 128 B, then reader": ((), (lambda: pref(128), read)),
        }
        for name, (before, timed) in cases.items():
            times = []
            with stream:
                for _ in range(args.repeats):
                    flush.fill_(1)
                    for f in before:
                        f()
                    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for f in timed:
                        f()
                    stop.record()
                    torch.cuda.synchronize()
                    times.append(start.elapsed_time(stop) * 1e3)
            us = statistics.median(times)
            print(f"| {mib} | {name} | {us:.2f} | {n / us / 1e3:.0f} |")


if __name__ == "__main__":
    main()
