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
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from swiftspec_bench.kernel_bench import median_us
from swiftspec_core.kernels import build

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
                                    int counter) {
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
  if (data[other * blockDim.x + threadIdx.x] != it) atomicAdd(errors, 1);
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


def launch(fn, grid: int, args: tuple) -> None:
    build.launch_ex(fn.kernel.ptr, (grid,), (256,), args, 0, torch.cuda.current_stream().cuda_stream, True)


def run(blocks: int, late: bool, counter: bool, work_ns: int) -> dict:
    module = build.compile_source(build.inline_includes(SOURCE))
    producer, consumer = module.get_function("producer"), module.get_function("consumer")
    dev = torch.device("cuda")
    data = torch.full((blocks * 256,), -1, dtype=torch.int32, device=dev)
    t_end, t_in, t_rel = (torch.zeros(PAIRS, blocks, dtype=torch.int64, device=dev) for _ in range(3))
    counters = torch.zeros(2, dtype=torch.int32, device=dev)  # arrived, departed
    errors = torch.zeros(1, dtype=torch.int32, device=dev)
    p, i32 = build.ptr, np.int32

    def pairs() -> None:
        for it in range(PAIRS):
            launch(producer, blocks, (p(data), p(t_end), p(counters), i32(it), i32(work_ns), i32(late), i32(counter)))
            launch(consumer, blocks, (p(data), p(t_in), p(t_rel), p(counters), np.uint64(counters.data_ptr() + 4),
                                      p(errors), i32(it), i32(blocks), i32(counter)))

    pairs()  # eager warm-up (compiles, loads)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pairs()
    errors.zero_()
    pair_us = median_us(graph, PAIRS, replays=5)  # the stamps are the last replay's; errors over all
    last_end = t_end.max(dim=1, keepdim=True).values  # [PAIRS, 1] ns
    rel = (t_rel - last_end).double().sort(dim=1).values / 1e3  # [PAIRS, blocks] us
    lead = (t_in.min(dim=1, keepdim=True).values - last_end).double() / 1e3
    med = lambda x: statistics.median(x.flatten().tolist())  # noqa: E731
    return {"blocks": blocks, "trigger": "late" if late else "early", "release": "counter" if counter else "pdl wait",
            "pair us": pair_us, "first us": med(rel[:, 0]), "median us": med(rel[:, blocks // 2]),
            "last us": med(rel[:, -1]), "lead us": med(lead), "errors": int(errors.item())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-ns", type=int, default=10_000)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = [run(blocks, late, counter, args.work_ns)
            for blocks in (sms, 4 * sms) for late in (False, True) for counter in (False, True)]
    keys = list(rows[0])
    print(f"{torch.cuda.get_device_name()}, {sms} SMs, work {args.work_ns} ns + 0..1.5 us a block, {PAIRS} pairs a graph\n")
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")
    print("\nrelease (first / median / last consumer block) and lead: after the producer's last block's end stamp.")


if __name__ == "__main__":
    main()
