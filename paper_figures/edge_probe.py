"""What one kernel boundary costs, by how the consumer learns the producer is done (NOTES v122):
`PYTHONPATH=. python3 paper_figures/edge_probe.py` on a GPU.

Our kernels hand over through PDL: a consumer's blocks may sit resident early, and griddepcontrol.wait
releases them once every producer block has exited and its writes are visible. The alternative a
persistent design would use: each producer block, after its writes, releases a counter (fence, then
an atomic add), and the consumer's thread 0 spins on acquire loads of it; the last consumer block to
pass resets it (a second, departure counter), so a graph replays it. Safe under PDL: the consumer
is launched only once every producer block has triggered, so all of them are resident or done.

A producer block busy-waits `work` ns plus a fixed per-block jitter (0..1.5 us: a tail like a GEMM's),
writes a word a thread, and its thread 0 stamps %globaltimer; the consumer stamps on entry and on
release, and checks that it reads the producer's words of another block (errors: words it read
stale). The producer triggers its dependents early (at its start: the consumer resident all along,
as o_proj under the attention) or late (after its work, as our GEMMs do). Per configuration, medians
over the pairs of one replay of a graph of PAIRS pairs: release after the producer's last end (the
first, median and last consumer block), the consumer's first entry after it (negative: resident
early), and the pair's time from events over the whole graph.

`--configs` (NOTES v143) asks instead whether the SM's shared-memory configuration costs at a
boundary: a producer shaped like the 1B's o (one 512-thread block an SM) and a consumer like its
gate_up (four 128-thread blocks an SM), each with dynamic shared memory like theirs and a preferred
carveout (cuFuncSetAttribute) that makes the driver pick a given configuration (KB) for it, late
trigger, PDL wait: the same release columns for producer -> consumer configurations such as
32 -> 132 (today's o -> gate_up) against 132 -> 132 and 32 -> 32.
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from swiftspec_bench.kernel_bench import median_us
from swiftspec_core.kernels import build

from paper_figures.timing import print_rows

PAIRS = 64
SOURCE = r"""
#include "common.cuh"
#include "ll_line.cuh"

extern "C" __global__ void producer(int* data, unsigned long long* t_end, unsigned* arrived, int it, int work_ns,
                                    int late, int counter) {
  pdl_wait();  // the consumer of the pair before
  if (!late) pdl_trigger();
  const unsigned long long until = global_ns() + work_ns + (blockIdx.x * 37 % 16) * 100;
  while (global_ns() < until) {}
  if (late) pdl_trigger();
  data[blockIdx.x * blockDim.x + threadIdx.x] = it;
  __syncthreads();
  if (threadIdx.x == 0) {
    t_end[(long long)it * gridDim.x + blockIdx.x] = global_ns();
    if (counter) {
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      atomicAdd(arrived, 1u);
    }
  }
}

extern "C" __global__ void consumer(const int* data, unsigned long long* t_in, unsigned long long* t_rel,
                                    unsigned* arrived, unsigned* departed, int* errors, int it, int producers,
                                    int producer_threads, int counter) {
  const long long slot = (long long)it * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) t_in[slot] = global_ns();
  if (counter) {
    if (threadIdx.x == 0) {
      unsigned seen;
      do asm volatile("ld.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(arrived) : "memory");
      while (seen < (unsigned)producers);
    }
    __syncthreads();
  } else {
    pdl_wait();
  }
  const unsigned long long t = global_ns();
  const int other = (blockIdx.x + 1) % producers;  // another producer block's words
  if (data[other * producer_threads + threadIdx.x % producer_threads] != it) atomicAdd(errors, 1);
  if (threadIdx.x == 0) {
    t_rel[slot] = t;
    if (counter && atomicAdd(departed, 1u) == gridDim.x - 1) {  // every consumer block has passed
      *arrived = 0u;
      *departed = 0u;
    }
  }
  pdl_trigger();
}
"""


SM_SHARED_KB = 228  # an H100 / H200 SM's largest shared-memory configuration


class Side:
    """One kernel of the pair: blocks, threads a block, dynamic shared memory a block (KB) and the
    configuration (KB) it asks the driver for, as a carveout preference (None: the driver's choice)."""

    def __init__(self, blocks: int, threads: int = 256, shared_kb: float = 0, config_kb: int | None = None):
        self.blocks, self.threads, self.shared, self.config_kb = blocks, threads, int(shared_kb * 1024), config_kb

    def prepare(self, fn) -> None:
        # The carveout is a percent of the most an SM may take; the driver rounds it up to the next
        # configuration it supports, so it is taken just below the one wanted (32 KB: 14%, 31.9 KB
        # -> 32). -1: no preference.
        percent = -1 if self.config_kb is None else self.config_kb * 100 // SM_SHARED_KB
        build.set_function_attribute(fn.kernel.ptr, build.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared)
        build.set_function_attribute(fn.kernel.ptr, build.FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT, percent)

    def launch(self, fn, args: tuple) -> None:
        build.launch_ex(fn.kernel.ptr, (self.blocks,), (self.threads,), args, self.shared,
                        torch.cuda.current_stream().cuda_stream, True)


def run(prod: Side, cons: Side, late: bool, counter: bool, work_ns: int) -> dict:
    module = build.compile_source(build.inline_includes(SOURCE))
    producer, consumer = module.get_function("producer"), module.get_function("consumer")
    prod.prepare(producer)
    cons.prepare(consumer)
    dev = torch.device("cuda")
    data = torch.full((prod.blocks * prod.threads,), -1, dtype=torch.int32, device=dev)
    t_end = torch.zeros(PAIRS, prod.blocks, dtype=torch.int64, device=dev)
    t_in, t_rel = (torch.zeros(PAIRS, cons.blocks, dtype=torch.int64, device=dev) for _ in range(2))
    counters = torch.zeros(2, dtype=torch.int32, device=dev)  # arrived, departed
    errors = torch.zeros(1, dtype=torch.int32, device=dev)
    p, i32 = build.ptr, np.int32

    def pairs() -> None:
        for it in range(PAIRS):
            prod.launch(producer, (p(data), p(t_end), p(counters), i32(it), i32(work_ns), i32(late), i32(counter)))
            cons.launch(consumer, (p(data), p(t_in), p(t_rel), p(counters), np.uint64(counters.data_ptr() + 4),
                                   p(errors), i32(it), i32(prod.blocks), i32(prod.threads), i32(counter)))

    pairs()  # eager warm-up (compiles, loads)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pairs()
    errors.zero_()
    pair_us = median_us(graph, PAIRS, replays=5)  # the stamps are the last replay's; errors over all
    last_end = t_end.max(dim=1, keepdim=True).values  # [PAIRS, 1] ns
    rel = (t_rel - last_end).double().sort(dim=1).values / 1e3  # [PAIRS, consumer blocks] us
    lead = (t_in.min(dim=1, keepdim=True).values - last_end).double() / 1e3
    med = lambda x: statistics.median(x.flatten().tolist())  # noqa: E731
    return {"blocks": f"{prod.blocks} -> {cons.blocks}",
            "config KB": f"{prod.config_kb or 'driver'} -> {cons.config_kb or 'driver'}",
            "trigger": "late" if late else "early", "release": "counter" if counter else "pdl wait",
            "pair us": pair_us, "first us": med(rel[:, 0]), "median us": med(rel[:, -(-cons.blocks // 2)]),
            "last us": med(rel[:, -1]), "lead us": med(lead), "errors": int(errors.item())}


def config_rows(sms: int, work_ns: int) -> list[dict]:
    """The 1B's o -> gate_up shapes (o: 512 threads, 16 KB; gate_up: 128 threads, 12.5 KB, four an
    SM) under producer -> consumer configurations, today's first and last; then a producer that
    fills an SM's threads (two 1024-thread blocks, as o's registers fill it), so no consumer block
    can land before a producer block leaves."""
    o_like = [(32, 132), (132, 132), (32, 32), (32, 64), (64, 64), (132, 32), (32, 132)]
    rows = [run(Side(sms, 512, 16, a), Side(4 * sms, 128, 12.5, b), True, False, work_ns) for a, b in o_like]
    return rows + [run(Side(2 * sms, 1024, 8, a), Side(4 * sms, 128, 12.5, b), True, False, work_ns)
                   for a, b in [(32, 132), (132, 132), (32, 64), (32, 132)]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-ns", type=int, default=10_000)
    parser.add_argument("--configs", action="store_true", help="the shared-memory configuration table instead")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = config_rows(sms, args.work_ns) if args.configs else [
        run(Side(blocks), Side(blocks), late, counter, args.work_ns)
        for blocks in (sms, 4 * sms) for late in (False, True) for counter in (False, True)]
    print(f"{torch.cuda.get_device_name()}, {sms} SMs, work {args.work_ns} ns + 0..1.5 us a block, {PAIRS} pairs a graph\n")
    print_rows(rows)
    print("\nrelease (first / median / last consumer block) and lead: after the producer's last block's end stamp.")


if __name__ == "__main__":
    main()
