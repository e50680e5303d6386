"""How fast the AWQ GEMM's access pattern can stream its codes with no arithmetic, by load mechanism
(NOTES v90, v291, v292): `PYTHONPATH=. python3 paper_figures/read_probe.py [--shapes o,qkv] [--boundary]`
on a GPU.

The pattern is awq_gemm's (cuda/awq_gemm.cu) at C = 1: a block of S warps on one tile of K * 32
bytes of codes, warp s reading the tile's 4 KB groups s, s + S, ..., each as four 1 KB chunks, a
lane 16 bytes at lane * 16 and 512 + lane * 16 of each chunk. Three mechanisms, each keeping D chunks
in flight a warp and folding every loaded word into an xor that is written out (so no load is
dead): `ldg`, 16-byte loads straight into registers (ld.global.nc.L1::no_allocate, as the bf16
GEMM reads its weights), `cp_async`, the GEMM's per-warp shared-memory ring of D + 1 stages
(D in flight while one is read back, cp.async.wait_group D - 1), and `cp_async_pdl`, that ring
launched as the GEMM launches (programmatic dependent launch: its first D chunks' copies issued,
then griddepcontrol.wait and launch_dependents, as awq_gemm_block.cuh's pdl_start()), so a launch
pays the boundary the GEMM pays and nothing of its arithmetic or epilogue (the probe's few registers
let more of its blocks share an SM than awq_gemm's do: --boundary also runs it at awq_gemm's). The shapes are the 70B's (TP 1, plan()'s S): gate_up (896 tiles of K = 8192,
S = 3), down (128 tiles of K = 28672, S = 19), o (128 tiles of K = 8192, S = 22) and qkv (160 tiles
of K = 8192, S = 11), each also at twice the warps a tile (at most 32); and, by name only, qkv's codes
split along K across 2 or 4 blocks a tile (SPLIT_SHAPES). A table of median us a call
(graph replays, kernel_bench.time_calls; copies of the codes past twice the L2) and TB/s against
runtime/floor.py's copy bandwidth. --boundary times only the GEMM's launch (cp_async_pdl, 3 in
flight, plan()'s S) at two occupancies, the probe's own and awq_gemm's, each with the block held
0, 1000 and 2000 SM cycles after its loop (an epilogue's stand-in).
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from paper_figures.timing import fail
from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import input_copies
from swiftspec_core.kernels.awq_gemm import SHARED_PER_SM, WARPS_PER_SM
from swiftspec_core.kernels.build import compile_source, launch_ex
from swiftspec_core.runtime.floor import copy_bandwidth

DEPTHS = (1, 2, 3, 4)
SOURCE = r"""
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ uint4 load_stream(const unsigned char* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned fold(const uint4& v) { return v.x ^ v.y ^ v.z ^ v.w; }

// After the loop, the block holds its SM `hold` cycles more (thread 0 spins between two barriers),
// as a GEMM's epilogue does while no code byte flows: 0 for none.
__device__ __forceinline__ void hold_sm(long long hold) {
  if (hold <= 0) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < hold) {
    }
  }
  __syncthreads();
}

// Byte offset of this warp's chunk n in the codes: its group split + (n / 4) S, chunk n % 4.
__device__ __forceinline__ unsigned long long chunk_offset(int tile, int K, int split, int S, int n) {
  return (unsigned long long)tile * K * 32 + (unsigned long long)(split + (n >> 2) * S) * 4096 + (unsigned long long)(n & 3) * 1024;
}

template <int D>
__device__ void read_ldg(const unsigned char* codes, unsigned* sink, int K, long long hold) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, S = blockDim.x >> 5;
  const int groups = K / 128, mine = warp < groups ? (groups - 1 - warp) / S + 1 : 0, chunks = 4 * mine;
  uint4 buf[D][2];
  unsigned acc = 0;
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (d < chunks) {
      const unsigned char* p = codes + chunk_offset(blockIdx.x, K, warp, S, d) + 16 * lane;
      buf[d][0] = load_stream(p);
      buf[d][1] = load_stream(p + 512);
    }
  for (int n = 0; n < chunks; n += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if (n + d < chunks) acc ^= fold(buf[d][0]) ^ fold(buf[d][1]);
      if (n + d + D < chunks) {
        const unsigned char* p = codes + chunk_offset(blockIdx.x, K, warp, S, n + d + D) + 16 * lane;
        buf[d][0] = load_stream(p);
        buf[d][1] = load_stream(p + 512);
      }
    }
  }
  hold_sm(hold);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template <int D, bool kPdl>
__device__ void read_cp_async(const unsigned char* codes, unsigned* sink, int K, long long hold) {
  constexpr int kStages = D + 1;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, S = blockDim.x >> 5;
  const int groups = K / 128, mine = warp < groups ? (groups - 1 - warp) / S + 1 : 0, chunks = 4 * mine;
  unsigned char* ring = smem + warp * kStages * 1024;
  unsigned acc = 0;
  auto copy_chunk = [&](int n) {
    const unsigned char* p = codes + chunk_offset(blockIdx.x, K, warp, S, n) + 16 * lane;
    const unsigned dst = shared_address(ring + (n % kStages) * 1024 + 16 * lane);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(p) : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst + 512), "l"(p + 512) : "memory");
  };
  for (int n = 0; n < D; ++n) {
    if (n < chunks) copy_chunk(n);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  if (kPdl) {  // as pdl_start(): the launch before ends, then the next may start
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  }
  for (int n = 0; n < chunks; ++n) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(D - 1) : "memory");
    __syncwarp();
    if (n + D < chunks) copy_chunk(n + D);  // into the stage read one chunk ago
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    const uint4* stage = reinterpret_cast<const uint4*>(ring + (n % kStages) * 1024);
    acc ^= fold(stage[lane]) ^ fold(stage[lane + 32]);
    __syncwarp();
  }
  hold_sm(hold);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

#define PROBE_ARGS const unsigned char *c, unsigned *s, int K, long long hold
#define PROBES(D)                                                                                               \
  extern "C" __global__ void __launch_bounds__(1024) read_ldg_d##D(PROBE_ARGS) { read_ldg<D>(c, s, K, hold); } \
  extern "C" __global__ void __launch_bounds__(1024) read_cp_async_d##D(PROBE_ARGS) {                           \
    read_cp_async<D, false>(c, s, K, hold);                                                                     \
  }                                                                                                             \
  extern "C" __global__ void __launch_bounds__(1024) read_cp_async_pdl_d##D(PROBE_ARGS) {                       \
    read_cp_async<D, true>(c, s, K, hold);                                                                      \
  }
PROBES(1)
PROBES(2)
PROBES(3)
PROBES(4)
"""

# tiles, K, plan()'s S (70B, TP 1)
SHAPES = {"gate_up": (896, 8192, 3), "down": (128, 28672, 19), "o": (128, 8192, 22), "qkv": (160, 8192, 11)}
# qkv's codes split along K across C blocks a tile, as the C > 1 kernels split them (here plain blocks
# launched with PDL; the runtime's are clusters, launched without): C x 160 blocks of K / C, S warps each
SPLIT_SHAPES = {"qkv_c2_s8": (320, 4096, 8), "qkv_c2_s11": (320, 4096, 11), "qkv_c4_s4": (640, 2048, 4)}
MECHANISMS = ("ldg", "cp_async", "cp_async_pdl")
# --boundary: the GEMM's launch (cp_async_pdl, 3 chunks in flight, plan()'s S), with the probe's own
# occupancy (few registers: blocks of the next launch sit beside this launch's from its start) and
# with awq_gemm's (its 80 registers a lane hold an SM to WARPS_PER_SM warps: the next launch's blocks
# enter only as this launch's leave), set through the blocks' shared memory; and a hold after the loop
# in SM cycles (an epilogue's stand-in)
HOLDS = (0, 1000, 2000)


def gemm_occupancy_shared(splits: int) -> int:
    """Dynamic shared memory a block of `splits` warps that lets an SM hold as many of them as
    awq_gemm's registers do (WARPS_PER_SM // S), and not one more (228 KB an SM, 1 KB a block the
    system's; at most 227 KB a block)."""
    blocks = max(1, WARPS_PER_SM // splits)
    return min(SHARED_PER_SM // blocks - 1024, 227 * 1024)


def parse_shapes(text: str) -> list[str]:
    """--shapes: a comma-separated list of SHAPES' names; SystemExit (timing.fail) on any other."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SHAPES | SPLIT_SHAPES]
    if not names or unknown:
        fail(f"--shapes {text!r}: name some of {', '.join(SHAPES | SPLIT_SHAPES)}")
    return names


def read(fn, mechanism: str, depth: int, codes: torch.Tensor, sink: torch.Tensor, tiles: int, k: int,
         splits: int, shared_at_least: int = 0, hold: int = 0) -> None:
    """One launch of probe `fn` (read_{mechanism}_d{depth} of SOURCE) over `tiles` tiles of K = k codes
    at `splits` warps a tile, on torch's current stream; each thread's xor into sink [tiles * 32 S].
    shared_at_least: the block's dynamic shared memory raised to it (fewer blocks an SM); hold: SM
    cycles a block stays after its loop."""
    ring = splits * (depth + 1) * 1024 if mechanism != "ldg" else 0  # the ring's D + 1 stages a warp
    shared = max(ring, shared_at_least)
    if shared > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared
    args = (np.uint64(codes.data_ptr()), np.uint64(sink.data_ptr()), np.int32(k), np.int64(hold))
    launch_ex(fn.kernel.ptr, (tiles,), (32 * splits,), args, shared, torch.cuda.current_stream().cuda_stream,
              pdl=mechanism.endswith("pdl"))


def codes_past_l2(nbytes: int) -> list[torch.Tensor]:
    """Copies of `nbytes` of random codes, as many as the kernel rows take (kernel_ops.input_copies:
    reads in a row pass twice this GPU's L2)."""
    copies = input_copies(nbytes)
    return [torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda") for _ in range(copies)]


def time_reads(fn, mechanism: str, depth: int, codes: list[torch.Tensor], tiles: int, k: int, splits: int,
               shared_at_least: int = 0, hold: int = 0) -> float:
    """Median us a launch of read() over the copies in turn (graph replays)."""
    sink = torch.empty(tiles * 32 * splits, dtype=torch.int32, device="cuda")

    def call(i):  # on torch's stream (a graph's, when captured)
        read(fn, mechanism, depth, codes[i % len(codes)], sink, tiles, k, splits, shared_at_least, hold)

    return time_calls(call, max(20, len(codes)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the AWQ GEMM's access pattern, no arithmetic")
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help="comma-separated, of " + ", ".join(SHAPES | SPLIT_SHAPES))
    parser.add_argument("--boundary", action="store_true",
                        help="only the GEMM's launch, at the probe's occupancy and awq_gemm's, with holds after the loop")
    args = parser.parse_args(argv)
    shapes = parse_shapes(args.shapes)
    module = compile_source(SOURCE)
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.3f} TB/s\n")

    def share(nbytes: int, us: float) -> str:
        return f"{us:.1f} | {nbytes / (us * 1e-6) / 1e12:.2f} | {nbytes / (us * 1e-6) / bandwidth:.0%}"

    if args.boundary:
        print("| shape | warps a tile | blocks an SM at most | hold cycles | us | TB/s | of the copy bandwidth |")
    else:
        print("| shape | warps a tile | mechanism | chunks in flight a warp | us | TB/s | of the copy bandwidth |")
    print("|---|---|---|---|---|---|---|")
    for name in shapes:
        tiles, k, splits = (SHAPES | SPLIT_SHAPES)[name]
        nbytes = tiles * k * 32
        codes = codes_past_l2(nbytes)
        if args.boundary:
            fn = module.get_function("read_cp_async_pdl_d3")
            for pad in (0, gemm_occupancy_shared(splits)):
                occupancy = f"{WARPS_PER_SM // splits} (awq_gemm's)" if pad else "the probe's"
                for hold in HOLDS:
                    us = time_reads(fn, "cp_async_pdl", 3, codes, tiles, k, splits, pad, hold)
                    print(f"| {name} | {splits} | {occupancy} | {hold} | {share(nbytes, us)} |", flush=True)
        else:
            for s in (splits, min(2 * splits, 32)):  # a block holds at most 32 warps
                for mechanism in MECHANISMS:
                    for depth in DEPTHS:
                        us = time_reads(module.get_function(f"read_{mechanism}_d{depth}"), mechanism, depth, codes,
                                        tiles, k, s)
                        print(f"| {name} | {s} | {mechanism} | {depth} | {share(nbytes, us)} |", flush=True)
        codes.clear()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
