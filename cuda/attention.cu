// Tree attention with RoPE inside and an in-kernel split-KV combine, and (append = 1) the cache
// append of the forward's own keys and values (alone: append_kv.cu). Python side and torch
// references: swiftspec_core/kernels/attention.py.
//
// Row invariance: a query's bits depend only on its q, its position p and the keys/values at
// positions 0..p. Keys are reduced in position order: positions split into chunks of CHUNK at
// fixed boundaries (one block per chunk, kv head and query group); in a chunk, the scores of a
// (position, head) come from tensor-core products over the head dimension in a fixed order, one
// softmax over the chunk a head (max and sum in a fixed order), its values summed by tensor-core
// products over groups of 16 positions in order; the chunks' partials are merged in chunk order
// (batches of 16 under a running max) by the blocks attention_merge.cuh names. An
// mma's output element depends only on its own row of A and column of B, so nothing depends on T,
// the query's index, the other queries or heads, the cache rows its tree keys sit at (a fragment
// holds the same values whichever memory it was loaded from), or the span (the grid size).
// Numerics: q with RoPE in fp32 is rounded once to bf16 for the tensor cores (as the reference
// does), scores are fp32, a position's softmax weight is rounded to bf16 for the value product
// while the sum that normalizes uses the fp32 weights; a chunk's unnormalized output is stored in
// bf16 (its max and sum in fp32) and merged in fp32.
// Speed: a warp item is one query and up to HN = 8 of its kv head's q heads (the mma's 8 columns),
// so each key and value fragment read serves them all; the block's positions, its tree rows'
// cache rows and each warp's first rotated q are loaded while the chunk's staging is in flight
// (one barrier, no round trip after it); tree rows among the chunk's staged rows are read from
// shared memory by ldmatrix as the prefix is; the merge (attention_merge.cuh) reads each chunk's
// partials once, all 16 chunks of a context of 1024 in one round trip. (Slower when tried: an
// item a warp pair, a column group of two queries a warp quad; NOTES v49, v50.)
// The append inside: attention_append.cuh.
#include "attention_item.cuh"

#define MIN_BLOCKS 2  // blocks an SM (__launch_bounds__); kernels/attention.py sizes the grid by it

// At least MIN_BLOCKS blocks an SM (at most 128 registers at 2).
#define TREE_ATTENTION(HD)                                                                                   \
  extern "C" __global__ void __launch_bounds__(NWARPS * 32, MIN_BLOCKS) tree_attention_hd##HD(              \
      const bf16 *qkv, const long long *blk, const float *cos_t, const float *sin_t, bf16 *k_cache,         \
      bf16 *v_cache, float *part_ml, bf16 *part_acc, int *counters, bf16 *out, int T, int H, int KV,        \
      int V, int span, int R, int TQ, int append, int mergers, int by_position, float scale_log2) {         \
    extern __shared__ __align__(16) unsigned char smem[];                                                   \
    tree_attention_item<HD, OwnBlock>(smem, blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x, qkv, blk, cos_t, sin_t, \
                                      k_cache, v_cache, part_ml, part_acc, counters, out, T,                        \
                                      H, KV, V, span, R, TQ, append, mergers, by_position, scale_log2);      \
  }
TREE_ATTENTION(64)
TREE_ATTENTION(128)
