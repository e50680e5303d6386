// persistent.cu's target build (TARGET 1, with PLAIN_IO: Llama-3-8B's shapes): a verification's
// attention as the fused forward's own (attention_item.cuh: keys reduced by position, so a token's
// bits do not depend on where its ancestors sit and every decoder stays exact), as two phases:
//   T: the items (chunk c, kv head kh) b, b + G, .. of the forward's one query group (M <= TQMAX),
//      each appending the step's new keys and values of its kv head (its rows' writer: the item
//      whose chunk holds the row) and writing its partials;
//   M: after T's grid barrier, the (kv head, part) merges of attention_merge.cuh in chunk order
//      into attn, plain rows [M][T_HEADS * T_HD] (o_proj's x).
// Included by persistent.cu after its shapes and ring (compute_sync), before persistent_attention.cuh
// (whose HD and head counts are the draft's, defined after this text).
#include "attention_item.cuh"

#define T_HD 128     // the target's head_dim
#define T_HEADS 32   // q heads
#define T_KV 8       // kv heads
#define T_ITEM_BYTES (Smem<T_HD>::BYTES + 2 * MAX_M * Smem<T_HD>::ROW * 2)  // an item's shared memory, the append's rows too
static_assert(TARGET_BYTES >= T_ITEM_BYTES, "persistent.py's target_bytes covers an item");
static_assert(MAX_M <= TQMAX && MAX_M <= APPEND_MAX, "the forward's tokens are one query group, appended by the items");

// persistent.cu's compute warps as an item's block: the named barrier over them (the producer warp
// has left), no PDL (one launch), no merge (phase M's).
struct ComputeWarps {
  static constexpr bool merges = false;
  static __device__ __forceinline__ unsigned threads() { return WARPS * 32; }
  static __device__ __forceinline__ void sync() { compute_sync(); }
  static __device__ __forceinline__ void wait() {}
  static __device__ __forceinline__ void trigger() {}
};

// Phase T of one layer, a function of its own (inlined, the attention's registers beside the GEMM
// phases' spilled ~40 bytes at the 9 warps' 168; alone ~20) (qkv [M][QKV] plain; the layer's caches [R][T_KV][T_HD]; partials
// part_ml [T_KV][nchunks][M * GQ][2] fp32, part_acc [T_KV][nchunks][M * GQ][T_HD] bf16).
__device__ __noinline__ void target_attention_phase(unsigned char* smem, int b, int G, const bf16* qkv,
                                                       const long long* block, int block_cols, const float* cos_t,
                                                       const float* sin_t, bf16* k_cache, bf16* v_cache,
                                                       float* part_ml, bf16* part_acc, int M, int span, int R,
                                                       float scale_log2) {
  const int nchunks = (span + CHUNK - 1) / CHUNK;
  for (int item = b; item < T_KV * nchunks; item += G) {
    tree_attention_item<T_HD, ComputeWarps>(smem, item % nchunks, item / nchunks, 0, nchunks, qkv, block, cos_t,
                                            sin_t, k_cache, v_cache, part_ml, part_acc, nullptr, nullptr, M,
                                            T_HEADS, T_KV, block_cols - COL_VISIBLE, span, R, M, 1, 1, 0, scale_log2);
    compute_sync();  // every warp done with the tile before the next item stages its own
  }
}

// Phase M of one layer: (kv head, part) items b, b + G, .. each merge_chunks' part `part` of
// `parts` of that kv head's M * GQ rows (parts: as many 256-thread slices as the rows' 16-byte
// pieces need, at most the blocks a kv head has). positions: shared, MAX_M ints.
__device__ __forceinline__ void target_merge_phase(int b, int G, const float* part_ml, const bf16* part_acc,
                                                   bf16* attn, const long long* block, int block_cols, int M,
                                                   int span, int* positions) {
  constexpr int GQ_T = T_HEADS / T_KV, D8 = T_HD / 8;
  const int nchunks = (span + CHUNK - 1) / CHUNK, rows = M * GQ_T;
  const int parts = max(1, min(G / T_KV, (rows * D8 + WARPS * 32 - 1) / (WARPS * 32)));
  if (threadIdx.x < M) positions[threadIdx.x] = (int)block[(size_t)threadIdx.x * block_cols + COL_POSITION];
  compute_sync();
  for (int item = b; item < T_KV * parts; item += G)
    merge_chunks<T_HD, CHUNK>(part_ml, part_acc, attn, positions, 0, M, GQ_T, item / parts, nchunks, rows, T_HEADS,
                              item % parts, parts, WARPS * 32);
}
static_assert(QKV == (T_HEADS + 2 * T_KV) * T_HD && HID == T_HEADS * T_HD, "the target's shapes: q, k, v heads of T_HD");
