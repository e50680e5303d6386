// The tree attention's item (attention.cu's kernel runs one a block; persistent.cu's target build
// runs them on its compute warps): row invariance and numerics in attention.cu's first comment.
#pragma once
#include "common.cuh"
#include "mma.cuh"
#include "attention_append.cuh"
#include "attention_merge.cuh"
#include "rope.cuh"

#define CHUNK 64      // positions a block reduces; kernels/attention.py's CHUNK says the same
#define NWARPS 8      // warps a block (256 threads)
#define TQMAX 32      // queries a block at most (their positions and prefixes sit in shared memory)
#define KPAD 8        // bf16 padding a tile row (16 bytes): 8 rows' 16-byte reads hit distinct banks
#define HN 8          // q heads of one kv head a warp item computes (the mma's n = 8 columns)
#define PPAD 8        // bf16 padding a row of a warp's weight tile

static_assert(CHUNK == 64, "four 16-position tiles a chunk");

// Cache row holding position j of a query with prefix n and visible rows vis[0..V).
__device__ __forceinline__ long long key_row(const long long *vis, int V, int n, int j, int R) {
  long long r = j < n ? (long long)j : vis[min(j - n, V - 1)];
  return r < 0 ? 0 : (r >= R ? R - 1 : r);  // out-of-range rows: wrong but never a fault
}

// Shared memory of tree_attention (dynamic; kernels/attention.py sizes it by the same formula),
// bf16 throughout: the chunk's K and V rows [CHUNK][HD + KPAD] as the cache holds them, then per
// warp its item's q heads [HN][HD + KPAD] (RoPE applied) and softmax weights [HN][CHUNK + PPAD];
// with the append, then the forward's new K rows [T][HD + KPAD] and its new V rows [T][HD + KPAD].
template <int HD>
struct Smem {
  static constexpr int ROW = HD + KPAD;                                    // bf16 elements
  static constexpr int V_OFF = CHUNK * ROW * 2, Q_OFF = 2 * V_OFF;         // bytes
  static constexpr int Q_BYTES = HN * ROW * 2, P_BYTES = HN * (CHUNK + PPAD) * 2;
  static constexpr int BYTES = Q_OFF + NWARPS * (Q_BYTES + P_BYTES);
};

// A compile-time flag as a value (a generic lambda's argument picks its instantiation).
template <bool B>
struct Flag {
  static constexpr bool value = B;
};

// A kernel's own block (attention.cu's): its threads, __syncthreads, PDL's wait and trigger
// (common.cuh), and the merge after its item.
struct OwnBlock {
  static constexpr bool merges = true;
  static __device__ __forceinline__ unsigned threads() { return blockDim.x; }
  static __device__ __forceinline__ void sync() { __syncthreads(); }
  static __device__ __forceinline__ void wait() { pdl_wait(); }
  static __device__ __forceinline__ void trigger() { pdl_trigger(); }
};

// One item: chunk c (positions [c0, c0 + CHUNK)) of kv head kh for the queries t in group z
// (queries [z * TQ, z * TQ + TQ)), in `smem` (Smem<HD>'s layout), on a block of Block::threads()
// threads: attention.cu's kernel runs an item a block (c, kh, z its block index; OwnBlock), and merges;
// persistent.cu's target build runs items on its compute warps and merges in a phase of its own. A warp item is one query and HN
// of its kv head's G q heads (heads [hp * HN, hp * HN + HN), heads past G repeating head G - 1);
// warp w takes items w, w + NWARPS, ... In an item (lane (g, t) = (lane / 4, lane % 4)):
//   scores S[pos][head] = K . q^T: mma A = K rows (16 positions x 16 dims), B = q^T (16 dims x 8
//     heads); d of lane (g, t): positions g, g + 8 of the tile, heads 2t, 2t + 1;
//   output O^T[dim][head] = V^T . P^T: mma A = V^T (16 dims x 16 positions), B = P^T (16 positions
//     x 8 heads); d of lane (g, t): dims g, g + 8 of the tile, heads 2t, 2t + 1.
// A fragments come by ldmatrix where a 16-position tile's rows all sit in shared memory (staged
// prefix rows, or tree rows among the chunk's staged rows), else lane by lane through each
// position's row pointer (a tree row in the cache): the same registers either way. Partials go
// to part_ml [KV, nchunks, Q, 2] (the chunk's max score in log2 units, its sum of exp2(score -
// max)) and part_acc [KV, nchunks, Q, HD] (bf16; Q = T * G query rows, row t * G + g); the
// (kv head, group)'s mergers (attention_merge.cuh) combine them into out [T, H * HD] where
// Block::merges (else counters, out, mergers and by_position are not read).
template <int HD, class Block>
__device__ __forceinline__ void tree_attention_item(unsigned char *smem, int c, int kh, int z, int nchunks,
                                                    const bf16 *__restrict__ qkv, const long long *__restrict__ blk,
                                    const float *__restrict__ cos_t, const float *__restrict__ sin_t,
                                    bf16 *__restrict__ k_cache, bf16 *__restrict__ v_cache,
                                    float *__restrict__ part_ml, bf16 *__restrict__ part_acc,
                                    int *__restrict__ counters, bf16 *__restrict__ out, int T, int H, int KV,
                                    int V, int span, int R, int TQ, int append, int mergers, int by_position,
                                    float scale_log2) {
  constexpr int HALF = HD / 2, D8 = HD / 8, KS = HD / 16;  // KS: 16-dim steps (and 16-dim tiles)
  static_assert(HD == 64 || HD == 128, "head_dim 64 or 128");
  using S = Smem<HD>;
  bf16 *k_tile = reinterpret_cast<bf16 *>(smem), *v_tile = reinterpret_cast<bf16 *>(smem + S::V_OFF);
  __shared__ int q_pos[TQMAX], q_prefix[TQMAX];  // position, prefix length of query t0 + i
  __shared__ int tree_rows[TQMAX * CHUNK];        // [query][position - c0]: its cache row, from the prefix on
  __shared__ int new_rows[APPEND_MAX];             // with the append: token t's cache row (-1: none)

  // PDL: the kernel before this one writes qkv (the forward's qkv GEMM) and, with the append run
  // apart (append_kv, launched just before), cache rows. With the append inside, nothing it writes
  // is staged below, so the tile's loads and the block's positions go out before the wait, in
  // flight while it finishes (NOTES v105); qkv is read only after the wait.
  if (!append) Block::wait();
  const int G = H / KV, Q = T * G;
  mergers = min(mergers, nchunks);  // the launcher's rule keeps it so
  const int t0 = z * TQ, t1 = min(T, t0 + TQ);  // this block's queries [t0, t1)
  if (TQ > TQMAX || (append && T > APPEND_MAX)) return;  // the Python side never launches it so
  const int c0 = c * CHUNK, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const int cols = COL_VISIBLE + V, passes = (G + HN - 1) / HN;
  const long long stride = (long long)(H + 2 * KV) * HD;

  // The HN heads' q of query t (item pass hp) with RoPE at position p in fp32, rounded once to
  // bf16 into the warp's q tile (heads past G repeat G - 1). A lane takes pairs i0..i0 + 3 of UL
  // heads: every load is a vector and all are issued before the first is used (one round trip).
  bf16 *qw = reinterpret_cast<bf16 *>(smem + S::Q_OFF + warp * (S::Q_BYTES + S::P_BYTES));  // [HN][ROW]
  bf16 *pw = qw + HN * S::ROW;                                                            // [HN][CHUNK + PPAD]
  auto rope_q = [&](int t, int hp, int p) {
    constexpr int IG = HALF / 4, UL = HN * IG / 32;  // groups of 4 pairs; heads a lane
    static_assert(HN * IG % 32 == 0 && UL >= 1, "lanes cover HN heads x HALF pairs");
    const bf16 *q_tok = qkv + t * stride + (long long)kh * G * HD;
    const int i0 = (lane % IG) * 4, u0 = (lane / IG) * UL;
    const Rope4 tables = rope4_tables(cos_t + (long long)p * HD, sin_t + (long long)p * HD, i0, HALF);
    uint2 lo[UL], hi[UL];  // q[i0..i0 + 3] and q[i0 + HALF..] of head u0 + k, 4 bf16 each
#pragma unroll
    for (int k = 0; k < UL; ++k) {
      const bf16 *q = q_tok + (long long)min(hp * HN + u0 + k, G - 1) * HD;
      lo[k] = *reinterpret_cast<const uint2 *>(q + i0);
      hi[k] = *reinterpret_cast<const uint2 *>(q + i0 + HALF);
    }
#pragma unroll
    for (int k = 0; k < UL; ++k) {
      uint2 y1, y2;
      rope4(tables, lo[k], hi[k], y1, y2);
      *reinterpret_cast<uint2 *>(qw + (u0 + k) * S::ROW + i0) = y1;
      *reinterpret_cast<uint2 *>(qw + (u0 + k) * S::ROW + i0 + HALF) = y2;
    }
  };

  bf16 *new_k = reinterpret_cast<bf16 *>(smem + S::BYTES), *new_v = new_k + T * S::ROW;
  // Before the block's one barrier, with their loads in flight together (each of these waited on
  // the one before it, ~1 us a block and ~1.5 in the chunk holding tree rows; NOTES v55): the
  // chunk's cache rows below the span into registers (rows past a query's prefix are staged too
  // and never read as its keys: those are tree rows), the block's query positions and prefixes,
  // the cache rows of its queries' tree positions in this chunk (from a query's prefix to its
  // position), and the rotated q of each warp's first item; then the tile's shared stores.
  constexpr int STAGE = CHUNK * D8 / (NWARPS * 32);  // 16-byte pieces a thread stages of K (and of V)
  static_assert(CHUNK * D8 % (NWARPS * 32) == 0, "the tile splits evenly over the threads");
  const int tile_rows = max(0, min(span - c0, CHUNK));
  uint4 k_piece[STAGE], v_piece[STAGE];
#pragma unroll
  for (int s = 0; s < STAGE; ++s) {
    const int e = threadIdx.x + s * NWARPS * 32, r = e / D8, d = (e % D8) * 8;
    if (r < tile_rows) {
      const long long src = ((long long)(c0 + r) * KV + kh) * HD + d;
      k_piece[s] = *reinterpret_cast<const uint4 *>(k_cache + src);
      v_piece[s] = *reinterpret_cast<const uint4 *>(v_cache + src);
    }
  }
  const bool has_query = threadIdx.x < t1 - t0;  // t1 - t0 <= TQMAX < Block::threads()
  const long long *my_blk = blk + (long long)(t0 + threadIdx.x) * cols;
  const int my_pos = has_query ? (int)my_blk[COL_POSITION] : 0, my_prefix = has_query ? (int)my_blk[COL_PREFIX] : 0;
  // Two elements a step, each one's loads issued beside the other's: from 5 queries a block (M >= 9)
  // a thread has two, and one after the other they were a second chain of round trips (NOTES v125).
  const int tree_elems = (t1 - t0) * CHUNK;
  for (int ea = threadIdx.x; ea < tree_elems; ea += 2 * Block::threads()) {
    const int eb = ea + Block::threads(), eb_in = eb < tree_elems ? eb : ea;  // past the end: ea's loads, not stored
    const long long *ba = blk + (long long)(t0 + ea / CHUNK) * cols, *bb = blk + (long long)(t0 + eb_in / CHUNK) * cols;
    const int ja = c0 + ea % CHUNK, na = (int)ba[COL_PREFIX], pa = (int)ba[COL_POSITION];
    const int jb = c0 + eb_in % CHUNK, nb = (int)bb[COL_PREFIX], pb = (int)bb[COL_POSITION];
    const bool tree_a = ja >= na && ja <= pa, tree_b = eb < tree_elems && jb >= nb && jb <= pb;
    const long long ra = tree_a ? key_row(ba + COL_VISIBLE, V, na, ja, R) : 0;
    const long long rb = tree_b ? key_row(bb + COL_VISIBLE, V, nb, jb, R) : 0;
    if (tree_a) tree_rows[ea] = (int)ra;
    if (tree_b) tree_rows[eb] = (int)rb;
  }
  if (append) Block::wait();
  Block::trigger();
  if (warp < (t1 - t0) * passes) {  // the warp's first item (the loop below ropes the others)
    const int t = t0 + warp / passes, p = (int)blk[(long long)t * cols + COL_POSITION];
    if (p >= c0) rope_q(t, warp % passes, p);
  }
  if (append)  // after the wait, before the first barrier, with the staging's loads in flight
    append_new_rows<HD, S::ROW, CHUNK>(qkv + (long long)(H + kh) * HD, stride, KV, blk, cols, cos_t, sin_t, T, R,
                                       new_k, new_v, new_rows, z == 0, c, nchunks, kh, k_cache, v_cache,
                                       Block::threads());
#pragma unroll
  for (int s = 0; s < STAGE; ++s) {
    const int e = threadIdx.x + s * NWARPS * 32, r = e / D8, d = (e % D8) * 8;
    if (r < tile_rows) {
      *reinterpret_cast<uint4 *>(k_tile + r * S::ROW + d) = k_piece[s];
      *reinterpret_cast<uint4 *>(v_tile + r * S::ROW + d) = v_piece[s];
    }
  }
  if (has_query) {
    q_pos[threadIdx.x] = my_pos;
    q_prefix[threadIdx.x] = my_prefix;
  }
  Block::sync();
  if (append) {
    append_place<HD, S::ROW, CHUNK>(new_k, new_v, new_rows, T, k_tile, v_tile, c0, tile_rows, tree_rows, t1 - t0,
                                    q_pos, q_prefix, Block::threads());
    Block::sync();
  }

  for (int item = warp; item < (t1 - t0) * passes; item += NWARPS) {
    const int t = t0 + item / passes, hp = item % passes;
    const int p = q_pos[t - t0], n = q_prefix[t - t0];
    if (p < c0) continue;  // the chunk is past this query: it contributes nothing, never read
    const int end = min(p + 1, c0 + CHUNK);  // positions [c0, end) of this chunk; c0 <= p
    if (item != warp) rope_q(t, hp, p);

    // Row pointers of positions c0 + r: the staged tile below the prefix, the query's visible
    // cache rows from the prefix on (its ancestors, then itself: in the staged tile when the row
    // is one of the chunk's, as a tree's new rows usually are; a new row outside it in new_k /
    // new_v), and past the end position c0's row (finite values: their weights are 0, and 0 times
    // a finite value adds nothing).
    auto row_of = [&](const bf16 *tile, const bf16 *cache, const bf16 *fresh, int r) -> const bf16 * {
      const int j = c0 + r < end ? c0 + r : c0;
      if (j < n) return tile + (j - c0) * S::ROW;
      const int row = tree_rows[(t - t0) * CHUNK + j - c0];
      if (row < 0) return fresh + (-1 - row) * S::ROW;
      return row >= c0 && row < c0 + tile_rows ? tile + (row - c0) * S::ROW : cache + ((long long)row * KV + kh) * HD;
    };
    auto key_of = [&](int r) { return row_of(k_tile, k_cache, new_k, r); };
    auto value_of = [&](int r) { return row_of(v_tile, v_cache, new_v, r); };
    __syncwarp();

    // The score and value loops are compiled three times, without what an item does not need (the
    // lane-by-lane path, if-converted into one loop, costs ~200 predicated-off loads and warp syncs
    // an item; NOTES v51, v54): every tile staged and valid (every chunk but a query's last); every
    // position's row in shared memory (staged prefix rows and tree rows among the chunk's staged
    // rows, as a verification's new rows are); else the general loops.
    const bool fast = c0 + CHUNK <= min(n, end);
    const bool in_tile = fast || __all_sync(0xffffffffu, __isShared(key_of(lane)) && __isShared(key_of(lane + 32)));
    auto by_path = [&](auto loop) {  // loop(fast_path, tile_path): the instantiation this item takes
      if (fast) loop(Flag<true>(), Flag<true>());
      else if (in_tile) loop(Flag<false>(), Flag<true>());
      else loop(Flag<false>(), Flag<false>());
    };

    // Scores: 4 position tiles x KS dim steps, in dim order.
    float sc[4][4];
    auto scores = [&](auto fast_path, auto tile_path) {
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        sc[mt][0] = sc[mt][1] = sc[mt][2] = sc[mt][3] = 0.f;
        const bool staged = decltype(fast_path)::value || c0 + 16 * mt + 16 <= n;  // warp-uniform
        // Else the rows by position: lane l gives ldmatrix the row of position l % 8 + 8 (l / 8 % 2);
        // where all 16 sit in shared memory (tree rows among the chunk's staged rows) ldmatrix
        // gathers them, else each lane loads its own fragment elements.
        const int i = lane / 8;  // matrices: (positions 0-7, dims 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)
        const bf16 *row_l = staged ? k_tile + (16 * mt + lane % 8 + 8 * (i % 2)) * S::ROW : key_of(16 * mt + lane % 8 + 8 * (i % 2));
        const bool gathered = staged || decltype(tile_path)::value || __all_sync(0xffffffffu, __isShared(row_l));
        const bf16 *row_g = gathered ? nullptr : key_of(16 * mt + g), *row_g8 = gathered ? nullptr : key_of(16 * mt + g + 8);
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
          unsigned a[4];
          if (gathered) {
            ldmatrix_x4(a, row_l + 16 * ks + 8 * (i / 2));
          } else {
            a[0] = ld32(row_g + 16 * ks + 2 * tq);
            a[1] = ld32(row_g8 + 16 * ks + 2 * tq);
            a[2] = ld32(row_g + 16 * ks + 2 * tq + 8);
            a[3] = ld32(row_g8 + 16 * ks + 2 * tq + 8);
          }
          const bf16 *qb = qw + g * S::ROW + 16 * ks + 2 * tq;
          mma_16816(sc[mt], a[0], a[1], a[2], a[3], ld32(qb), ld32(qb + 8));
        }
      }
    };
    by_path(scores);

    // Softmax a head over the chunk (lane (g, t): heads 2t, 2t + 1 at positions 16 mt + g (+ 8)):
    // scores in log2 units, -inf past the end; the max and the sum in a fixed order (the lane's
    // positions in order, then the butterfly over g).
    float m2[2], l2[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = NEG_INF;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float &x = sc[mt][2 * half + h];
          x = c0 + 16 * mt + g + 8 * half < end ? x * scale_log2 : NEG_INF;
          m = fmaxf(m, x);
        }
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      float l = 0.f;  // finite m: position c0 <= p is valid
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float w = exp2f(sc[mt][2 * half + h] - m);  // 0 past the end
          l += w;
          pw[(2 * tq + h) * (CHUNK + PPAD) + 16 * mt + g + 8 * half] = __float2bfloat16_rn(w);
        }
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
      m2[h] = m;
      l2[h] = l;
    }
    __syncwarp();

    // Values: O^T = V^T P^T over 4 position steps in order, KS dim tiles.
    float acc[KS][4];
#pragma unroll
    for (int md = 0; md < KS; ++md) acc[md][0] = acc[md][1] = acc[md][2] = acc[md][3] = 0.f;
    auto values = [&](auto fast_path, auto tile_path) {
#pragma unroll
      for (int kp = 0; kp < 4; ++kp) {
        const bf16 *pb = pw + g * (CHUNK + PPAD) + 16 * kp + 2 * tq;
        const unsigned b0 = ld32(pb), b1 = ld32(pb + 8);
        if (!decltype(fast_path)::value && c0 + 16 * kp >= end) break;  // weights 0 from here on (warp-uniform)
        // Staged and valid, or every row in shared memory: ldmatrix .trans from each position's row
        // (lane l: position l % 8 + 8 (l / 16)); matrices (pos 0-7, dims 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15).
        const int i = lane / 8;
        const bool staged = decltype(fast_path)::value || c0 + 16 * kp + 16 <= min(n, end);
        const bf16 *row = (staged ? v_tile + (16 * kp + lane % 8 + 8 * (i / 2)) * S::ROW
                                  : value_of(16 * kp + lane % 8 + 8 * (i / 2))) + 8 * (i % 2);
        if (staged || decltype(tile_path)::value || __all_sync(0xffffffffu, __isShared(row))) {
#pragma unroll
          for (int md = 0; md < KS; ++md) {
            unsigned a[4];
            ldmatrix_x4_trans(a, row + 16 * md);
            mma_16816(acc[md], a[0], a[1], a[2], a[3], b0, b1);
          }
        } else {  // lane by lane: positions 2t, 2t + 1, 2t + 8, 2t + 9 of the step, dims g, g + 8
          const bf16 *v0 = value_of(16 * kp + 2 * tq), *v1 = value_of(16 * kp + 2 * tq + 1);
          const bf16 *v8 = value_of(16 * kp + 2 * tq + 8), *v9 = value_of(16 * kp + 2 * tq + 9);
#pragma unroll
          for (int md = 0; md < KS; ++md) {
            const int d = 16 * md + g;
            mma_16816(acc[md], pack2(v0[d], v1[d]), pack2(v0[d + 8], v1[d + 8]), pack2(v8[d], v9[d]),
                      pack2(v8[d + 8], v9[d + 8]), b0, b1);
          }
        }
      }
    };
    by_path(values);

    // Partials of the item's heads below G: lane (g, t) holds heads 2t, 2t + 1 at dims 16 md + g (+ 8).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int head = hp * HN + 2 * tq + h;
      if (head >= G) continue;
      const long long slot = ((long long)kh * nchunks + c) * Q + (long long)t * G + head;
      if (g == 0) {
        part_ml[slot * 2] = m2[h];
        part_ml[slot * 2 + 1] = l2[h];
      }
#pragma unroll
      for (int md = 0; md < KS; ++md) {
        part_acc[slot * HD + 16 * md + g] = __float2bfloat16_rn(acc[md][h]);
        part_acc[slot * HD + 16 * md + g + 8] = __float2bfloat16_rn(acc[md][2 + h]);
      }
    }
    __syncwarp();  // qw and pw are rewritten by the next item
  }

  if constexpr (Block::merges) {
    // Who merges (attention_merge.cuh's merge_role).
    const int is_last = merge_role(counters + kh * gridDim.z + blockIdx.z, c, nchunks, mergers, by_position);
    if (!is_last) return;

    merge_chunks<HD, CHUNK>(part_ml, part_acc, out, q_pos, t0, t1, G, kh, nchunks, Q, H, is_last - 1, mergers,
                            Block::threads());
  }
}

