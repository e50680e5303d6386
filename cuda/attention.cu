// Tree attention with RoPE inside and an in-kernel split-KV combine; and the cache append.
// Python side and torch references: swiftspec_core/kernels/attention.py.
//
// Row invariance: a query's bits depend only on its q, its position p and the keys/values at
// positions 0..p. Keys are reduced in position order: positions split into chunks of CHUNK at
// fixed boundaries (one block per chunk, kv head and query group), a chunk into 4 tiles of 16
// positions (one warp each); the scores of a (position, head) come from tensor-core products over
// the head dimension in a fixed order, the chunk's max a head is the largest of its tiles' maxima,
// each tile sums its weights and its values (one tensor-core product) and the chunk's sums are the
// tiles' added in tile order; the chunks' partials are merged in chunk order (batches of 8 chunks
// under a running max) by the last block of the (kv head, group) to finish. An mma's output element
// depends only on its own row of A and column of B, so nothing depends on T, the query's index,
// the other queries or heads sharing its mma, the cache rows its tree keys sit at (a fragment
// holds the same values whichever memory it was loaded from), or the span (the grid size).
// Numerics: q with RoPE in fp32 is rounded once to bf16 for the tensor cores (as the reference
// does), scores are fp32, a position's softmax weight is rounded to bf16 for the value product
// while the sum that normalizes uses the fp32 weights; a chunk's output, normalized by its sum,
// is kept in bf16 for the merge (its max and sum in fp32).
// Speed: the 8 columns of an mma are (query, head) pairs, two queries of Llama's G = 4, so a block
// reads its K and V tiles once per 8 columns (NOTES v50: one query a warp re-read them per
// query, and shared memory bounded the items); a tile's chain is 8 + 8 mma's; the block's
// positions are loaded with the chunk's staging; the merge reads each chunk's partials once.
#include "common.cuh"
#include "mma.cuh"

#define CHUNK 64      // positions a block reduces; kernels/attention.py's CHUNK says the same
#define NWARPS 8      // warps a block (256 threads)
#define NQUADS (NWARPS / 4)  // warp quads a block: one column group each at a time
#define TQMAX 32      // queries a block at most (their positions and prefixes sit in shared memory)
#define MIN_BLOCKS 2  // blocks an SM (__launch_bounds__); kernels/attention.py sizes the grid by it
#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)
#define KPAD 8        // bf16 padding a tile row (16 bytes): 8 rows' 16-byte reads hit distinct banks
#define HN 8          // (query, head) columns a group computes together (the mma's n = 8 columns)
#define PPAD 8        // bf16 padding a row of a quad's weight tile

// Staged block columns (graphs.py): token, position, cache row, prefix length, visible rows.
#define COL_POSITION 1
#define COL_ROW 2
#define COL_PREFIX 3
#define COL_VISIBLE 4

static_assert(CHUNK == 64, "four 16-position tiles a chunk");

// fp32 RoPE of one pair (i, i + half) in rotate_half's layout, each product and sum rounded as
// torch does (no fused multiply-add), so the cache append matches its reference bitwise.
__device__ __forceinline__ void rope_pair(float x1, float x2, float c1, float s1, float c2, float s2,
                                          float &y1, float &y2) {
  y1 = __fadd_rn(__fmul_rn(x1, c1), -__fmul_rn(x2, s1));
  y2 = __fadd_rn(__fmul_rn(x2, c2), __fmul_rn(x1, s2));
}

// Cache row holding position j of a query with prefix n and visible rows vis[0..V).
__device__ __forceinline__ long long key_row(const long long *vis, int V, int n, int j, int R) {
  long long r = j < n ? (long long)j : vis[min(j - n, V - 1)];
  return r < 0 ? 0 : (r >= R ? R - 1 : r);  // out-of-range rows: wrong but never a fault
}

// grid (T), block 256: k with RoPE at positions[t] and v into row rows[t] of the caches.
extern "C" __global__ void append_kv(const bf16 *__restrict__ qkv, const long long *__restrict__ positions,
                                     const long long *__restrict__ rows, const float *__restrict__ cos_t,
                                     const float *__restrict__ sin_t, bf16 *__restrict__ k_cache,
                                     bf16 *__restrict__ v_cache, int H, int KV, int hd, int R) {
  pdl_start();
  const int t = blockIdx.x, half = hd / 2;
  const long long stride = (long long)(H + 2 * KV) * hd;
  const bf16 *k = qkv + t * stride + (long long)H * hd, *v = k + (long long)KV * hd;
  long long row = rows[t];
  if (row < 0 || row >= R) return;  // never a fault; the Python side states the contract
  const float *c = cos_t + positions[t] * hd, *s = sin_t + positions[t] * hd;
  bf16 *kd = k_cache + row * KV * hd, *vd = v_cache + row * KV * hd;
  for (int e = threadIdx.x; e < KV * half; e += blockDim.x) {
    const int head = e / half, i = e % half, a = head * hd + i, b = a + half;
    float y1, y2;
    rope_pair(__bfloat162float(k[a]), __bfloat162float(k[b]), c[i], s[i], c[i + half], s[i + half], y1, y2);
    kd[a] = __float2bfloat16_rn(y1);
    kd[b] = __float2bfloat16_rn(y2);
    vd[a] = v[a];
    vd[b] = v[b];
  }
}

// Shared memory of tree_attention (dynamic; kernels/attention.py sizes it by the same formula):
// the chunk's K and V rows [CHUNK][HD + KPAD] bf16 as the cache holds them, then per warp quad
// its column group's q [HN][HD + KPAD] bf16 (RoPE applied) and softmax weights [HN][CHUNK + PPAD]
// bf16, each tile's maxima and sums [4][HN] fp32, each tile's value sums [4][KS][4][32] fp32.
template <int HD>
struct Smem {
  static constexpr int ROW = HD + KPAD, KS = HD / 16;                  // bf16 elements; dim tiles
  static constexpr int V_OFF = CHUNK * ROW * 2, QUAD_OFF = 2 * V_OFF;  // bytes
  static constexpr int QUAD_BYTES = 2 * HN * ROW + 2 * HN * (CHUNK + PPAD) + 4 * (2 * 4 * HN + 4 * KS * 4 * 32);
  static constexpr int BYTES = QUAD_OFF + NQUADS * QUAD_BYTES;
  static_assert(QUAD_BYTES % 16 == 0, "every quad's q tile 16-byte aligned");
};

__device__ __forceinline__ unsigned ld32(const bf16 *p) { return *reinterpret_cast<const unsigned *>(p); }

// Two bf16 (a in the low half, b in the high), as a fragment register holds them.
__device__ __forceinline__ unsigned pack2(bf16 a, bf16 b) {
  return (unsigned)__bfloat16_as_ushort(a) | ((unsigned)__bfloat16_as_ushort(b) << 16);
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// Four 8x8 bf16 matrices from shared memory (lane l gives the row address of matrix l / 8, row
// l % 8): r[i] of lane (g, t) = elements (g, 2t), (g, 2t + 1) of matrix i; .trans: (2t, g), (2t + 1, g).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16 *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16 *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}

// PG consecutive fp32 (PG = 2 or 4) as one vector load.
template <int PG>
__device__ __forceinline__ void load_floats(const float *p, float (&x)[PG]) {
  if constexpr (PG == 4) {
    const float4 v = *reinterpret_cast<const float4 *>(p);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
    const float2 v = *reinterpret_cast<const float2 *>(p);
    x[0] = v.x, x[1] = v.y;
  }
}

// One block: chunk blockIdx.x (positions [c0, c0 + CHUNK)) of kv head blockIdx.y for the
// queries t in group blockIdx.z (queries [z * TQ, z * TQ + TQ)). The block's (query, head) pairs
// are dealt into column groups of HN, the mma's 8 columns: QPC = HN / G queries with all their G
// heads a group where G divides HN (Llama's G = 4: two queries), else one query's heads
// [hp HN, hp HN + HN) (heads past G repeat G - 1). Warp quad k takes groups k, k + NQUADS, ...;
// its warp i the chunk's position tile i (16 positions), so one K and V tile read serves every
// query of the group. In a tile (lane (g, t) = (lane / 4, lane % 4)):
//   scores S[pos][col] = K . q^T: mma A = K rows (16 positions x 16 dims), B = q^T (16 dims x 8
//     columns); d of lane (g, t): positions g, g + 8 of the tile, columns 2t, 2t + 1;
//   output O^T[dim][col] = V^T . P^T: mma A = V^T (16 dims x 16 positions), B = P^T (16 positions
//     x 8 columns); d of lane (g, t): dims g, g + 8 of the tile, columns 2t, 2t + 1.
// A fragments come from the staged tile by ldmatrix where the tile is staged prefix rows of every
// query in the group, else lane by lane through each position's row pointer, one mma a query of
// the group, each column kept from its own query's (the same registers either way: a column's
// bits never depend on the other columns). A column's chunk max is the largest of its 4 tiles'
// maxima, its sums (weights, values) are tile 0's + tile 1's + tile 2's + tile 3's. Partials go to
// part_ml [KV, nchunks, Q, 2] (the chunk's max score in log2 units, its sum of exp2(score - max))
// and part_o [KV, nchunks, Q, HD] (the chunk's output, normalized by its sum, in bf16: FlashInfer's
// merge states keep theirs in the output dtype too) (Q = T * G query rows, row t * G + g); the last
// block of the (kv head, group) to finish merges them into out [T, H * HD] and resets its counter.
template <int HD>
__device__ void tree_attention_body(const bf16 *__restrict__ qkv, const long long *__restrict__ blk,
                                    const float *__restrict__ cos_t, const float *__restrict__ sin_t,
                                    const bf16 *__restrict__ k_cache, const bf16 *__restrict__ v_cache,
                                    float *__restrict__ part_ml, bf16 *__restrict__ part_o,
                                    int *__restrict__ counters, bf16 *__restrict__ out, int T, int H, int KV,
                                    int V, int span, int R, int TQ, float scale_log2) {
  constexpr int HALF = HD / 2, D8 = HD / 8, KS = HD / 16;  // KS: 16-dim steps (and 16-dim tiles)
  static_assert(HD == 64 || HD == 128, "head_dim 64 or 128");
  using S = Smem<HD>;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *k_tile = reinterpret_cast<bf16 *>(smem), *v_tile = reinterpret_cast<bf16 *>(smem + S::V_OFF);
  __shared__ int q_pos[TQMAX], q_prefix[TQMAX];  // position, prefix length of query t0 + i
  __shared__ int is_last;

  pdl_start();  // before the staging: the kernel before (append_kv) writes cache rows
  const int c = blockIdx.x, kh = blockIdx.y, nchunks = gridDim.x, G = H / KV, Q = T * G;
  const int t0 = blockIdx.z * TQ, t1 = min(T, t0 + TQ);  // this block's queries [t0, t1)
  if (TQ > TQMAX) return;  // the Python side never launches it so
  const int c0 = c * CHUNK, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const int cols = COL_VISIBLE + V;
  const long long stride = (long long)(H + 2 * KV) * HD;

  // The block's query positions and prefixes into registers, then the chunk's cache rows below
  // the span into the tile (their loads in flight together, before any shared store waits on
  // one): rows past a query's prefix are staged too and never read as its keys (those are tree rows).
  const bool has_query = threadIdx.x < t1 - t0;  // t1 - t0 <= TQMAX < blockDim.x
  const long long *my_blk = blk + (long long)(t0 + threadIdx.x) * cols;
  const int my_pos = has_query ? (int)my_blk[COL_POSITION] : 0, my_prefix = has_query ? (int)my_blk[COL_PREFIX] : 0;
  const int tile_rows = max(0, min(span - c0, CHUNK));
#pragma unroll 4
  for (int e = threadIdx.x; e < tile_rows * D8; e += blockDim.x) {
    const int r = e / D8, d = (e % D8) * 8;
    const long long src = ((long long)(c0 + r) * KV + kh) * HD + d;
    *reinterpret_cast<uint4 *>(k_tile + r * S::ROW + d) = *reinterpret_cast<const uint4 *>(k_cache + src);
    *reinterpret_cast<uint4 *>(v_tile + r * S::ROW + d) = *reinterpret_cast<const uint4 *>(v_cache + src);
  }
  if (has_query) {
    q_pos[threadIdx.x] = my_pos;
    q_prefix[threadIdx.x] = my_prefix;
  }
  __syncthreads();

  // Column groups: QPC queries a group (all their heads), or one query's HN heads a pass.
  const int qpc = G <= HN && HN % G == 0 ? HN / G : 1, passes = qpc > 1 ? 1 : (G + HN - 1) / HN;
  const int groups = qpc > 1 ? (t1 - t0 + qpc - 1) / qpc : (t1 - t0) * passes;
  // Column col of group grp: its query (clamped into the block: a column past the last query
  // computes a copy of it and is never stored), its head, and whether it is stored.
  auto column_query = [&](int grp, int col) {
    return min(t1 - 1, t0 + (qpc > 1 ? grp * qpc + col / G : grp / passes));
  };
  auto column_head = [&](int grp, int col) { return qpc > 1 ? col % G : min((grp % passes) * HN + col, G - 1); };
  auto column_stored = [&](int grp, int col) {
    return qpc > 1 ? t0 + grp * qpc + col / G < t1 : (grp % passes) * HN + col < G;
  };
  // The group's j-th query (j < QPC; one a group when QPC is 1).
  auto group_query = [&](int grp, int j) { return min(t1 - 1, t0 + (qpc > 1 ? grp * qpc + j : grp / passes)); };

  const int quad = warp / 4, mt = warp % 4;  // this warp's quad, and its position tile in the chunk
  unsigned char *quad_smem = smem + S::QUAD_OFF + quad * S::QUAD_BYTES;
  bf16 *qw = reinterpret_cast<bf16 *>(quad_smem);                      // [HN][ROW]
  bf16 *pw = qw + HN * S::ROW;                                        // [HN][CHUNK + PPAD]
  float *x_max = reinterpret_cast<float *>(pw + HN * (CHUNK + PPAD));  // [4][HN]
  float *x_sum = x_max + 4 * HN;                                      // [4][HN]
  float *x_acc = x_sum + 4 * HN;                                      // [4][KS][4][32]
  auto quad_sync = [&]() { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + quad) : "memory"); };

  for (int grp = quad; grp < groups; grp += NQUADS) {
    // The group's span of queries: the smallest prefix (tiles below it are staged for all), the
    // furthest end, and whether any query reaches this chunk (quad-uniform).
    int min_n = 1 << 30, max_end = 0;
    for (int j = 0; j < qpc; ++j) {
      const int t = group_query(grp, j) - t0;
      min_n = min(min_n, q_prefix[t]);
      max_end = max(max_end, min(q_pos[t] + 1, c0 + CHUNK));
    }
    if (max_end <= c0) continue;  // the chunk is past every query of the group: never read

    // The group's 8 columns' q with RoPE at their queries' positions in fp32, rounded once to
    // bf16: warp i of the quad columns 2i, 2i + 1, a lane PG pairs of one column, every load a
    // vector and all issued before the first is used.
    {
      constexpr int PG = HD / 32;
      const int col = 2 * mt + lane / 16, i0 = (lane % 16) * PG, t = column_query(grp, col);
      const int p = q_pos[t - t0];
      const bf16 *q = qkv + t * stride + ((long long)kh * G + column_head(grp, col)) * HD;
      float c1[PG], s1[PG], c2[PG], s2[PG];
      load_floats<PG>(cos_t + (long long)p * HD + i0, c1);
      load_floats<PG>(sin_t + (long long)p * HD + i0, s1);
      load_floats<PG>(cos_t + (long long)p * HD + i0 + HALF, c2);
      load_floats<PG>(sin_t + (long long)p * HD + i0 + HALF, s2);
      bf16 x1[PG], x2[PG], y1[PG], y2[PG];
#pragma unroll
      for (int j = 0; j < PG; ++j) x1[j] = q[i0 + j], x2[j] = q[i0 + HALF + j];
#pragma unroll
      for (int j = 0; j < PG; ++j) {
        float a, b;
        rope_pair(__bfloat162float(x1[j]), __bfloat162float(x2[j]), c1[j], s1[j], c2[j], s2[j], a, b);
        y1[j] = __float2bfloat16_rn(a);
        y2[j] = __float2bfloat16_rn(b);
      }
#pragma unroll
      for (int j = 0; j < PG; ++j) qw[col * S::ROW + i0 + j] = y1[j], qw[col * S::ROW + i0 + HALF + j] = y2[j];
    }

    // A lane's two columns 2t, 2t + 1: their queries' ends in this chunk.
    int end2[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int t = column_query(grp, 2 * tq + h) - t0;
      end2[h] = min(q_pos[t] + 1, c0 + CHUNK);
    }
    // Row pointers of positions c0 + r for query t: the staged tile below its prefix, its visible
    // cache rows from the prefix on (its ancestors, then itself), and past its end position c0's
    // row (finite values: their weights are 0, and 0 times a finite value adds nothing).
    auto row_of = [&](const bf16 *tile, const bf16 *cache, int t, int r) -> const bf16 * {
      const int n = q_prefix[t - t0], end = min(q_pos[t - t0] + 1, c0 + CHUNK);
      const int j = c0 + r < end ? c0 + r : c0;
      const long long *vis = blk + (long long)t * cols + COL_VISIBLE;
      return j < n ? tile + (j - c0) * S::ROW : cache + (key_row(vis, V, n, j, R) * KV + kh) * HD;
    };
    // Element e of a d fragment holds column 2t + (e & 1): keep it from the mma of that column's query.
    auto keep_own = [&](float (&d)[4], const float (&from)[4], int t) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (column_query(grp, 2 * tq + (e & 1)) == t) d[e] = from[e];
    };
    const bool live = c0 + 16 * mt < max_end;       // some column's query reaches this tile
    const bool staged = c0 + 16 * mt + 16 <= min_n;  // all 16 positions staged prefix rows for every query
    quad_sync();  // qw holds the group's 8 columns

    // Scores of the tile: KS dim steps in dim order.
    float sc[4] = {0.f, 0.f, 0.f, 0.f};
    if (live && staged) {
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {  // matrices: (positions 0-7, dims 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)
        unsigned a[4];
        const int i = lane / 8;
        ldmatrix_x4(a, k_tile + (16 * mt + lane % 8 + 8 * (i % 2)) * S::ROW + 16 * ks + 8 * (i / 2));
        const bf16 *qb = qw + g * S::ROW + 16 * ks + 2 * tq;
        mma_16816(sc, a[0], a[1], a[2], a[3], ld32(qb), ld32(qb + 8));
      }
    } else if (live) {
      for (int j = 0; j < qpc; ++j) {
        const int t = group_query(grp, j);
        const bf16 *row_g = row_of(k_tile, k_cache, t, 16 * mt + g), *row_g8 = row_of(k_tile, k_cache, t, 16 * mt + g + 8);
        float own[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
          const bf16 *qb = qw + g * S::ROW + 16 * ks + 2 * tq;
          mma_16816(own, ld32(row_g + 16 * ks + 2 * tq), ld32(row_g8 + 16 * ks + 2 * tq),
                    ld32(row_g + 16 * ks + 2 * tq + 8), ld32(row_g8 + 16 * ks + 2 * tq + 8), ld32(qb), ld32(qb + 8));
        }
        keep_own(sc, own, t);
      }
    }

    // Softmax a column over the chunk (lane (g, t): columns 2t, 2t + 1 at positions 16 mt + g
    // (+ 8)): scores in log2 units, -inf past the column's end; the tile's max (the lane's two
    // positions, then the butterfly over g), the chunk's the largest of the 4 tiles'.
    float m2[2], l2[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = NEG_INF;
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        float &x = sc[2 * hr + h];
        x = c0 + 16 * mt + g + 8 * hr < end2[h] ? x * scale_log2 : NEG_INF;
        m = fmaxf(m, x);
      }
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      m2[h] = m;
    }
    if (g == 0) x_max[mt * HN + 2 * tq] = m2[0], x_max[mt * HN + 2 * tq + 1] = m2[1];
    quad_sync();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = 2 * tq + h;
      const float m = fmaxf(fmaxf(fmaxf(x_max[col], x_max[HN + col]), x_max[2 * HN + col]), x_max[3 * HN + col]);
      float l = 0.f;
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const float w = exp2f(sc[2 * hr + h] - m);  // 0 past the end
        l += w;
        pw[col * (CHUNK + PPAD) + 16 * mt + g + 8 * hr] = __float2bfloat16_rn(w);
      }
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
      m2[h] = m;
      l2[h] = l;
    }
    if (g == 0) x_sum[mt * HN + 2 * tq] = l2[0], x_sum[mt * HN + 2 * tq + 1] = l2[1];
    __syncwarp();  // the warp reads back only its own positions' weights

    // Values of the tile: O^T = V^T P^T, one position step, KS dim tiles.
    float acc[KS][4];
#pragma unroll
    for (int md = 0; md < KS; ++md) acc[md][0] = acc[md][1] = acc[md][2] = acc[md][3] = 0.f;
    const bf16 *pb = pw + g * (CHUNK + PPAD) + 16 * mt + 2 * tq;
    const unsigned b0 = ld32(pb), b1 = ld32(pb + 8);
    if (live && staged) {  // ldmatrix .trans; matrices: (pos 0-7, dims 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15)
      const int i = lane / 8;
      const bf16 *row = v_tile + (16 * mt + lane % 8 + 8 * (i / 2)) * S::ROW + 8 * (i % 2);
#pragma unroll
      for (int md = 0; md < KS; ++md) {
        unsigned a[4];
        ldmatrix_x4_trans(a, row + 16 * md);
        mma_16816(acc[md], a[0], a[1], a[2], a[3], b0, b1);
      }
    } else if (live) {  // lane by lane: positions 2t, 2t + 1, 2t + 8, 2t + 9 of the tile, dims g, g + 8
      for (int j = 0; j < qpc; ++j) {
        const int t = group_query(grp, j);
        const bf16 *v0 = row_of(v_tile, v_cache, t, 16 * mt + 2 * tq), *v1 = row_of(v_tile, v_cache, t, 16 * mt + 2 * tq + 1);
        const bf16 *v8 = row_of(v_tile, v_cache, t, 16 * mt + 2 * tq + 8);
        const bf16 *v9 = row_of(v_tile, v_cache, t, 16 * mt + 2 * tq + 9);
#pragma unroll
        for (int md = 0; md < KS; ++md) {
          const int d = 16 * md + g;
          float own[4] = {0.f, 0.f, 0.f, 0.f};
          mma_16816(own, pack2(v0[d], v1[d]), pack2(v0[d + 8], v1[d + 8]), pack2(v8[d], v9[d]),
                    pack2(v8[d + 8], v9[d + 8]), b0, b1);
          keep_own(acc[md], own, t);
        }
      }
    }
#pragma unroll
    for (int md = 0; md < KS; ++md)
#pragma unroll
      for (int r = 0; r < 4; ++r) x_acc[((mt * KS + md) * 4 + r) * 32 + lane] = acc[md][r];
    quad_sync();

    // The chunk's partials of the group's stored columns: warp i sums the 4 tiles (in tile order)
    // of dim tiles [i KS / 4, (i + 1) KS / 4) and stores them normalized; warp 0 the max and sum.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = 2 * tq + h, t = column_query(grp, col);
      if (!column_stored(grp, col) || q_pos[t - t0] < c0) continue;  // lane-dependent from here on
      const float l = ((x_sum[col] + x_sum[HN + col]) + x_sum[2 * HN + col]) + x_sum[3 * HN + col];
      const float inv = 1.f / l;
      const long long slot = ((long long)kh * nchunks + c) * Q + (long long)t * G + column_head(grp, col);
      if (mt == 0 && g == 0) part_ml[slot * 2] = m2[h], part_ml[slot * 2 + 1] = l;
#pragma unroll
      for (int md = mt * KS / 4; md < (mt + 1) * KS / 4; ++md)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int r = 2 * hr + h;
          float a = x_acc[((0 * KS + md) * 4 + r) * 32 + lane];
          for (int k = 1; k < 4; ++k) a += x_acc[((k * KS + md) * 4 + r) * 32 + lane];
          part_o[slot * HD + 16 * md + g + 8 * hr] = __float2bfloat16_rn(a * inv);
        }
    }
  }

  // The last block of this (kv head, group) to finish merges every chunk's partials. One thread
  // a block synchronizes: the barrier orders the block's partial stores before thread 0's release
  // fence and ticket; the block that draws the last ticket acquires (fence after the atomic), and
  // its barrier orders that before every thread's loads of the partials. (Every thread fencing
  // with __threadfence(), a fence.sc, was ~0.3 us of the ticket; NOTES v48.)
  __syncthreads();
  if (threadIdx.x == 0) {
    int *counter = counters + kh * gridDim.z + blockIdx.z;
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    const int done = atomicAdd(counter, 1);
    is_last = done == nchunks - 1;
    if (is_last) {
      *counter = 0;  // every block has counted: ready for the next call / replay
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    }
  }
  __syncthreads();
  if (!is_last) return;

  // The output: a thread a (query row, 8 dims); chunks 0..last in batches of 8 (a batch's loads
  // issued together): the running max m moves once a batch (the sums rescaled by exp2(m_old -
  // m_new)), then each chunk adds its sum and its output times exp2(its max - m) times its sum.
  const int rows = (t1 - t0) * G;
  for (int item = threadIdx.x; item < rows * D8; item += blockDim.x) {
    const int r = item / D8, d = (item % D8) * 8, qr = t0 * G + r, t = qr / G, h = kh * G + qr % G;
    const int last = min(max(q_pos[t - t0], 0) / CHUNK, nchunks - 1);
    const long long first = (long long)kh * nchunks * Q + qr;  // slot of chunk 0
    float m = NEG_INF, l = 0.f;
    float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int c8 = 0; c8 <= last; c8 += 8) {  // chunk 0 holds position 0 <= p: m is finite from it on
      float2 ml[8];
      uint4 ov[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {  // chunks past the last: the last again, weight 0
        const long long slot = first + (long long)min(c8 + k, last) * Q;
        ml[k] = __ldcg(reinterpret_cast<const float2 *>(part_ml) + slot);
        ov[k] = __ldcg(reinterpret_cast<const uint4 *>(part_o + slot * HD + d));
      }
      float m_new = m;
#pragma unroll
      for (int k = 0; k < 8; ++k) m_new = c8 + k <= last ? fmaxf(m_new, ml[k].x) : m_new;
      const float keep = exp2f(m - m_new);  // 0 in the first batch (m = -inf), where l and o are 0
      l *= keep;
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] *= keep;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float w = c8 + k <= last ? exp2f(ml[k].x - m_new) * ml[k].y : 0.f;
        const bf16 *x = reinterpret_cast<const bf16 *>(&ov[k]);
        l += w;
#pragma unroll
        for (int i = 0; i < 8; ++i) o[i] = fmaf(w, __bfloat162float(x[i]), o[i]);
      }
      m = m_new;
    }
    uint4 packed;
    packed.x = pack2(__float2bfloat16_rn(o[0] / l), __float2bfloat16_rn(o[1] / l));
    packed.y = pack2(__float2bfloat16_rn(o[2] / l), __float2bfloat16_rn(o[3] / l));
    packed.z = pack2(__float2bfloat16_rn(o[4] / l), __float2bfloat16_rn(o[5] / l));
    packed.w = pack2(__float2bfloat16_rn(o[6] / l), __float2bfloat16_rn(o[7] / l));
    *reinterpret_cast<uint4 *>(out + (long long)t * H * HD + (long long)h * HD + d) = packed;
  }
}

// At least MIN_BLOCKS blocks an SM (at most 128 registers at 2).
#define TREE_ATTENTION(HD)                                                                                   \
  extern "C" __global__ void __launch_bounds__(NWARPS * 32, MIN_BLOCKS) tree_attention_hd##HD(              \
      const bf16 *qkv, const long long *blk, const float *cos_t, const float *sin_t, const bf16 *k_cache,   \
      const bf16 *v_cache, float *part_ml, bf16 *part_o, int *counters, bf16 *out, int T, int H, int KV, \
      int V, int span, int R, int TQ, float scale_log2) {                                                   \
    tree_attention_body<HD>(qkv, blk, cos_t, sin_t, k_cache, v_cache, part_ml, part_o, counters, out, T,  \
                            H, KV, V, span, R, TQ, scale_log2);                                             \
  }
TREE_ATTENTION(64)
TREE_ATTENTION(128)
