// The cache append inside the tree attention (attention.cu, append = 1; NOTES v98, v105). As its
// own kernel (append_kv.cu) the append cost ~2.4 us a layer of the 8B forward with PDL on (v97:
// the attention waited for it). Inside, every block computes the forward's T new keys (RoPE,
// rope.cuh's new_kv4, the arithmetic of append_kv.cu) and values of its kv head into shared memory
// beside its staged tile, puts those whose cache rows it staged into the tile, and reads the
// others from there; one block a row writes them to the cache. The tile then holds what the cache
// holds after append_kv, bit for bit, so the output is append_kv then attention's.
#pragma once
#include "common.cuh"
#include "rope.cuh"
#include "staged.cuh"

#define APPEND_MAX 32  // the most tokens whose keys and values a block appends (kernels/attention.py)

// Before the block's first barrier: token t's new key and value of kv head kh (its k in qkv at
// k_tok + t * stride, its v KV * HD further) into row t of new_k and new_v ([T][ROW] bf16 each,
// shared), its cache row into new_rows[t] (-1: outside [0, R), which append_kv skips). The writer
// block (z = 0) whose chunk c holds a row (rows past the last chunk: the last chunk's) also writes
// it to the caches ([R][KV][HD]).
template <int HD, int ROW, int CH>
__device__ __forceinline__ void append_new_rows(const bf16 *__restrict__ k_tok, long long stride, int KV,
                                                const long long *__restrict__ blk, int cols, const float *cos_t,
                                                const float *sin_t, int T, int R, bf16 *new_k, bf16 *new_v,
                                                int *new_rows, bool writer, int c, int nchunks, int kh,
                                                bf16 *__restrict__ k_cache, bf16 *__restrict__ v_cache, unsigned threads) {
  constexpr int HALF = HD / 2, IG = HALF / 4;  // groups of 4 pairs a token
  for (int e = threadIdx.x; e < T * IG; e += threads) {
    const int t = e / IG, i0 = (e % IG) * 4;
    const long long *b = blk + (long long)t * cols, row = b[COL_ROW], p = b[COL_POSITION];
    const bf16 *k = k_tok + t * stride;
    const NewKV4 kv = new_kv4(k, k + (long long)KV * HD, cos_t + p * HD, sin_t + p * HD, i0, HALF);
    store_kv4(kv, new_k + t * ROW, new_v + t * ROW, i0, HALF);
    if (row >= 0 && row < R && writer && min(row / CH, (long long)nchunks - 1) == c)
      store_kv4(kv, k_cache + (row * KV + kh) * HD, v_cache + (row * KV + kh) * HD, i0, HALF);
  }
  if (threadIdx.x < T) {
    const long long row = blk[(long long)threadIdx.x * cols + COL_ROW];
    new_rows[threadIdx.x] = row >= 0 && row < R ? (int)row : -1;
  }
}

// After the first barrier (the tile staged; the new rows, the block's query positions and
// prefixes in shared memory): the new rows among the tile's rows [c0, c0 + tile_rows) take the new
// keys and values over the old contents it staged; a tree row (tree_rows[q][j - c0] for positions
// j from query q's prefix to its position) outside the tile that is new becomes -1 - t (row t of
// new_k / new_v). The caller then synchronizes the block. threads: the block's (both functions).
template <int HD, int ROW, int CH>
__device__ __forceinline__ void append_place(const bf16 *new_k, const bf16 *new_v, const int *new_rows, int T,
                                             bf16 *k_tile, bf16 *v_tile, int c0, int tile_rows, int *tree_rows,
                                             int queries, const int *q_pos, const int *q_prefix, unsigned threads) {
  constexpr int D8 = HD / 8;
  for (int e = threadIdx.x; e < T * D8; e += threads) {
    const int t = e / D8, d = (e % D8) * 8, r = new_rows[t] - c0;
    if (new_rows[t] >= 0 && r >= 0 && r < tile_rows) {
      *reinterpret_cast<uint4 *>(k_tile + r * ROW + d) = *reinterpret_cast<const uint4 *>(new_k + t * ROW + d);
      *reinterpret_cast<uint4 *>(v_tile + r * ROW + d) = *reinterpret_cast<const uint4 *>(new_v + t * ROW + d);
    }
  }
  for (int e = threadIdx.x; e < queries * CH; e += threads) {
    const int q = e / CH, j = c0 + e % CH, row = tree_rows[e];
    if (j >= q_prefix[q] && j <= q_pos[q] && (row < c0 || row >= c0 + tile_rows))  // a tree row outside the tile
      for (int t = 0; t < T; ++t)
        if (new_rows[t] == row) tree_rows[e] = -1 - t;
  }
}
