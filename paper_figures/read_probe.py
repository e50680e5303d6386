"""How fast the AWQ GEMM's access pattern can stream its codes with no arithmetic, by load mechanism
(NOTES v90): `PYTHONPATH=. python3 paper_figures/read_probe.py` on a GPU.

The pattern is awq_gemm's (cuda/awq_gemm.cu) at C = 1: a block of S warps on one tile of K * 32
bytes of codes, warp s reading the tile's 4 KB groups s, s + S, ..., each as four 1 KB chunks, a
lane 16 bytes at lane * 16 and 512 + lane * 16 of each chunk. Two mechanisms, each keeping D chunks
in flight a warp and folding every loaded word into an xor that is written out (so no load is
dead): `ldg`, 16-byte loads straight into registers (ld.global.nc.L1::no_allocate, as the bf16
GEMM reads its weights), and `cp.async`, the GEMM's per-warp shared-memory ring of D + 1 stages
(D in flight while one is read back, cp.async.wait_group D - 1). The shapes are the 70B's gate_up
(896 tiles of K = 8192, plan() S = 3) and down (128 tiles of K = 28672, S = 19), each also at
twice the warps a tile (at most 32). A table of median us a call (20 calls in one CUDA graph, kernel_bench
.time_calls) and TB/s against runtime/floor.py's copy bandwidth.
"""
from __future__ import annotations

import cupy
import numpy as np
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_core.kernels.build import compile_source
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

// Byte offset of this warp's chunk n in the codes: its group split + (n / 4) S, chunk n % 4.
__device__ __forceinline__ unsigned long long chunk_offset(int tile, int K, int split, int S, int n) {
  return (unsigned long long)tile * K * 32 + (unsigned long long)(split + (n >> 2) * S) * 4096 + (unsigned long long)(n & 3) * 1024;
}

template <int D>
__device__ void read_ldg(const unsigned char* codes, unsigned* sink, int K) {
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
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template <int D>
__device__ void read_cp_async(const unsigned char* codes, unsigned* sink, int K) {
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
  for (int n = 0; n < chunks; ++n) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(D - 1) : "memory");
    __syncwarp();
    if (n + D < chunks) copy_chunk(n + D);  // into the stage read one chunk ago
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    const uint4* stage = reinterpret_cast<const uint4*>(ring + (n % kStages) * 1024);
    acc ^= fold(stage[lane]) ^ fold(stage[lane + 32]);
    __syncwarp();
  }
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

#define PROBES(D)                                                                                          \
  extern "C" __global__ void __launch_bounds__(1024) read_ldg_d##D(const unsigned char* c, unsigned* s, int K) { \
    read_ldg<D>(c, s, K);                                                                                  \
  }                                                                                                        \
  extern "C" __global__ void __launch_bounds__(1024) read_cp_async_d##D(const unsigned char* c, unsigned* s, int K) { \
    read_cp_async<D>(c, s, K);                                                                             \
  }
PROBES(1)
PROBES(2)
PROBES(3)
PROBES(4)
"""

SHAPES = {"gate_up": (896, 8192, 3), "down": (128, 28672, 19)}  # tiles, K, plan()'s S (70B, TP 1)


def main() -> None:
    module = compile_source(SOURCE)
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.3f} TB/s\n")
    print("| shape | warps a tile | mechanism | chunks in flight a warp | us | TB/s | of the copy bandwidth |")
    print("|---|---|---|---|---|---|---|")
    for name, (tiles, k, splits) in SHAPES.items():
        nbytes = tiles * k * 32
        copies = max(1, -(-2 * 50 * 2**20 // nbytes))  # reads in a row past twice the L2
        codes = [torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda")
                 for _ in range(copies)]
        for s in (splits, min(2 * splits, 32)):  # a block holds at most 32 warps
            sink = torch.empty(tiles * 32 * s, dtype=torch.int32, device="cuda")
            for mechanism in ("ldg", "cp_async"):
                for depth in DEPTHS:
                    fn = module.get_function(f"read_{mechanism}_d{depth}")
                    shared = s * (depth + 1) * 1024 if mechanism == "cp_async" else 0
                    if shared > 48 * 1024:
                        fn.max_dynamic_shared_size_bytes = shared

                    def call(i, fn=fn, shared=shared, s=s, sink=sink):  # on torch's stream (a graph's, when captured)
                        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                            fn((tiles,), (32 * s,), (codes[i % copies].data_ptr(), sink.data_ptr(), np.int32(k)),
                               shared_mem=shared)

                    us = time_calls(call, max(20, copies))
                    tbs = nbytes / (us * 1e-6) / 1e12
                    print(f"| {name} | {s} | {mechanism} | {depth} | {us:.1f} | {tbs:.2f} | "
                          f"{nbytes / (us * 1e-6) / bandwidth:.0%} |", flush=True)


if __name__ == "__main__":
    main()
