// Row-invariant small-M GEMM on 4-bit AWQ weights, version 5: out[M, N] = x[M, K] @ W^T (+ bias[N]),
// W[n, k] = (code[k, n] - zero[k / G, n]) * scale[k / G, n], AutoAWQ's tensors in the tiled layout of
// swiftspec_core/models/awq.py (tile(): B = ceil(N / 64) tiles of 64 output columns, each tile's rows
// contiguous, zero-padded past N): qweight int32 [B][K][8], qzeros int32 [B][K/G][8], scales fp16
// [B][K/G][64], nibble i of an int32 holding column 8c + ORDER[i], ORDER = (0, 2, 4, 6, 1, 3, 5, 7).
// bf16 or fp16 x (kF16: the awq_*_f16 kernels), bf16 out, 1 <= M <= 16, fp32 accumulation, rounded
// once (swiftspec_core/kernels/awq_gemm.py).
//
// Numerics (the contract awq_gemm.py states): the nibbles become bf16 128 + q (0x4300 | q, exact), and
// the mma's sum x (128 + q) over one whole group (G k, G / 32 chunks of 32) in fp32, beside x alone
// (an mma with A all ones); the group's value is fmaf(-(128 + zero), x sum, that sum) (the zero
// folded in once a group, not subtracted from every weight), times the fp32 scale, added to the
// accumulator. No weight is rounded; the sums' fp32 roundings see 128 + q where v1/v2 summed the
// exact q - zero, about 20x larger intermediate values (still ~2^-18 of a result, where bf16's
// rounding is 2^-9: a CPU proxy of both, round-to-nearest and truncating sums, puts >= 99.9% of
// 70B-shape outputs bitwise equal to the exact-weight fp32 sum either way). Row invariance as in
// version 2: an output element depends only on its own x row and weight column; which groups a warp
// sums, in which order, and how the warps' sums combine is decided by (N, K, G) and the GPU alone
// (plan() in awq_gemm.py), never by M. Rows 0..7 run the same instructions in both kernels
// (awq_gemm_r8_*, M <= 8, and awq_gemm_r16_*, which adds the mma's of x rows 8..15 on the same
// weight fragments).
// fp16 operands (kF16, NOTES v211-v215): fp16's 10 mantissa bits hold a nibble in place at bits
// 0..3 and 4..7, so the codes become fp16 1024 + q (even tiles) and 1024 + 16 q (odd tiles), five
// instructions a word where bf16 takes seven; the fold takes (1024 + c zero) times x's sum, and odd
// tiles' sums, 16 times their value, are divided once at the store (exact). Larger intermediate
// values again (~8x on even tiles): ~99.2% of 70B-shape outputs equal the exact-weight sum (bf16:
// ~99.9%), rows as invariant.
//
// Design choices and what they were measured against (NOTES v30-v38 and v86-v93 hold the runs):
//   - the zero folded in once a group (above), not subtracted from every weight pair.
//   - ldmatrix.trans, not shared loads and prmt's: a stage holds a chunk's 32 code rows in an order
//     (stage_row) such that the transposed 8 x 8 matrices hand lane (g, t) 16-bit half g of an int32
//     column at the k pair (8t + 2m, 8t + 2m + 1): 4 output columns x 2 consecutive k, what an mma
//     A register holds once one nibble is extracted. 2 ldmatrix.x4 a chunk feed its 8 mma's.
//   - one scale per group: the mma's sum a whole group, and 32 fmaf a group fold zero and scale in.
//   - a warp's unit of work is a group (G / 32 chunks in a row: 4 KB at G = 128), so the C S warps
//     of a cluster read consecutive 4 KB pieces of the tile at once.
//   - registers (80 a lane, 19-24 warps an SM where plan() gives them): the accumulators live in
//     shared memory (read, scaled and written once a group), the group's chunks are unrolled at M <=
//     8, and at M > 8 x rows are loaded in the chunk they feed.
//   - a 4-stage ring a warp (3 KB of codes in flight), and a group's zeros and scales copied into
//     it beside its first chunk (version 4): the warp never waits on a load it did not start a ring
//     ahead. The first STAGES - 1 chunks' copies go out before the PDL wait (version 5): weights are
//     never written by a kernel, so that DRAM latency overlaps the previous kernel's tail.
// What paces it (session 15, ncu and probes on the 70B shapes): not the memory side (this access
// pattern streams at the copy bandwidth with the ring alone, paper_figures/read_probe.py), not bytes
// in flight or warps an SM, but the instruction stream (~121 warp instructions a KB at M <= 8, 453 a
// 4 KB group: 128 LOP3 and 96 shifts the nibble extraction, 40 HMMA, the fold ~50) and its pipes:
// the shifts went to the integer pipe where the FMA-heavy one ran out (awq_common.cuh).

// awq_swiglu_* (version 5's kernel with a SwiGLU epilogue, for the MLP's gate_up = [gate | up],
// N = 2F, F a multiple of 64): a block holds two halves of S warps, the first on a gate tile, the
// second on the up tile F / 64 tiles further (the same F columns of up), each half running exactly
// what awq_gemm's block of S warps runs on its tile (the same groups, order and combine: plan()
// decides (S, C) from (2F, K, G) for both); the epilogue rounds each column's sum to bf16, as
// awq_gemm writes it, and writes silu_times of the two (common.cuh): bitwise swiglu(awq_gemm(x, w)),
// one launch and no [M, 2F] intermediate.

#include "awq_gemm_block.cuh"

// awq_{gemm,swiglu}[_f16]_r{8,16}_g{G}_c{C}: bf16 x, or fp16 x (_f16: the fp16-operand extraction);
// M <= 8 or M > 8, group size G, clusters of C blocks (C > 1: __cluster_dims__, so a plain launch of
// a grid of whole clusters), AWQ_THREADS a block (awq_gemm_block.cuh). ptxas 13.0, sm_90a: r8 66-74
// registers, r16 80, no spills. (N: the weight's rows, 2F for swiglu; half_out: kHalfOut | kHalfNextX.)
#define AWQ_GEMM_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G, C, ATTRIBUTES)                                    \
  extern "C" __global__ void __launch_bounds__(AWQ_THREADS) ATTRIBUTES NAME##_r##ROWS##_g##G##_c##C(       \
      const void* __restrict__ x, const int* __restrict__ qweight, const int* __restrict__ qzeros,       \
      const __half* __restrict__ scales, const bf16* __restrict__ bias, bf16* out, int M, int N, int K,  \
      const float* row_sums, const bf16* residual, const bf16* next_norm, void* next_x, float* next_sums, \
      float eps, float x_unit, float next_x_scale, int half_out) {                                       \
    const Norms norms{row_sums, residual, next_norm, next_x, next_sums, eps, x_unit, next_x_scale, half_out}; \
    awq_gemm_block<C, TWO, G / 32, SWIGLU, F16>(x, qweight, qzeros, scales, bias, out, M, N, K, norms);  \
  }
#define AWQ_GEMM_CLUSTERS(NAME, SWIGLU, F16, ROWS, TWO, G)                            \
  AWQ_GEMM_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G, 1, )                               \
  AWQ_GEMM_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G, 2, __cluster_dims__(2, 1, 1))      \
  AWQ_GEMM_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G, 4, __cluster_dims__(4, 1, 1))      \
  AWQ_GEMM_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G, 8, __cluster_dims__(8, 1, 1))
#define AWQ_GEMM_ROWS(NAME, SWIGLU, F16, G)             \
  AWQ_GEMM_CLUSTERS(NAME, SWIGLU, F16, 8, false, G)     \
  AWQ_GEMM_CLUSTERS(NAME, SWIGLU, F16, 16, true, G)
#define AWQ_GEMM_OPS(G)                          \
  AWQ_GEMM_ROWS(awq_gemm, false, false, G)       \
  AWQ_GEMM_ROWS(awq_gemm_f16, false, true, G)    \
  AWQ_GEMM_ROWS(awq_swiglu, true, false, G)      \
  AWQ_GEMM_ROWS(awq_swiglu_f16, true, true, G)
AWQ_GEMM_OPS(32)
AWQ_GEMM_OPS(64)
AWQ_GEMM_OPS(128)
