// The persistent kernel's shapes (Llama-3.2-1B's unless the launcher defines others: the GEMM phases
// take Llama-3-8B's too, the attention only the 1B's head_dim 64), its ring's and its shared
// memory's layout (cuda/persistent.cu includes it first; swiftspec_core/kernels/persistent.py's
// shared_bytes mirrors SMEM_BYTES). QBUF_BYTES: persistent_attention.cuh's, used only at expansion.
#ifndef HID
#define HID 2048
#endif
#ifndef FFN
#define FFN 8192
#endif
#ifndef QKV
#define QKV 3072  // q (32 heads), k and v (8 each), of 64
#endif
#define QKV_TILES (QKV / 16)
#define GATE_UP_TILES (2 * FFN / 16)  // gate_up's 16-row tiles (8 gate rows and their up rows each)
#define OUT_TILES (HID / 16)          // o's and down's 16-column tiles
#define WARPS 8  // compute warps; one more, the producer, issues the pages
// PAGE_K (k a page: 512 or 1024), DEPTH (ring slots) and MAX_M (rows, <= 16) come from the
// launcher (persistent.kernel_source prepends them); these are its defaults.
#ifndef PAGE_K
#define PAGE_K 1024
#endif
#ifndef TARGET
#define TARGET 0  // 1: the target build (persistent_target.cuh's attention; HID, FFN, QKV the 8B's, PLAIN_IO)
#endif
#ifndef TARGET_BYTES
#define TARGET_BYTES 0  // the target build: an attention item's shared memory (persistent.py's target_bytes)
#endif
#ifndef PLAIN_IO
#define PLAIN_IO 0  // 1: x0, attn and out in plain rows (persistent.cu's io), else in slices
#endif
#ifndef DEPTH
#define DEPTH 3
#endif
#ifndef MAX_M
#define MAX_M 8
#endif
#define PAGE_ROW (PAGE_K * 2 + 16)  // bytes: PAGE_K / 2 + 4 words, so rows sit 4 banks apart
#define PAGE_BYTES (16 * PAGE_ROW)
#define ITEM_PAGES (HID / PAGE_K)          // pages of a gate_up item
#define DOWN_PAGES (FFN / PAGE_K)          // pages of a down item
#define STEPS (PAGE_K / (16 * WARPS))      // k steps of 16 a warp takes in a page
// x rows of one page's k in shared memory (a slice), in whole 128-byte lines: at M = 9 a slice of
// 9 x 2064 bytes made slice 1 start off a line and each copy end mid-line, and x landed ~0.7 us
// later than at M = 8 (v182). A copy moves COPY_BYTES(M), the rows' lines (the tail: padding).
#define LINES(bytes) (((bytes) + 127) / 128 * 128)
#define SLICE_BYTES LINES(MAX_M * PAGE_ROW)
#define COPY_BYTES(m) LINES((m) * PAGE_ROW)
#define NT ((MAX_M + 7) / 8)            // n8 tiles of x rows a mma step: 1 at M <= 8, 2 to 16
#define PARTIAL_A_BYTES (2 * WARPS * NT * 32 * 16)  // two items' sums [warps][NT][32] float4
#define NORM_OFFSET (ITEM_PAGES * SLICE_BYTES + PARTIAL_A_BYTES)  // in the x / y region: g (with norm_w)
#define REGION_A (NORM_OFFSET + HID * 2)
#define Y_SLOTS 3  // down's x (y) streams through this many slices' slots (v174: all 8 need 264 KB at M 16)
#define REGION_B (Y_SLOTS * SLICE_BYTES)
#define REGION_AB (REGION_A > REGION_B ? REGION_A : REGION_B)
// Where o's and down's tiles add their warps' sums: over x's first slice once a block's only tile is
// done with it (the 1B: OUT_TILES <= SMs), else (more tiles than blocks, a block taking several) in
// phase A's partials, past every x slice and y slot, where ITEM_PAGES >= Y_SLOTS puts them (the
// launcher refuses more tiles than SMs otherwise: persistent.grid_blocks).
#define TILE_PART_OFFSET (ITEM_PAGES >= Y_SLOTS ? ITEM_PAGES * SLICE_BYTES : 0)
// An activation in global memory, row r and column c at (c / PAGE_K) slice + r row + c % PAGE_K: in
// slices ([K / PAGE_K][rows][PAGE_K + 8]: a slice is one bulk copy) or plain rows ([M][K]).
struct Rows {
  size_t slice;
  int row;
  __device__ __forceinline__ size_t at(int r, int c) const { return (c / PAGE_K) * slice + (size_t)r * row + c % PAGE_K; }
  __device__ __forceinline__ bool plain() const { return row != PAGE_K + 8; }
};
// ring, then x / y (or in phases S and R q's copy, in the target build phase T's items, from the region's start:
// x is read by then)
#define MAX3(a, b, c) ((a) > (b) ? ((a) > (c) ? (a) : (c)) : ((b) > (c) ? (b) : (c)))
#define SMEM_BYTES (DEPTH * PAGE_BYTES + MAX3(REGION_AB, QBUF_BYTES, TARGET_BYTES))
