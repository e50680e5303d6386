// Tree attention with RoPE inside and an in-kernel split-KV combine; and the cache append.
// Python side and torch references: swiftspec_core/kernels/attention.py.
//
// Row invariance: a query's bits depend only on its q, its position p and the keys/values at
// positions 0..p. Keys are reduced in position order: positions split into chunks of CHUNK at
// fixed boundaries (one block per chunk, kv head and query group), a chunk's scores computed one
// lane a position (sub-tiles of 32 positions), one softmax over the chunk (max and sum in a fixed
// lane order), its values summed in position order, and the chunks' partials combined in chunk
// order by the last block of the (kv head, group) to finish. Nothing depends on T, the query's
// index, the query grouping, the cache rows its tree keys sit at, or the span (the grid size).
// Speed: the grid is sized in Python to one wave of blocks where it fits (each block's cost is
// mostly a chain of dependent global round trips, so a second wave doubles it), and the loads
// of a warp's next query row, of its tree rows and of the tree values are issued early.
#include "common.cuh"

#define CHUNK 64     // positions a block reduces; kernels/attention.py's CHUNK says the same
#define NWARPS 8     // warps a block (256 threads)
#define TQMAX 32     // queries a block at most (their positions and prefixes sit in shared memory)
#define MIN_BLOCKS 2 // blocks an SM (__launch_bounds__); kernels/attention.py sizes the grid by it
#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)
#define KPAD 4       // fp32 padding a K tile row: 8 lanes reading 16 bytes of 8 rows hit distinct banks

// Staged block columns (graphs.py): token, position, cache row, prefix length, visible rows.
#define COL_POSITION 1
#define COL_ROW 2
#define COL_PREFIX 3
#define COL_VISIBLE 4

struct __align__(8) bf16x4 { __nv_bfloat162 h[2]; };

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

// A lane's RoPE inputs of one query row (pairs i = lane + 32 k, k < NP): loaded a row ahead so
// the global round trip overlaps the previous row's work (or the K/V staging, for the first row).
template <int NP>
struct QInputs { float x1[NP], x2[NP], c1[NP], s1[NP], c2[NP], s2[NP]; };

template <int HD>
__device__ __forceinline__ void load_q(QInputs<HD / 64> &in, const bf16 *q, const float *cs, const float *sn,
                                       int lane) {
  constexpr int HALF = HD / 2;
#pragma unroll
  for (int k = 0; k < HD / 64; ++k) {
    const int i = lane + 32 * k;
    in.x1[k] = __bfloat162float(q[i]); in.x2[k] = __bfloat162float(q[i + HALF]);
    in.c1[k] = cs[i]; in.s1[k] = sn[i]; in.c2[k] = cs[i + HALF]; in.s2[k] = sn[i + HALF];
  }
}

// Shared memory of tree_attention (dynamic; kernels/attention.py sizes it by the same formula):
// the chunk's K rows [CHUNK][HD + KPAD] and V rows [CHUNK][HD], converted to fp32 once when
// staged (each is read by every query row of the block), and a warp's q [NWARPS][HD].
template <int HD>
struct Smem {
  static constexpr int K_ROW = HD + KPAD, K = 0, V = K + CHUNK * K_ROW, Q = V + CHUNK * HD;
};

// The cache row of the lane's positions j = c0 + 32 s + lane that are tree positions (n <= j <= p)
// of a query (vis: its visible rows), 0 elsewhere; the value loop gets them by shuffle.
__device__ __forceinline__ void tree_rows(int (&rows)[CHUNK / 32], const long long *vis, int V, int n, int p,
                                          int c0, int lane, int R) {
#pragma unroll
  for (int s = 0; s < CHUNK / 32; ++s) {
    const int j = c0 + 32 * s + lane;
    rows[s] = j >= n && j <= p ? (int)key_row(vis, V, n, j, R) : 0;
  }
}

// acc[0..DL) += w * v[lane * DL ..]: a lane's DL dims of one value row (DL = HD / 32), the row
// in fp32 (staged) or bf16 (a tree row in the cache): the same fp32 values, the same sum.
template <int DL>
__device__ __forceinline__ void add_value(float (&acc)[DL], float w, const float *v, int lane) {
  if constexpr (DL == 4) {
    const float4 a = *reinterpret_cast<const float4 *>(v + lane * 4);
    acc[0] = fmaf(w, a.x, acc[0]); acc[1] = fmaf(w, a.y, acc[1]);
    acc[2] = fmaf(w, a.z, acc[2]); acc[3] = fmaf(w, a.w, acc[3]);
  } else {
    static_assert(DL == 2, "head_dim 64 or 128");
    const float2 a = *reinterpret_cast<const float2 *>(v + lane * 2);
    acc[0] = fmaf(w, a.x, acc[0]); acc[1] = fmaf(w, a.y, acc[1]);
  }
}

template <int DL>
__device__ __forceinline__ void add_value(float (&acc)[DL], float w, const bf16 *v, int lane) {
  if constexpr (DL == 4) {
    const bf16x4 v4 = *reinterpret_cast<const bf16x4 *>(v + lane * 4);
    const float2 a = __bfloat1622float2(v4.h[0]), b = __bfloat1622float2(v4.h[1]);
    acc[0] = fmaf(w, a.x, acc[0]); acc[1] = fmaf(w, a.y, acc[1]);
    acc[2] = fmaf(w, b.x, acc[2]); acc[3] = fmaf(w, b.y, acc[3]);
  } else {
    static_assert(DL == 2, "head_dim 64 or 128");
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(v + lane * 2));
    acc[0] = fmaf(w, a.x, acc[0]); acc[1] = fmaf(w, a.y, acc[1]);
  }
}

// q . k over HD dims in four independent FMA chains (8-dim groups d8 % 4), summed in a fixed tree:
// one fixed sum per (q, key) whatever the call, a quarter of a single chain's latency. k in fp32
// (staged) or bf16 (a tree row in the cache): the same fp32 values, the same sum.
__device__ __forceinline__ void dot8(float (&dot)[4], int d8, const float *q, float4 ka, float4 kb) {
  const float4 qa = *reinterpret_cast<const float4 *>(q + d8 * 8);
  const float4 qb = *reinterpret_cast<const float4 *>(q + d8 * 8 + 4);
  float &a = dot[d8 % 4];
  a = fmaf(qa.x, ka.x, a); a = fmaf(qa.y, ka.y, a); a = fmaf(qa.z, ka.z, a); a = fmaf(qa.w, ka.w, a);
  a = fmaf(qb.x, kb.x, a); a = fmaf(qb.y, kb.y, a); a = fmaf(qb.z, kb.z, a); a = fmaf(qb.w, kb.w, a);
}

template <int HD>
__device__ __forceinline__ float dot_q(const float *q, const float *k) {
  float dot[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int d8 = 0; d8 < HD / 8; ++d8)
    dot8(dot, d8, q, *reinterpret_cast<const float4 *>(k + d8 * 8),
         *reinterpret_cast<const float4 *>(k + d8 * 8 + 4));
  return (dot[0] + dot[1]) + (dot[2] + dot[3]);
}

template <int HD>
__device__ __forceinline__ float dot_q(const float *q, const bf16 *k) {
  float dot[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int d8 = 0; d8 < HD / 8; ++d8) {
    const bf16x8 k8 = *reinterpret_cast<const bf16x8 *>(k + d8 * 8);
    const float2 k0 = __bfloat1622float2(k8.h[0]), k1 = __bfloat1622float2(k8.h[1]);
    const float2 k2 = __bfloat1622float2(k8.h[2]), k3 = __bfloat1622float2(k8.h[3]);
    dot8(dot, d8, q, make_float4(k0.x, k0.y, k1.x, k1.y), make_float4(k2.x, k2.y, k3.x, k3.y));
  }
  return (dot[0] + dot[1]) + (dot[2] + dot[3]);
}

// grid (T), block 256: k with RoPE at positions[t] and v into row rows[t] of the caches.
extern "C" __global__ void append_kv(const bf16 *__restrict__ qkv, const long long *__restrict__ positions,
                                     const long long *__restrict__ rows, const float *__restrict__ cos_t,
                                     const float *__restrict__ sin_t, bf16 *__restrict__ k_cache,
                                     bf16 *__restrict__ v_cache, int H, int KV, int hd, int R) {
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

// One block: chunk blockIdx.x (positions [c0, c0 + CHUNK)) of kv head blockIdx.y for the query
// rows (t, g) of that kv head with t in group blockIdx.z (queries [z * TQ, z * TQ + TQ)), one
// warp a query row at a time (warp w: rows w, w + NWARPS, ...); the group's queries share the
// chunk's K/V tile. Partials go to part_ml [KV, nchunks, Q, 2] (the chunk's max score in log2
// units, its sum of exp2(score - max)) and part_acc [KV, nchunks, Q, HD]
// (Q = T * G query rows, row t * G + g); the last block of the (kv head, group) to finish
// combines them into out [T, H * HD] and resets its counter.
template <int HD>
__device__ void tree_attention_body(const bf16 *__restrict__ qkv, const long long *__restrict__ blk,
                                    const float *__restrict__ cos_t, const float *__restrict__ sin_t,
                                    const bf16 *__restrict__ k_cache, const bf16 *__restrict__ v_cache,
                                    float *__restrict__ part_ml, float *__restrict__ part_acc,
                                    int *__restrict__ counters, bf16 *__restrict__ out, int T, int H, int KV,
                                    int V, int span, int R, int TQ, float scale_log2) {
  constexpr int HALF = HD / 2, D8 = HD / 8, DL = HD / 32;  // DL: output dims a lane owns
  static_assert(HD == 64 || HD == 128, "head_dim 64 or 128");
  using S = Smem<HD>;
  extern __shared__ __align__(16) float smem[];
  float *k_tile = smem + S::K, *v_tile = smem + S::V;  // row r: k_tile + r * S::K_ROW, v_tile + r * HD
  __shared__ int q_pos[TQMAX], q_prefix[TQMAX];  // position, prefix length of query t0 + i
  __shared__ int is_last;

  const int c = blockIdx.x, kh = blockIdx.y, nchunks = gridDim.x, G = H / KV, Q = T * G;
  if (TQ > TQMAX) return;  // the Python side never launches it so (q_pos would overflow)
  const int t0 = blockIdx.z * TQ, t1 = min(T, t0 + TQ);  // this block's queries [t0, t1)
  const int c0 = c * CHUNK, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int cols = COL_VISIBLE + V, rows_end = t1 * G;  // query rows [t0 * G, rows_end)
  const long long stride = (long long)(H + 2 * KV) * HD;
  for (int i = threadIdx.x; i < t1 - t0; i += blockDim.x) {
    q_pos[i] = (int)blk[(long long)(t0 + i) * cols + COL_POSITION];
    q_prefix[i] = (int)blk[(long long)(t0 + i) * cols + COL_PREFIX];
  }
  __syncthreads();

  // This warp's query rows: t0 * G + warp, then every NWARPS-th, those whose position reaches the
  // chunk (a chunk past the query contributes nothing and is never read). The first one's RoPE
  // inputs and tree rows are loaded now, in flight during the K/V staging.
  // load_row(r, ..): the first of rows r, r + NWARPS, .. reaching the chunk (rows_end if none), its
  // inputs loading into in and rows.
  auto load_row = [&](int r, QInputs<HD / 64> &in, int (&rows)[CHUNK / 32]) {
    while (r < rows_end && q_pos[r / G - t0] < c0) r += NWARPS;
    if (r < rows_end) {
      const int t = r / G, p = q_pos[t - t0];
      load_q<HD>(in, qkv + t * stride + (long long)(kh * G + r % G) * HD, cos_t + (long long)p * HD,
                 sin_t + (long long)p * HD, lane);
      tree_rows(rows, blk + (long long)t * cols + COL_VISIBLE, V, q_prefix[t - t0], p, c0, lane, R);
    }
    return r;
  };
  QInputs<HD / 64> cur, nxt;
  int tree_row[CHUNK / 32], next_tree_row[CHUNK / 32];
  int qr = load_row(t0 * G + warp, cur, tree_row);

  // The chunk's cache rows c0.. that some query reads as prefix rows (j < PREFIX, j <= POSITION).
  int staged_end = 0;
  for (int i = 0; i < t1 - t0; ++i) staged_end = max(staged_end, min(q_prefix[i], q_pos[i] + 1));
  const int tile_rows = max(0, min(min(staged_end, span), c0 + CHUNK) - c0);
#pragma unroll 4
  for (int e = threadIdx.x; e < tile_rows * D8; e += blockDim.x) {
    const int r = e / D8, d = (e % D8) * 8;
    const long long g = ((long long)(c0 + r) * KV + kh) * HD + d;
    const bf16x8 k8 = *reinterpret_cast<const bf16x8 *>(k_cache + g);
    const bf16x8 v8 = *reinterpret_cast<const bf16x8 *>(v_cache + g);
    float4 *kd = reinterpret_cast<float4 *>(k_tile + r * S::K_ROW + d);
    float4 *vd = reinterpret_cast<float4 *>(v_tile + r * HD + d);
    float2 a = __bfloat1622float2(k8.h[0]), b = __bfloat1622float2(k8.h[1]);
    kd[0] = make_float4(a.x, a.y, b.x, b.y);
    a = __bfloat1622float2(k8.h[2]), b = __bfloat1622float2(k8.h[3]);
    kd[1] = make_float4(a.x, a.y, b.x, b.y);
    a = __bfloat1622float2(v8.h[0]), b = __bfloat1622float2(v8.h[1]);
    vd[0] = make_float4(a.x, a.y, b.x, b.y);
    a = __bfloat1622float2(v8.h[2]), b = __bfloat1622float2(v8.h[3]);
    vd[1] = make_float4(a.x, a.y, b.x, b.y);
  }
  __syncthreads();

  float *qw = smem + S::Q + warp * HD;
  for (int next; qr < rows_end; qr = next) {
    const int t = qr / G;
    const int p = q_pos[t - t0], n = q_prefix[t - t0];
    next = load_row(qr + NWARPS, nxt, next_tree_row);  // the warp's next row: loads during this one

    // q with RoPE at p in fp32, scaled by hd^-0.5 * log2(e) (softmax in base 2).
#pragma unroll
    for (int k = 0; k < HD / 64; ++k) {
      float y1, y2;
      rope_pair(cur.x1[k], cur.x2[k], cur.c1[k], cur.s1[k], cur.c2[k], cur.s2[k], y1, y2);
      qw[lane + 32 * k] = y1 * scale_log2;
      qw[lane + 32 * k + HALF] = y2 * scale_log2;
    }
    __syncwarp();

    // Scores of the chunk's positions c0 + 32 st + lane (st < CHUNK / 32), then one softmax over
    // the chunk: one max, one sum (lane order fixed: sub-tiles in order, then the butterfly).
    const int end = min(p + 1, c0 + CHUNK);  // positions [c0, end) of this chunk; c0 <= p
    float score[CHUNK / 32];
#pragma unroll
    for (int st = 0; st < CHUNK / 32; ++st) {
      const int j = c0 + 32 * st + lane;
      score[st] = NEG_INF;
      if (j < end) {
        score[st] = j < n ? dot_q<HD>(qw, k_tile + (j - c0) * S::K_ROW)
                          : dot_q<HD>(qw, k_cache + ((long long)tree_row[st] * KV + kh) * HD);
      }
    }
    float m_lane = score[0];
#pragma unroll
    for (int st = 1; st < CHUNK / 32; ++st) m_lane = fmaxf(m_lane, score[st]);
    const float m_chunk = warp_max(m_lane);  // finite: lane 0's position c0 <= p is valid
    float weight[CHUNK / 32], l_lane = 0.f;
#pragma unroll
    for (int st = 0; st < CHUNK / 32; ++st) {
      weight[st] = c0 + 32 * st + lane < end ? exp2f(score[st] - m_chunk) : 0.f;
      l_lane += weight[st];
    }
    const float l_chunk = warp_sum(l_lane);

    float acc[DL];
#pragma unroll
    for (int k = 0; k < DL; ++k) acc[k] = 0.f;
#pragma unroll
    for (int st = 0; st < CHUNK / 32; ++st) {  // values in position order (unrolled: weight[st])
      const int base = c0 + 32 * st;
      if (base >= end) break;
      const int count = end - base < 32 ? end - base : 32;
      if (base + count <= n) {  // all prefix rows, staged: the common case, no per-position row lookup
        const float *vt = v_tile + (base - c0) * HD;
#pragma unroll 8
        for (int jj = 0; jj < count; ++jj)
          add_value<DL>(acc, __shfl_sync(0xffffffffu, weight[st], jj), vt + jj * HD, lane);
      } else {
#pragma unroll 8
        for (int jj = 0; jj < count; ++jj) {  // the same sum, tree rows from their lanes' lookups
          const int jp = base + jj, row = __shfl_sync(0xffffffffu, tree_row[st], jj);
          const float w = __shfl_sync(0xffffffffu, weight[st], jj);
          if (jp < n)  // warp-uniform
            add_value<DL>(acc, w, v_tile + (jp - c0) * HD, lane);
          else
            add_value<DL>(acc, w, v_cache + ((long long)row * KV + kh) * HD, lane);
        }
      }
    }
    const long long slot = ((long long)kh * nchunks + c) * Q + qr;
    if (lane == 0) {
      part_ml[slot * 2] = m_chunk;
      part_ml[slot * 2 + 1] = l_chunk;
    }
#pragma unroll
    for (int k = 0; k < DL; ++k) part_acc[slot * HD + lane * DL + k] = acc[k];
    __syncwarp();  // qw is rewritten by the next query row
    cur = nxt;  // (unset past the warp's last row: the loop ends before reading them)
#pragma unroll
    for (int s = 0; s < CHUNK / 32; ++s) tree_row[s] = next_tree_row[s];
  }

  // The last block of this (kv head, group) to finish combines every chunk's partials.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int *counter = counters + kh * gridDim.z + blockIdx.z;
    const int done = atomicAdd(counter, 1);
    is_last = done == nchunks - 1;
    if (is_last) *counter = 0;  // every block has counted: ready for the next call / replay
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();

  // One item: a query row and DL consecutive dims of it (partials read past L1: __ldcg).
  for (int item = threadIdx.x; item < (t1 - t0) * G * 32; item += blockDim.x) {
    const int qr = t0 * G + item / 32, d = (item % 32) * DL, t = qr / G, h = kh * G + qr % G;
    const int p = q_pos[t - t0];
    const int last = min(max(p, 0) / CHUNK, nchunks - 1);
    const long long first = (long long)kh * nchunks * Q + qr;  // slot of chunk 0
    float m = NEG_INF;
#pragma unroll 4
    for (int cc = 0; cc <= last; ++cc) m = fmaxf(m, __ldcg(part_ml + (first + (long long)cc * Q) * 2));
    float l = 0.f, o[DL];
#pragma unroll
    for (int k = 0; k < DL; ++k) o[k] = 0.f;
#pragma unroll 4
    for (int cc = 0; cc <= last; ++cc) {  // chunks in order
      const long long slot = first + (long long)cc * Q;
      const float w = exp2f(__ldcg(part_ml + slot * 2) - m);
      l = fmaf(w, __ldcg(part_ml + slot * 2 + 1), l);
      float a[DL];
      if constexpr (DL == 4) {  // one 16-byte load (slot * HD + d is a multiple of 4 floats)
        const float4 v = __ldcg(reinterpret_cast<const float4 *>(part_acc + slot * HD + d));
        a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
      } else {
        const float2 v = __ldcg(reinterpret_cast<const float2 *>(part_acc + slot * HD + d));
        a[0] = v.x; a[1] = v.y;
      }
#pragma unroll
      for (int k = 0; k < DL; ++k) o[k] = fmaf(w, a[k], o[k]);
    }
    bf16 *dst = out + (long long)t * H * HD + (long long)h * HD + d;
#pragma unroll
    for (int k = 0; k < DL; ++k) dst[k] = __float2bfloat16_rn(o[k] / l);
  }
}

// At least MIN_BLOCKS blocks an SM (at most 128 registers at 2).
#define TREE_ATTENTION(HD)                                                                                 \
  extern "C" __global__ void __launch_bounds__(NWARPS * 32, MIN_BLOCKS) tree_attention_hd##HD(                          \
      const bf16 *qkv, const long long *blk, const float *cos_t, const float *sin_t, const bf16 *k_cache,   \
      const bf16 *v_cache, float *part_ml, float *part_acc, int *counters, bf16 *out, int T, int H, int KV, \
      int V, int span, int R, int TQ, float scale_log2) {                                                          \
    tree_attention_body<HD>(qkv, blk, cos_t, sin_t, k_cache, v_cache, part_ml, part_acc, counters, out, T, \
                            H, KV, V, span, R, TQ, scale_log2);                                                \
  }
TREE_ATTENTION(64)
TREE_ATTENTION(128)
