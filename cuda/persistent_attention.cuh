// The attention phases of the persistent kernel (cuda/persistent.cu includes this; NOTES v161, v185):
// Llama-3.2-1B's 32 q heads and 8 kv heads of 64, M <= 16 new tokens of a draft step's tree: token
// i at its RoPE position and cache row (tok_at, from the staged block), seeing the shared prefix
// (cache rows below tree0) and the tree rows its mask holds (bit j of masks[i]: row tree0 + j, its
// ancestors' and its own). A chain after P cached rows is the tree with tree0 = P, row and position
// P + i and rows P .. P + i seen. Its own layouts, which the host mirrors (persistent.py):
//   qkv tiles with RoPE pairs together: tile c < 160 is q or k head c / 4 (heads 32.. are k), its
//     dims d0 .. d0 + 7 and d0 + 32 .. (d0 = 8 (c % 4)); tiles 160.. are 16 rows of v each;
//   the caches k_cache, v_cache in the engine's layout [L][rows][KV][HD] (cache.py), a 64-row chunk
//     of one kv head paged by a TMA tensor map (persistent_pages.cuh) into 64 rows of 128 bytes with
//     the 128-byte swizzle: 16-byte unit u of row r sits at unit u ^ (r % 8), so 8 ldmatrix rows hit
//     distinct banks (kv_unit);
//   q after RoPE: qbuf [KV][QROWS][HD + 8], row tok * GQ + j for q head kv * GQ + j;
//   partials: part_ml [KV][chunks][QROWS][2] (the chunk's max, log2 units, and its sum of exp2),
//     part_o [KV][chunks][QROWS][HD] (unnormalized, fp32).
// Numerics as cuda/attention.cu's: q and k with RoPE in fp32 (rope.cuh's rope_pair) rounded once,
// fp32 scores, each softmax weight rounded to bf16 for the value product while the sums use fp32;
// a chunk's sums and the merge in chunk order (cache rows at fixed boundaries): a query's bits do
// not depend on M or on the other queries (they do on where its tree rows sit in the cache, unlike
// cuda/attention.cu's, which reduces by position: a draft's numerics do not bear on losslessness).
// (Included by cuda/persistent.cu after its shapes and the ring's traffic; rope.cuh before them.)
#include "staged.cuh"

#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)
#define KV_HEADS 8
#define Q_HEADS 32
#define HD 64
#define GQ (Q_HEADS / KV_HEADS)
#define CHUNK 64
#define QROWS ((MAX_M * GQ + 15) / 16 * 16)  // a kv head's q rows: M * GQ in tiles of 16 (a warp's)
#define Q_ROW ((HD + 8) * 2)                // 144 bytes: q's rows padded (8 ldmatrix rows, distinct banks)
#define KV_CHUNK_BYTES (CHUNK * HD * 2)     // one kv head's 64 rows of k (or v), swizzled: 8 KB
#define QBUF_BYTES (KV_HEADS * QROWS * Q_ROW)
#define ROPE_TILES (4 * (Q_HEADS + KV_HEADS))  // qkv tiles of q and k heads
#define MASK_WORDS 12                       // a token's tree mask: tree rows tree0 .. tree0 + 383

// The step's tree from the staged block (device memory: a graph replays it) into shared memory, by
// the whole thread block (it holds two block barriers): each token's position and cache row
// (tok_at); tree0, token 0's prefix (the step's shared prefix) and first_new, the lowest row the
// step writes (tree_info; padding tokens write the scratch row, the cache's last); token i's mask,
// bit j set when one of its visible rows is its prefix + j (rows past MASK_WORDS words: the drafter
// keeps trees smaller). persistent.kernel_inputs is its torch twin.
__device__ __forceinline__ void stage_tree(const long long* __restrict__ block, int block_cols, int M,
                                           unsigned* masks, int (*tok_at)[MAX_M], int* tree_info, int* lowest_row) {
  for (int i = threadIdx.x; i < M * MASK_WORDS; i += blockDim.x) masks[i] = 0u;
  if (threadIdx.x == 0) *lowest_row = 0x7fffffff;
  __syncthreads();
  if (threadIdx.x < M) {
    const long long* tok = block + (size_t)threadIdx.x * block_cols;
    tok_at[0][threadIdx.x] = (int)tok[COL_POSITION];
    tok_at[1][threadIdx.x] = (int)tok[COL_ROW];
    atomicMin(lowest_row, (int)tok[COL_ROW]);
  }
  for (int e = threadIdx.x; e < M * (block_cols - COL_VISIBLE); e += blockDim.x) {
    const long long* tok = block + (size_t)(e / (block_cols - COL_VISIBLE)) * block_cols;
    const long long j = tok[COL_VISIBLE + e % (block_cols - COL_VISIBLE)] - tok[COL_PREFIX];
    if (j >= 0 && j < 32 * MASK_WORDS)
      atomicOr(&masks[e / (block_cols - COL_VISIBLE) * MASK_WORDS + (int)(j >> 5)], 1u << (j & 31));
  }
  __syncthreads();
  if (threadIdx.x == 0) tree_info[0] = (int)block[COL_PREFIX], tree_info[1] = *lowest_row;
}

// Row r (0..15) of qkv's tile c in the attention's layout.
__device__ __forceinline__ int qkv_tile_row(int c, int r) {
  if (c < ROPE_TILES) return HD * (c / 4) + 8 * (c % 4) + (r < 8 ? r : r + 24);
  return HD * (Q_HEADS + KV_HEADS) + 16 * (c - ROPE_TILES) + r;
}

// What qkv's epilogue does with the attention for token tok (below M) of tile c's rows g and g + 8
// (xg, xg8: bf16 outputs): RoPE at position pos on the pair (row g, row g + 8) = (dim d, d + 32) of
// a q or k head; q into qbuf, k and v into the caches at row `row`.
__device__ __forceinline__ void qkv_to_attention(int c, int g, int tok, bf16 xg, bf16 xg8, int pos, int row,
                                                 const float* cos_t, const float* sin_t, bf16* qbuf,
                                                 bf16* k_cache, bf16* v_cache) {
  if (c < ROPE_TILES) {
    const int head = c / 4, d = 8 * (c % 4) + g;
    const float* cs = cos_t + (size_t)pos * HD;
    const float* sn = sin_t + (size_t)pos * HD;
    float y1, y2;
    rope_pair(__bfloat162float(xg), __bfloat162float(xg8), cs[d], sn[d], cs[d + 32], sn[d + 32], y1, y2);
    bf16* dst = head < Q_HEADS
                    ? qbuf + ((size_t)(head / GQ) * QROWS + tok * GQ + head % GQ) * (HD + 8)
                    : k_cache + ((size_t)row * KV_HEADS + head - Q_HEADS) * HD;
    dst[d] = __float2bfloat16_rn(y1);
    dst[d + 32] = __float2bfloat16_rn(y2);
  } else {
    const int v = 16 * (c - ROPE_TILES) + g;  // v's rows v and v + 8: kv head v / 64
    v_cache[(size_t)row * KV_HEADS * HD + v] = xg;  // rows of v: kv head v / 64, dim v % 64
    v_cache[(size_t)row * KV_HEADS * HD + v + 8] = xg8;
  }
}

// The shared-window address of 16-byte unit u (dims 8u .. 8u + 7) of row r in a swizzled chunk tile
// at `tile` (1024-byte aligned: the swizzle's pattern repeats every 8 rows of 128 bytes).
__device__ __forceinline__ unsigned kv_unit(unsigned tile, int r, int u) { return tile + r * 128 + ((u ^ (r & 7)) << 4); }

__device__ __forceinline__ void ldmatrix_x4_trans_at(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
}

// Item (kv head, chunk c), a warp's part: q rows 16 rt .. + 15 against the chunk's 64 positions, all
// in registers: scores (4 position groups of 16, two n8 tiles each), the rows' maxima and sums across
// the 4 lanes of a row, the weights as the value product's A fragments, the outputs summed over the
// groups in the mma's k order. (Eight warps of 16 positions each, sharing maxima, sums and outputs
// through shared memory, took ~1.5 us for this: NOTES v167, v169.) kv: the chunk's k tile then its
// v tile in shared memory (swizzled, 1024-byte aligned: kv_unit); q: the kv head's QROWS q rows;
// masks: the tokens' tree masks [MAX_M][MASK_WORDS] in shared memory. Writes the chunk's partials
// of those rows. The caller (persistent.cu's phase S) gives warps to items and frees the slots.
// Marks 2, 3, 4 (--timeline, warp 0): maxima known, outputs summed, partials written.
__device__ __forceinline__ void attention_item(int rt, unsigned kv, unsigned q, int c, int tree0, const unsigned* masks,
                                               float scale_log2, float* part_ml, float* part_o,
                                               unsigned long long* marks) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float sc[4][2][4];  // scores: position group pg, its n8 tile nt, the mma's 4 values
#pragma unroll
  for (int pg = 0; pg < 4; ++pg)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) sc[pg][nt][0] = sc[pg][nt][1] = sc[pg][nt][2] = sc[pg][nt][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) {
    unsigned a[4];
    ldmatrix_x4_at(a, q + (16 * rt + (lane & 15)) * Q_ROW + 2 * (16 * ks + 8 * (lane >> 4)));
#pragma unroll
    for (int pg = 0; pg < 4; ++pg) {
      unsigned b[4];
      ldmatrix_x4_at(b, kv_unit(kv, 16 * pg + 8 * (lane >> 4) + (lane & 7), 2 * ks + ((lane >> 3) & 1)));
      mma_16816(sc[pg][0], a[0], a[1], a[2], a[3], b[0], b[1]);
      mma_16816(sc[pg][1], a[0], a[1], a[2], a[3], b[2], b[3]);
    }
  }
  // Scale to log2 units and mask: row 16 rt + g (+ 8 for e >= 2) is token row / GQ (rows past M:
  // M - 1's mask, dropped); cache row 64c + .. is seen below tree0, else by the token's mask.
  float m[2] = {NEG_INF, NEG_INF};
#pragma unroll
  for (int pg = 0; pg < 4; ++pg)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 16 * rt + g + 8 * (e >> 1), j = CHUNK * c + 16 * pg + 8 * nt + 2 * t + (e & 1) - tree0;
        const unsigned* mask = masks + min(row / GQ, MAX_M - 1) * MASK_WORDS;
        const bool seen = j < 0 || (j < 32 * MASK_WORDS && (mask[j >> 5] >> (j & 31)) & 1u);
        const float v = seen ? sc[pg][nt][e] * scale_log2 : NEG_INF;
        sc[pg][nt][e] = v;
        m[e >> 1] = fmaxf(m[e >> 1], v);
      }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m[h] = fmaxf(m[h], __shfl_xor_sync(0xffffffffu, m[h], 1));
    m[h] = fmaxf(m[h], __shfl_xor_sync(0xffffffffu, m[h], 2));
  }
  mark(marks, 2);
  // The weights, rounded to bf16 for the value product (A fragments: group pg's positions are its
  // k), their sums in fp32; then the outputs, group after group in the mma's accumulators.
  float l[2] = {0.f, 0.f}, o[HD / 8][4];
#pragma unroll
  for (int dt = 0; dt < HD / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
#pragma unroll
  for (int pg = 0; pg < 4; ++pg) {
    unsigned p[4];  // p[0]: row g, positions 0..7 of the group (k 2t); p[1]: row g + 8; p[2], p[3]: 8..15
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      float w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        w[e] = m[e >> 1] == NEG_INF ? 0.f : exp2f(sc[pg][nt][e] - m[e >> 1]);
        l[e >> 1] += w[e];
      }
      p[2 * nt] = pack2(__float2bfloat16_rn(w[0]), __float2bfloat16_rn(w[1]));
      p[2 * nt + 1] = pack2(__float2bfloat16_rn(w[2]), __float2bfloat16_rn(w[3]));
    }
#pragma unroll
    for (int dp = 0; dp < HD / 16; ++dp) {  // dim tiles 2 dp, 2 dp + 1: v rows (positions) transposed
      unsigned b[4];
      ldmatrix_x4_trans_at(b, kv_unit(kv + KV_CHUNK_BYTES, 16 * pg + (lane & 7) + 8 * ((lane >> 3) & 1), 2 * dp + (lane >> 4)));
      mma_16816(o[2 * dp], p[0], p[1], p[2], p[3], b[0], b[1]);
      mma_16816(o[2 * dp + 1], p[0], p[1], p[2], p[3], b[2], b[3]);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  mark(marks, 3);
  // The chunk's partials: rows 16 rt + g and + 8, dims 8 dt + 2t, + 1.
#pragma unroll
  for (int dt = 0; dt < HD / 8; ++dt) {
    *reinterpret_cast<float2*>(part_o + (16 * rt + g) * HD + 8 * dt + 2 * t) = make_float2(o[dt][0], o[dt][1]);
    *reinterpret_cast<float2*>(part_o + (16 * rt + g + 8) * HD + 8 * dt + 2 * t) = make_float2(o[dt][2], o[dt][3]);
  }
  if (t == 0) {
    *reinterpret_cast<float2*>(part_ml + 2 * (16 * rt + g)) = make_float2(m[0], l[0]);
    *reinterpret_cast<float2*>(part_ml + 2 * (16 * rt + g + 8)) = make_float2(m[1], l[1]);
  }
  mark(marks, 4);
}

// One q row of a kv head merged over its chunks (part_ml, part_o: that kv head's) by a warp: ->
// result, dims 2 lane and 2 lane + 1 of the row's output. Every load of a pass over 32 chunks goes
// out before anything waits on one: lane c's chunk max and sum, and all N chunks' outputs (chunk
// indices past the last clamped to it, their weights 0), so up to N chunks cost one L2 round trip
// (v172. Loads under a predicate went out one after another: v164). The
// weights' sum is a fixed shuffle tree and the outputs add in chunk order (the order depends on the
// chunk count only: a row's bits do not depend on M or on its neighbours).
// 1024-byte aligned (the 128-byte swizzle's pattern) inside a ring slot: where an attention item's
// k tile lands, its v tile after it (2 x 8 KB; a slot has 33 KB; persistent_pages.cuh copies them there).
__device__ __forceinline__ unsigned chunk_tile(unsigned slot) { return (slot + 1023) & ~1023u; }

// Phase S's q (thread 0): the rows of the kv heads this block's items read (items in order: heads
// ascend) from qbuf into q_smem, signalling xbar.
__device__ __forceinline__ void copy_q(unsigned q_smem, const bf16* qbuf, int b, int G, int chunks, int items,
                                       unsigned xbar) {
  const int heads = (b + (items - 1) * G) / chunks - b / chunks + 1;
  fence_async_shared();
  mbar_expect(xbar, heads * QROWS * Q_ROW);
  for (int kh = b / chunks; kh < b / chunks + heads; ++kh)
    bulk_copy(q_smem + kh * QROWS * Q_ROW, qbuf + (size_t)kh * QROWS * (HD + 8), QROWS * Q_ROW, xbar);
}

// Phase S's items (kv head, chunk) b, b + G, .. on the compute warps, their pages the ring's next
// (q: the next page to compute, advanced past them), two items at a time, warps 0-3 the first and
// 4-7 the second (a warp a tile of 16 q rows), so a block given two items (more items than blocks:
// spans past 1024 rows) takes about one item's time (v189). Every warp waits for both pages before
// it frees them, so a slot's empty barrier never counts an arrival meant for its next use.
__device__ __forceinline__ void attention_items(int items, int b, int G, int chunks, unsigned ring, unsigned bar0,
                                                unsigned empty0, unsigned q_smem, int& q, int tree0,
                                                const unsigned* masks, float scale_log2, float* part_ml,
                                                float* part_o, unsigned long long* marks) {
  static_assert(QROWS / 16 <= WARPS / 2, "an item's q row tiles fit half the warps");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int i = 0; i < items; i += 2) {
    const int pair = min(2, items - i), mine = warp / (WARPS / 2), rt = warp % (WARPS / 2);
    for (int k = 0; k < pair; ++k) mbar_wait(bar0 + 8 * ((q + k) % DEPTH), ((q + k) / DEPTH) & 1);
    if (i == 0) mark(marks, 1);
    if (mine < pair && rt < QROWS / 16) {
      const int it = b + (i + mine) * G, kh = it / chunks, c = it % chunks;
      attention_item(rt, chunk_tile(ring + (q + mine) % DEPTH * PAGE_BYTES), q_smem + kh * QROWS * Q_ROW, c, tree0,
                     masks, scale_log2, part_ml + ((size_t)kh * chunks + c) * QROWS * 2,
                     part_o + ((size_t)kh * chunks + c) * QROWS * HD, i == 0 && mine == 0 ? marks : nullptr);
    }
    __syncwarp();
    if (lane == 0)
      for (int k = 0; k < pair; ++k) mbar_arrive(empty0 + 8 * ((q + k) % DEPTH));  // the producer's next copies
    q += pair;
  }
}

template <int N>  // chunks a pass: 16 where chunks <= 16 (no duplicate loads), else 32
__device__ __forceinline__ void merge_row(const float* part_ml, const float* part_o, int chunks, int row,
                                          float (&result)[2], unsigned long long* marks) {
  const int lane = threadIdx.x & 31;
  auto ml_of = [&](int c) { return *reinterpret_cast<const float2*>(part_ml + (size_t)min(c, chunks - 1) * QROWS * 2 + 2 * row); };
  auto o_of = [&](int c) {
    return *reinterpret_cast<const float2*>(part_o + ((size_t)min(c, chunks - 1) * QROWS + row) * HD + 2 * lane);
  };
  float2 oc[N], ml = ml_of(lane);
#pragma unroll
  for (int c = 0; c < N; ++c) oc[c] = o_of(c);
  float m = lane < chunks ? ml.x : NEG_INF;
  for (int c = lane + 32; c < chunks; c += 32) m = fmaxf(m, ml_of(c).x);  // contexts from 2048 on
#pragma unroll
  for (int x = 16; x > 0; x >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, x));
  mark(marks, 0);
  float total = 0.f, o0 = 0.f, o1 = 0.f;
  for (int c0 = 0; c0 < chunks; c0 += N) {
    if (c0 > 0) {
      ml = ml_of(c0 + lane);
#pragma unroll
      for (int c = 0; c < N; ++c) oc[c] = o_of(c0 + c);
    }
    float w = 0.f, weighted = 0.f;  // lane c's chunk c0 + c (lanes N.. none)
    if (lane < N && c0 + lane < chunks) {
      w = ml.x == NEG_INF ? 0.f : exp2f(ml.x - m);
      weighted = w * ml.y;
    }
#pragma unroll
    for (int x = 16; x > 0; x >>= 1) weighted += __shfl_xor_sync(0xffffffffu, weighted, x);
    total += weighted;
#pragma unroll
    for (int c = 0; c < N; ++c) {
      const float wc = __shfl_sync(0xffffffffu, w, c);
      if (c0 + c < chunks) o0 += wc * oc[c].x, o1 += wc * oc[c].y;
    }
  }
  result[0] = o0 / total;
  result[1] = o1 / total;
}

// Phase R: warp w of block b merges q rows (kv head, row) = b + G w, + 8G, .. (spread over every
// block, at most two warps a block: eight on one SM pulled ~67 KB of partials at once, v172); row
// tok GQ + j is token tok's q head kh GQ + j: its columns (kh GQ + j) HD .. of attn, a layer's o input
// (laid out as attn_at says). Marks 0, 1, 2 (--timeline: thread 0's row):
// its chunks' maxima read, merged, written.
__device__ __forceinline__ void merge_phase(const float* part_ml, const float* part_o, int chunks, int M, bf16* attn,
                                            Rows attn_at, unsigned long long* marks) {
  const int lane = threadIdx.x & 31, warps = WARPS;  // the compute warps
  for (int item = blockIdx.x + gridDim.x * (threadIdx.x >> 5); item < KV_HEADS * QROWS; item += gridDim.x * warps) {
    const int kh = item / QROWS, row = item % QROWS, tok = row / GQ;
    if (tok >= M) continue;
    float r[2];
    const float* ml = part_ml + (size_t)kh * chunks * QROWS * 2;
    const float* o = part_o + (size_t)kh * chunks * QROWS * HD;
    if (chunks <= 16) merge_row<16>(ml, o, chunks, row, r, marks);
    else merge_row<32>(ml, o, chunks, row, r, marks);
    mark(marks, 1);
    const int col = (kh * GQ + row % GQ) * HD + 2 * lane;
    bf16* at = attn + attn_at.at(tok, col);
    at[0] = __float2bfloat16_rn(r[0]);
    at[1] = __float2bfloat16_rn(r[1]);
    mark(marks, 2);
  }
}
