// A block's page sequence in the persistent probe and the producer warp that issues it
// (cuda/persistent.cu includes it after persistent_attention.cuh).
// A layer's pages, in order: qkv's tiles b, b + G, .. (ITEM_PAGES each), the attention's items
// (kv head, chunk) b, b + G, .. (a page each: the chunk's k rows, then its v rows), o's tiles b,
// b + G, .. (ITEM_PAGES each), gate_up's tiles b, b + G, .., down's tiles b, b + G, .. (DOWN_PAGES
// each); the same every layer.
// A CUtensorMap (the driver's, 128 opaque bytes; cuda.h is not at hand under NVRTC), a kernel
// parameter (__grid_constant__): build.tensor_map_tiled encodes it on the host.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

struct PageSequence {
  const bf16 *qkv, *o, *gate_up, *down;  // page images
  const TensorMap *k_map, *v_map;  // the caches [L][rows][KV][HD] as 4-D maps, boxes [64 dims, 1 head, 64 rows, 1 layer]
  int b, G, chunks;
  int pages_q, pages_s, pages_o, pages_a, per_layer;  // a layer's pages of qkv, the attention, o, gate_up

  // Page q into its ring slot (ring: the slots' shared-window address; full0: slot 0's full barrier):
  // one bulk copy of the page's image (persistent.paged(): a tile's 16 rows of PAGE_K,
  // padding included), or the attention item's two tensor copies (its kv head's 64 rows of k, of v;
  // rows past the cache's end land as zeros). (A page as 16 copies, one a row, was 1.5x slower
  // (v150, v151); its code went with it: NOTES v166.)
  __device__ __forceinline__ void issue(int q, unsigned ring, unsigned full0) const {
    const int l = q / per_layer, j = q % per_layer, slot = q % DEPTH;
    const unsigned dst = ring + slot * PAGE_BYTES, bar = full0 + 8 * slot;
    if (pages_q <= j && j < pages_q + pages_s) {
      const int it = b + (j - pages_q) * G, kh = it / chunks, c = it % chunks;
      const unsigned tile = chunk_tile(dst);
      mbar_expect(bar, 2 * KV_CHUNK_BYTES);
      tensor_copy_4d(tile, k_map, 0, kh, CHUNK * c, l, bar);
      tensor_copy_4d(tile + KV_CHUNK_BYTES, v_map, 0, kh, CHUNK * c, l, bar);
      return;
    }
    const int jo = j - pages_q - pages_s, ja = jo - pages_o;  // page j of o's, of gate_up's (then down's)
    const bf16* images;
    int tiles, tile, tile_pages, page;  // the weight's tiles a layer, this page's tile, a tile's pages, its page
    if (j < pages_q)
      images = qkv, tiles = QKV_TILES, tile = b + (j / ITEM_PAGES) * G, tile_pages = ITEM_PAGES, page = j % ITEM_PAGES;
    else if (jo < pages_o)
      images = o, tiles = OUT_TILES, tile = b + (jo / ITEM_PAGES) * G, tile_pages = ITEM_PAGES, page = jo % ITEM_PAGES;
    else if (ja < pages_a)
      images = gate_up, tiles = GATE_UP_TILES, tile = b + (ja / ITEM_PAGES) * G, tile_pages = ITEM_PAGES,
      page = ja % ITEM_PAGES;
    else
      images = down, tiles = OUT_TILES, tile = b + ((ja - pages_a) / DOWN_PAGES) * G, tile_pages = DOWN_PAGES,
      page = (ja - pages_a) % DOWN_PAGES;
    mbar_expect(bar, PAGE_BYTES);
    bulk_copy(dst, images + (((size_t)l * tiles + tile) * tile_pages + page) * (PAGE_BYTES / 2), PAGE_BYTES, bar);
  }
};

// The producer warp's lane 0: pages 0 .. total - 1 in order, each once it is below *page_limit
// (thread 0 raises it at each phase's start) and its slot's last use is done (the slot's empty
// barrier: every compute warp arrives after its k steps of a page). (Issued by thread 0 after a
// block barrier a page, a page cost issue + compute + barrier in series: NOTES v178-v180.)
__device__ __forceinline__ void produce(const PageSequence& seq, int total, unsigned ring, unsigned full0,
                                        unsigned empty0, const int* page_limit) {
  int limit = 0;
#pragma unroll 1
  for (int p = 0; p < total; ++p) {
    if (p >= limit) {
      while (p >= (limit = load_acquire(page_limit))) __nanosleep(64);
      // A late page reads what other blocks wrote before the grid barrier thread 0 passed before
      // raising the limit (the caches' new rows): ordered for the copy's (async) proxy.
      fence_async_global();
    }
    // No proxy fence: the slot was only read (ldmatrix) since its last copy; the empty barrier's
    // arrivals (release) order those reads first, as CUTLASS's TMA pipelines release a stage.
    if (p >= DEPTH) mbar_wait(empty0 + 8 * (p % DEPTH), (p / DEPTH - 1) & 1);
    seq.issue(p, ring, full0);
  }
}
