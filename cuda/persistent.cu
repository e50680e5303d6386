// A persistent kernel of a forward's layers (swiftspec_core/kernels/persistent.py lays out what it
// reads; paper_figures/persistent_mlp.py measures it, NOTES v149-v196): Llama-3.2-1B's shapes (H =
// 2048, F = 8192), its GEMM phases also Llama-3-8B's, and the target build all of the 8B's
// (persistent_shapes.cuh), M <= 16 rows, bf16 in and out, fp32 sums. One launch, one block an SM;
// a layer runs these phases (those present), a grid barrier (a counter) after each:
//   Q (paged_qkv): qkv = rmsnorm(h) @ Wqkv^T (items_phase, 16 rows a tile); with k_cache its epilogue
//      puts q with RoPE into qbuf and k, v into the caches (persistent_attention.cuh);
//   S, R (k_cache): the attention's items (kv head, chunk of 64 positions) page their chunk's k and v
//      rows like weights (a chunk holding this step's rows only after Q's barrier) and write
//      partials; R merges them, a warp a q row, into attn; or in the target build (TARGET: Llama-3-8B's
//      shapes, persistent_target.cuh) T and M, the fused forward's own attention items and merge;
//   O (attn): mid = h + attn @ Wo^T (tile_phase: tiles b, b + G, .., K = H); h becomes mid;
//   A: y = swiglu(x @ Wgu^T) (items_phase: a tile is gate rows 8a .. and their up rows), x = h, with
//      norm_w rmsnorm(h): each x slice becomes bf16(h * g) in shared memory as the first item reaches
//      it, and r scales the sums in the epilogue;
//   B: out = y @ Wd^T (tile_phase: columns 16c .., K = F), with norm_w + h; y's slices stream through
//      Y_SLOTS slots, a slice a page (a block's tiles one after another: y's slices again for each).
// Pages: 16 weight rows x PAGE_K k (32 KB) in rows padded to PAGE_ROW bytes (8 ldmatrix rows hit
// distinct banks), one bulk copy of the page's image laid out on the host (persistent.paged),
// streamed through a ring of DEPTH slots in one sequence over every layer and phase by a producer
// warp (the block's last; persistent_pages.cuh), as each slot's empty barrier says the WARPS
// compute warps are done with it; `deep` lets it run across barriers, else a phase's pages wait for
// that phase's barrier. Warp w sums its STEPS k steps of each page (one or two n8 tiles of x rows),
// the warps' sums added in warp order. A phase's x lands after its barrier in slices (the M rows of
// one page's k, [M][PAGE_K + 8], in global memory in slots of M rounded up to 8 rows), a bulk copy
// and an mbarrier each (persistent.sliced()). Row-invariant by construction: a row's sums
// run in an order fixed by the shapes and G (rows past M computed from other rows' x and dropped);
// the probe checks it bitwise and the outputs against torch.
#include "common.cuh"
#include "mma.cuh"
#include "rope.cuh"

// The shapes first (the others use them), then the ring's traffic, the attention, the page sequence.
// staged.cuh before the target build's text, whose headers include it too (each header is inlined once).
#include "staged.cuh"
#include "persistent_shapes.cuh"
#include "persistent_ring.cuh"
#if TARGET
#include "persistent_target.cuh"
#endif
#include "persistent_attention.cuh"
#include "persistent_pages.cuh"

extern "C" __global__ void __launch_bounds__((WARPS + 1) * 32, 1)
persistent_layers(const bf16* __restrict__ x0, const bf16* __restrict__ paged_gate_up, const bf16* __restrict__ paged_down,
               bf16* y, bf16* out, unsigned* counters, int layers, int M, int deep,
               const bf16* __restrict__ norm_w, float eps, bf16* attn,
               const bf16* __restrict__ paged_o, bf16* mid, const bf16* __restrict__ paged_qkv,
               const bf16* __restrict__ norm_qkv,
               bf16* qkv, bf16* k_cache, bf16* v_cache, const float* __restrict__ rope_cos,
               const float* __restrict__ rope_sin, bf16* qbuf, float* part_ml, float* part_o, const long long* __restrict__ block,
               int block_cols, int chunks, int span, int cache_rows, float scale_log2, unsigned long long* stamps,
               const __grid_constant__ TensorMap k_map, const __grid_constant__ TensorMap v_map) {
  extern __shared__ __align__(128) unsigned char smem[];
  // The ring's slots' full barriers, x's slices', g's, then the slots' empty barriers.
  __shared__ __align__(8) unsigned long long bars[DEPTH + DOWN_PAGES + 1 + DEPTH];
  __shared__ int page_limit;  // thread 0 raises it at each phase's start: the producer issues pages below it
  __shared__ float row_squares[MAX_M];  // a normalized phase's x rows' sums of squares
  __shared__ unsigned masks[MAX_M * MASK_WORDS];  // with the attention: the tokens' tree masks,
  __shared__ int tok_at[2][MAX_M];                // positions and cache rows (every layer's)
  __shared__ int tree_info[2];  // tree0 (the shared prefix's rows) and first_new (the step's first row)
  __shared__ int lowest_row;    // first_new's minimum, taken by atomicMin
#if TARGET
  __shared__ int merge_positions[MAX_M];  // phase M's: the tokens' positions
#endif
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = gridDim.x, b = blockIdx.x;
  const unsigned ring = shared_address(smem), xs = ring + DEPTH * PAGE_BYTES;
  const unsigned bar0 = shared_address(bars), xbar = bar0 + 8 * DEPTH;  // slice s's: xbar + 8 s
  const unsigned gbar = xbar + 8 * DOWN_PAGES, empty0 = gbar + 8;  // slot s's empty barrier: empty0 + 8 s
  float* partial = reinterpret_cast<float*>(smem + DEPTH * PAGE_BYTES + ITEM_PAGES * SLICE_BYTES);  // [2][warps][NT][32][4]
  // A slice in x0, y, out, mid, attn: M rows of PAGE_K + 8 in a slot of M rounded up to 8 rows (8 x 2064
  // bytes = 129 x 128: every slice's bulk copy starts 128-byte aligned; at M = 9 they did not, v178).
  const size_t slice_elems = (size_t)((M + 7) / 8 * 8) * (PAGE_K + 8);
  // x0, attn and out in slices too, or with PLAIN_IO in rows [layers][M][HID] as our other kernels
  // keep them (the target build's: kernels/persistent_target.py); y and mid always in slices.
  const Rows sliced{slice_elems, PAGE_K + 8}, io = PLAIN_IO ? Rows{PAGE_K, HID} : sliced;
  const size_t io_layer = PLAIN_IO ? (size_t)M * HID : ITEM_PAGES * slice_elems;  // x0's, attn's, out's layers apart

  const int items_a = (GATE_UP_TILES - b + G - 1) / G;  // items b, b + G, .. below GATE_UP_TILES
  const int items_q = paged_qkv != nullptr ? (QKV_TILES - b + G - 1) / G : 0;  // qkv tiles b, b + G, ..
  const int pages_q = ITEM_PAGES * items_q;
  // With the attention (k_cache): its items (kv head, chunk) b, b + G, .., a page each (the chunk's k
  // and v rows). A chunk holding this step's rows (from first_new on) is written by phase Q: its page
  // must not be issued before Q's barrier (late); pages past it wait with it (first_late: set once
  // the tree is read, below).
  const bool attention = !TARGET && k_cache != nullptr;  // the draft's attention (persistent_attention.cuh)
  const bool target = TARGET && k_cache != nullptr;      // the target build's (persistent_target.cuh)
  const int items_s = attention ? (KV_HEADS * chunks - b + G - 1) / G : 0, pages_s = items_s;
  int first_late = items_s;
  const int items_out = (OUT_TILES - b + G - 1) / G;  // o's and down's tiles b, b + G, ..
  const int items_o = attn != nullptr ? items_out : 0, pages_o = ITEM_PAGES * items_o;  // o_proj: K = H
  const int pages_a = ITEM_PAGES * items_a, pages_b = DOWN_PAGES * items_out;
  const int per_layer = pages_q + pages_s + pages_o + pages_a + pages_b;  // a layer's pages: qkv, attention, o, gate_up, down
  const int total = layers * per_layer;
  if (M > MAX_M || (TILE_PART_OFFSET == 0 && OUT_TILES > G)) return;  // the launcher keeps to both

  const PageSequence seq{paged_qkv, paged_o, paged_gate_up, paged_down, &k_map, &v_map, b, G, chunks,
                         pages_q, pages_s, pages_o, pages_a, per_layer};
  // At a phase's start (thread 0): the producer may issue pages below its end (shallow), or deep as
  // far as the first late page of layer `from` on (none without the attention).
  auto raise_limit = [&](int from, int phase_end) {
    const int deep_end = first_late < items_s ? min(total, from * per_layer + pages_q + first_late) : total;
    store_release(&page_limit, deep ? deep_end : phase_end);
  };
  // x of a phase in slices, by warp 0 (load_slices). Bit s of x_parity: the phase of slice s's
  // mbarrier the next phase that loads it waits for.
  unsigned x_parity = 0;
  auto load_x = [&](const bf16* src, int slices, Rows from) { load_slices(xs, xbar, src, slices, from, M, lane); };

  if (threadIdx.x == 0) {
    block_stamps(stamps, b, 0);  // the block's start (the end's: below)
    init_barriers(bar0, empty0);
    page_limit = 0;
  }
  if (attention) stage_tree(block, block_cols, M, masks, tok_at, tree_info, &lowest_row);  // read at every layer's S and Q epilogues
  __syncthreads();  // the last barrier of all (WARPS + 1) warps: the compute warps use compute_sync
  const int tree0 = attention ? tree_info[0] : 0;
  for (int i = items_s - 1; i >= 0; --i)
    if (CHUNK * ((b + i * G) % chunks) + CHUNK > tree_info[1]) first_late = i;

  if (warp == WARPS) {  // the producer
    if (lane == 0) produce(seq, total, ring, bar0, empty0, &page_limit);
    return;
  }

  const int g = lane >> 2, t = lane & 3;
  // ldmatrix rows of this lane: A (x4) row r + 8 (i & 1) at k + 8 (i >> 1); B (x2) x row l % 8 at k + 8 (l / 8 % 2).
  const int ai = lane >> 3, a_off = ((lane & 7) + 8 * (ai & 1)) * PAGE_ROW + 16 * (ai >> 1);
  const int bx_k = 8 * ((lane >> 3) & 1);
  // x row of this lane in n8 tile nt: 8 nt + lane % 8; rows past M (their sums dropped) read row 0 in
  // tile 0 (one address: a broadcast) and row lane % 8 past it (8 rows 2064 bytes apart: distinct
  // banks; row 0 beside row 8 was a two-way conflict, v178).
  int bx_row[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) bx_row[nt] = 8 * nt + (lane & 7) < M ? 8 * nt + (lane & 7) : nt > 0 ? (lane & 7) : 0;
  int q = 0;  // the next page to compute
  // Page q's sums against x slice `slice` into d (this warp's STEPS k steps of it), once both have
  // landed; then this warp arrives on the slot's empty barrier (page q + DEPTH goes there once all
  // have). No block barrier: the warps go at their own pace, the ring between them and the producer.
  // --timeline (thread 0, gm set): a GEMM phase's marks, its first page consumed (by warp 0), its
  // last page landed and consumed, the clock64 cycles it waited on slices and pages, and when its
  // first x slice (and with the norm g) had landed (persistent_timeline.py's GEMM_MARKS).
  unsigned barrier_count = 0;  // grid barriers passed
  unsigned long long* gm = nullptr;
  long long waited = 0;
  int phase_page = 0, phase_pages = 0;
  bool x_marked = false;
  auto mark_x = [&]() {  // thread 0 past its first wait on an x slice in this phase
    if (gm != nullptr && !x_marked) gm[4] = global_ns(), x_marked = true;
  };
  auto gemm_marks = [&](int pages) {
    x_marked = false;
    gm = threadIdx.x == 0 ? phase_marks(stamps, barrier_count) : nullptr;
    waited = 0, phase_page = 0, phase_pages = pages;
  };
  auto consume = [&](float (&d)[NT][4], int slice) {
    const long long t0 = gm != nullptr ? clock64() : 0;
    mbar_wait(xbar + 8 * slice, (x_parity >> slice) & 1);
    mark_x();
    mbar_wait(bar0 + 8 * (q % DEPTH), (q / DEPTH) & 1);
    if (gm != nullptr) {
      waited += clock64() - t0;
      if (phase_page == phase_pages - 1) gm[1] = global_ns();
    }
    const unsigned page = ring + (q % DEPTH) * PAGE_BYTES, x_slice = xs + slice * SLICE_BYTES;
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
      const int k = 16 * (STEPS * warp + s);
      unsigned a[4];
      ldmatrix_x4_at(a, page + a_off + 2 * k);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        unsigned b0, b1;
        ldmatrix_x2(b0, b1, x_slice + bx_row[nt] * PAGE_ROW + 2 * (k + bx_k));
        mma_16816(d[nt], a[0], a[1], a[2], a[3], b0, b1);
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty0 + 8 * (q % DEPTH));
    if (gm != nullptr) {
      if (phase_page == 0) gm[0] = global_ns();
      if (phase_page == phase_pages - 1) gm[2] = global_ns(), gm[3] = waited;
      ++phase_page;
    }
  };
  // A phase of 16-column tiles (o_proj, down): block b sums tiles b, b + G, .. (`items` of them, of
  // `pages` pages each, one an x slice) into d, its warps' sums in order, and warp 0 writes dst =
  // bf16(sum), plus the residual (bf16 + bf16, rounded once: torch's add) where given (laid out as
  // res_at and dst_at say).
  // Warp 0's lanes own rows 2t, 2t + 1 and columns 16c + g, + 8 of tile c (one slice: 16 | PAGE_K);
  // the residual's elements are read before the page loop, their latency under it (v156 -> v157).
  // streamed (down's y): x's slices stream through Y_SLOTS slots (load_x put the first Y_SLOTS
  // there), the tiles' sweeps one stream (slice p of tile i is its (i pages + p)-th use), else all
  // are in place.
  auto tile_phase = [&](int items, int pages, const bf16* residual_src, Rows res_at, bf16* dst, Rows dst_at,
                        const bf16* streamed) {
    float4* part = reinterpret_cast<float4*>(smem + DEPTH * PAGE_BYTES + TILE_PART_OFFSET);
    for (int i = 0; i < items; ++i) {
      const int col = 16 * (b + i * G) + g;
      bf16 residual[NT][4];  // rows 8 nt + 2t, + 1 (r0, r1) at columns col, col + 8
      if (residual_src != nullptr && warp == 0) {
        const bf16* hl = residual_src + res_at.at(0, col);
        const bf16 zero = __float2bfloat16(0.f);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int row = 8 * nt + 2 * t;
          const size_t r0 = (size_t)row * res_at.row, r1 = r0 + res_at.row;
          residual[nt][0] = row < M ? hl[r0] : zero, residual[nt][1] = row < M ? hl[r0 + 8] : zero;
          residual[nt][2] = row + 1 < M ? hl[r1] : zero, residual[nt][3] = row + 1 < M ? hl[r1 + 8] : zero;
        }
      }
      float d[NT][4] = {};
      if (streamed == nullptr) {
        for (int p = 0; p < pages; ++p, ++q) consume(d, p);
      } else {  // use j in slot j % Y_SLOTS; once every warp is done with it, use j + Y_SLOTS there
        for (int p = 0; p < pages; ++p, ++q) {
          const int j = i * pages + p, slot = j % Y_SLOTS;
          consume(d, slot);
          x_parity ^= 1u << slot;
          if (j + Y_SLOTS >= items * pages) continue;
          compute_sync();  // every warp done with the slot
          if (threadIdx.x == 0) {  // the slot only read since its copy: no fence
            mbar_expect(xbar + 8 * slot, COPY_BYTES(M));
            bulk_copy(xs + slot * SLICE_BYTES, streamed + (j + Y_SLOTS) % pages * slice_elems, COPY_BYTES(M),
                      xbar + 8 * slot);
          }
        }
      }
      // Every warp done with x (TILE_PART_OFFSET 0: its first slice takes the sums), and warp 0 with
      // the last tile's sums (the others may start this tile's pages before it is).
      compute_sync();
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) part[(warp * NT + nt) * 32 + lane] = make_float4(d[nt][0], d[nt][1], d[nt][2], d[nt][3]);
      compute_sync();
      if (warp == 0) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const float4 v = warps_sum(part, nt, lane);
          auto add = [&](float sum, int e) {
            const bf16 o = __float2bfloat16(sum);
            return residual_src == nullptr ? o : __float2bfloat16(__bfloat162float(residual[nt][e]) + __bfloat162float(o));
          };
          const int row = 8 * nt + 2 * t;
          bf16* dl = dst + dst_at.at(row, col);
          if (row < M) dl[0] = add(v.x, 0), dl[8] = add(v.z, 1);
          if (row + 1 < M) dl[dst_at.row] = add(v.y, 2), dl[dst_at.row + 8] = add(v.w, 3);
        }
      }
    }
    if (streamed == nullptr) x_parity ^= (1u << pages) - 1;
  };
  // A phase of 16-row tiles over K = H (qkv, gate_up): this block's `items` tiles b, b + G, .. in
  // ITEM_PAGES pages each, the warps' sums added in warp order. With g (the RMSNorm's weight, [H])
  // x slice h becomes bf16(x * g) in place once it has landed, just before the first item's page h
  // reads it, warp r adding row r's squares of x, slices in order, and r scales the sums in the
  // epilogue (as gemm_tile.cuh's row_scale). swiglu: a tile is 8 gate rows and their 8 up rows
  // (gate_up), written as silu(gate) * up to y's slices; else 16 consecutive rows, written to dst
  // [M][QKV]. g lands beside x by one bulk copy (v155: read by scalar loads, ~+5 us a layer).
  unsigned g_uses = 0;
  auto items_phase = [&](int items, const bf16* g_src, bool swiglu, bf16* dst, int layer) {
    if (threadIdx.x == 0 && g_src != nullptr) {
      mbar_expect(gbar, HID * 2);
      bulk_copy(xs + NORM_OFFSET, g_src, HID * 2, gbar);
    }
    float squares[NT] = {};  // rows warp, warp + 8 (to M)
    auto normalize = [&](int h) {
      if (h == 0) mbar_wait(gbar, g_uses & 1);
      mbar_wait(xbar + 8 * h, (x_parity >> h) & 1);
      mark_x();
#pragma unroll
      for (int j = 0; j < NT; ++j)
        if (warp + WARPS * j < M)
          squares[j] += scale_row<PAGE_K>(
              reinterpret_cast<bf16x8*>(smem + DEPTH * PAGE_BYTES + h * SLICE_BYTES + (warp + WARPS * j) * PAGE_ROW),
              reinterpret_cast<const bf16x8*>(smem + DEPTH * PAGE_BYTES + NORM_OFFSET) + h * PAGE_K / 8);
      compute_sync();  // the slice normalized before any warp reads it
    };
    // Item i's outputs from its sums (each warp's in partial buffer i % 2): 64 NT of them, one a
    // thread of a run of 2 NT warps that moves on by item (mma lane l's g and t in n8 tile nt, token
    // 8 nt + 2t + e: tile rows g and g + 8), each adding the eight warps' sums in warp order, while
    // the other warps go on to item i + 1 (its sums go to the other buffer; item i + 2's wait for
    // item i + 1's block barrier, which these reach only after). (One warp for all of them lagged
    // at two n8 tiles, and its slots' releases with it: v182, v183.)
    auto epilogue = [&](int i, const float4* sums) {
      const int et = (threadIdx.x + 64 * NT * i) % (WARPS * 32);
      if (et >= 64 * NT) return;
      const int nt = et / 64, l = et / 2 % 32, e = et % 2, gl = l >> 2, tok = 8 * nt + 2 * (l & 3) + e;
      const float4 v = warps_sum(sums, nt, l);
      float vg = e ? v.y : v.x, vg8 = e ? v.w : v.z;  // tile rows gl and gl + 8 at token tok
      if (tok >= M) return;
      if (g_src != nullptr) {
        const float r = 1.f / sqrtf(row_squares[tok] / (float)HID + eps);
        vg *= r, vg8 *= r;
      }
      if (swiglu) {  // gate column 8a + gl, y in slices as phase B loads it
        const int col = 8 * (b + i * G) + gl;
        dst[sliced.at(tok, col)] = silu_times(__float2bfloat16(vg), __float2bfloat16(vg8));
      } else {  // rows gl and gl + 8 of tile c (16c + gl, + 8; with the attention qkv_tile_row's)
        const int c = b + i * G;
        const bf16 xg = __float2bfloat16(vg), xg8 = __float2bfloat16(vg8);
        dst[tok * QKV + (attention ? qkv_tile_row(c, gl) : 16 * c + gl)] = xg;
        dst[tok * QKV + (attention ? qkv_tile_row(c, gl + 8) : 16 * c + gl + 8)] = xg8;
        if (attention)
          qkv_to_attention(c, gl, tok, xg, xg8, tok_at[0][tok], tok_at[1][tok], rope_cos, rope_sin, qbuf,
                           k_cache + (size_t)layer * cache_rows * KV_HEADS * HD,
                           v_cache + (size_t)layer * cache_rows * KV_HEADS * HD);
      }
    };
    for (int i = 0; i < items; ++i) {
      float d[NT][4] = {};
      for (int h = 0; h < ITEM_PAGES; ++h, ++q) {
        if (g_src != nullptr && i == 0) normalize(h);
        consume(d, h);
      }
      float4* sums = reinterpret_cast<float4*>(partial) + (i & 1) * WARPS * NT * 32;  // [warps][NT][32]
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) sums[(warp * NT + nt) * 32 + lane] = make_float4(d[nt][0], d[nt][1], d[nt][2], d[nt][3]);
      if (g_src != nullptr && i == 0) {  // item 0 normalized every slice: the rows' squares are whole
#pragma unroll
        for (int j = 0; j < NT; ++j)
          if (warp + WARPS * j < M && lane == 0) row_squares[warp + WARPS * j] = squares[j];
      }
      compute_sync();
      epilogue(i, sums);
    }
    if (items == 0) {  // x (and g) landed all the same: their copies must be done before the next reuse
      if (g_src != nullptr)
        for (int h = 0; h < ITEM_PAGES; ++h) normalize(h);
      else
        for (int h = 0; h < ITEM_PAGES; ++h) mbar_wait(xbar + 8 * h, (x_parity >> h) & 1);
    }
    if (g_src != nullptr) ++g_uses;
    x_parity ^= (1u << ITEM_PAGES) - 1;
  };
  for (int l = 0; l < layers; ++l) {
    const size_t layer_slices = (size_t)l * ITEM_PAGES * slice_elems, layer_io = l * io_layer;  // mid's; x0's, attn's, out's
    const bf16* hidden = l == 0 ? x0 : out + layer_io - io_layer;  // the layer's input h (laid out as io)
    Rows hidden_at = io;
    if (paged_qkv != nullptr) {  // Phase Q: qkv[l] = rmsnorm(hidden) @ Wqkv[l]^T (the attention's input; not read on)
      if (threadIdx.x == 0) raise_limit(l, l * per_layer + pages_q);
      if (warp == 0) load_x(hidden, ITEM_PAGES, hidden_at);
      gemm_marks(pages_q);
      items_phase(items_q, norm_qkv + (size_t)l * HID, false, qkv + (size_t)l * M * QKV, l);
      grid_barrier(counters, barrier_count++, stamps);
    }
#if TARGET
    if (target) {  // Phase T: the attention's items; then phase M: their merge into attn[l]
      const size_t cache_layer = (size_t)l * cache_rows * T_KV * T_HD;
      target_attention_phase(smem + DEPTH * PAGE_BYTES, b, G, qkv + (size_t)l * M * QKV, block, block_cols, rope_cos,
                             rope_sin, k_cache + cache_layer, v_cache + cache_layer, part_ml,
                             reinterpret_cast<bf16*>(part_o), M, span, cache_rows, scale_log2);
      grid_barrier(counters, barrier_count++, stamps);
      target_merge_phase(b, G, part_ml, reinterpret_cast<const bf16*>(part_o), attn + layer_io, block, block_cols, M,
                         span, merge_positions);
      grid_barrier(counters, barrier_count++, stamps);
    }
#endif
    if (attention) {  // Phase S: the attention's items; then phase R: the merge into attn[l]'s slices
      const unsigned q_smem = xs;  // qbuf's copy (Q's x, partials and g are read by now)
      if (threadIdx.x == 0) {
        raise_limit(l + 1, l * per_layer + pages_q + pages_s);
        if (items_s) copy_q(q_smem, qbuf, b, G, chunks, items_s, xbar);
      }
      unsigned long long* marks = phase_marks(stamps, barrier_count);  // S: q, the first chunk, its item's steps
      if (items_s) {
        mbar_wait(xbar, x_parity & 1);
        mark(marks, 0);
        attention_items(items_s, b, G, chunks, ring, bar0, empty0, q_smem, q, tree0, masks, scale_log2, part_ml,
                        part_o, marks);
        x_parity ^= 1u;
      }
      grid_barrier(counters, barrier_count++, stamps);
      merge_phase(part_ml, part_o, chunks, M, attn + layer_io, io, phase_marks(stamps, barrier_count));  // phase R
      grid_barrier(counters, barrier_count++, stamps);
    }
    if (attn != nullptr) {  // Phase O: mid[l] = h + attn[l] @ Wo[l]^T; the MLP block then runs on mid[l]
      if (threadIdx.x == 0) raise_limit(l + 1, l * per_layer + pages_q + pages_s + pages_o);
      if (warp == 0 && pages_o) load_x(attn + layer_io, ITEM_PAGES, io);
      gemm_marks(pages_o);
      if (items_o) tile_phase(items_o, ITEM_PAGES, hidden, hidden_at, mid + layer_slices, sliced, nullptr);
      grid_barrier(counters, barrier_count++, stamps);
      hidden = mid + layer_slices, hidden_at = sliced;
    }
    // Phase A: y[l] = swiglu(x @ Wgu[l]^T), x = hidden (with o: mid[l]; with norm_w normalized).
    if (threadIdx.x == 0) raise_limit(l + 1, l * per_layer + pages_q + pages_s + pages_o + pages_a);
    if (warp == 0) load_x(hidden, ITEM_PAGES, hidden_at);
    gemm_marks(pages_a);
    items_phase(items_a, norm_w == nullptr ? nullptr : norm_w + (size_t)l * HID, true, y + l * DOWN_PAGES * slice_elems, l);
    grid_barrier(counters, barrier_count++, stamps);

    // Phase B: out[l] = y[l] @ Wd[l]^T (with norm_w + hidden).
    if (threadIdx.x == 0) raise_limit(l + 1, (l + 1) * per_layer);
    if (warp == 0 && pages_b) load_x(y + l * DOWN_PAGES * slice_elems, Y_SLOTS, sliced);  // the rest as slots free
    gemm_marks(pages_b);
    if (pages_b)
      tile_phase(items_out, DOWN_PAGES, norm_w != nullptr ? hidden : nullptr, hidden_at, out + layer_io, io,
                 y + l * DOWN_PAGES * slice_elems);
    grid_barrier(counters, barrier_count++, stamps);
  }
  if (threadIdx.x == 0) {
    block_stamps(stamps, b, 4);
    grid_reset(counters);  // for the next launch
  }
}
