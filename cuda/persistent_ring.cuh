// The persistent kernel's shared-memory traffic (cuda/persistent.cu includes it after its shapes):
// mbarriers and their setup, bulk and tensor copies and the proxy fences between them, x's slices'
// copies, the compute warps' block barrier, ldmatrix at shared-window addresses, a row of x times
// the norm's weight in place, the warps' sums added in order, and the grid barrier between phases
// with its timeline stamps and its reset.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra WAIT;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// A box of a tensor map (a __grid_constant__ parameter's address) at coordinates c0.. (innermost
// first) into shared memory at dst, signalling bar (the TMA's tiled mode).
template <typename Map>
__device__ __forceinline__ void tensor_copy_4d(unsigned dst, const Map* map, int c0, int c1, int c2, int c3,
                                               unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
      ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// Generic-proxy accesses before, async-proxy (bulk copy) accesses after.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// Thread 0, before the block's first barrier: the ring slots' full barriers, x's slices', g's (one
// arrival each: the copy's thread), then the slots' empty barriers (one arrival a compute warp).
__device__ __forceinline__ void init_barriers(unsigned bar0, unsigned empty0) {
  for (int s = 0; s <= DEPTH + DOWN_PAGES; ++s) mbar_init(bar0 + 8 * s, 1);
  for (int s = 0; s < DEPTH; ++s) mbar_init(empty0 + 8 * s, WARPS);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// By warp 0: M rows of x in `slices` slices at xs (one a page's k: [M][PAGE_K + 8] in shared
// memory), slice s signalling mbarrier xbar + 8 s, so a page waits only for its own slice: one copy
// a slice from slices in global memory, or from plain rows (`from`) a copy a row (its padding left
// as it was: never read), the copies spread over the warp's lanes (lane 0 sets every slice's bytes
// first; from thread 0 alone the 32 row copies at 8 rows landed ~1.9 us later: NOTES v196).
__device__ __forceinline__ void load_slices(unsigned xs, unsigned xbar, const bf16* src, int slices, Rows from, int M,
                                            int lane) {
  if (lane == 0)
    for (int s = 0; s < slices; ++s) mbar_expect(xbar + 8 * s, from.plain() ? M * PAGE_K * 2 : COPY_BYTES(M));
  __syncwarp();
  fence_async_shared();
  const int copies = from.plain() ? slices * M : slices;  // copy c: slice c / M, row c % M (plain), or slice c
  for (int c = lane; c < copies; c += 32) {
    if (from.plain()) {
      const int s = c / M, r = c % M;
      bulk_copy(xs + s * SLICE_BYTES + r * PAGE_ROW, src + from.at(r, s * PAGE_K), PAGE_K * 2, xbar + 8 * s);
    } else {
      bulk_copy(xs + c * SLICE_BYTES, src + from.at(0, c * PAGE_K), COPY_BYTES(M), xbar + 8 * c);
    }
  }
}

// The compute warps' block barrier (named barrier 1, WARPS x 32 threads): the producer warp
// (cuda/persistent.cu) takes no part once it runs its own loop.
__device__ __forceinline__ void compute_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(WARPS * 32) : "memory"); }
// mbarrier arrive (release at CTA scope: this thread's earlier shared-memory reads come before).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// A shared int handed between threads of the block (thread 0's page limit to the producer): a
// release store and an acquire load at CTA scope.
__device__ __forceinline__ void store_release(int* at, int v) {
  asm volatile("st.release.cta.shared.s32 [%0], %1;\n" ::"r"(shared_address(at)), "r"(v) : "memory");
}
__device__ __forceinline__ int load_acquire(const int* at) {
  int v;
  asm volatile("ld.acquire.cta.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(shared_address(at)) : "memory");
  return v;
}

__device__ __forceinline__ void ldmatrix_x2(unsigned& r0, unsigned& r1, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(address) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_at(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
}


// A row of x (K bf16 in shared memory) times g (its K weights) in place, by a warp: -> the row's
// sum of squares of x before the product (lanes' 16-byte vectors in order, then warp_sum).
template <int K>
__device__ __forceinline__ float scale_row(bf16x8* row, const bf16x8* g) {
  const int lane = threadIdx.x & 31;
  float part = 0.f;
#pragma unroll
  for (int i = 0; i < K / 256; ++i) {  // vectors lane, lane + 32, ..
    bf16x8 v = row[lane + 32 * i];
    const bf16x8 gv = g[lane + 32 * i];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = __bfloat1622float2(v.h[e]), gf = __bfloat1622float2(gv.h[e]);
      part = fmaf(f.x, f.x, part);
      part = fmaf(f.y, f.y, part);
      v.h[e] = __floats2bfloat162_rn(f.x * gf.x, f.y * gf.y);
    }
    row[lane + 32 * i] = v;
  }
  return warp_sum(part);
}

// The WARPS compute warps' sums of n8 tile nt, mma lane l (sums: [warps][NT][32] float4 in shared
// memory), added in warp order.
__device__ __forceinline__ float4 warps_sum(const float4* sums, int nt, int l) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int w = 0; w < WARPS; ++w) {
    const float4 p = sums[(w * NT + nt) * 32 + l];
    v.x += p.x, v.y += p.y, v.z += p.z, v.w += p.w;
  }
  return v;
}

#define STAMP_SLOTS 8  // a block's record at a barrier: arrival, fence, departure, then 5 marks

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Every block's compute warps arrive at barrier `e` (its (e + 1)-th) and wait for all G. With stamps (the
// probe's --timeline: [barriers + 1][G][STAMP_SLOTS], entry 0 the block's start), thread 0 writes
// the %globaltimer ns of its arrival, of its fence's end and of its departure at entry e + 1, and
// `mark` the phase's own moments in the slots after them (persistent_timeline.py). (The barrier by
// another warp than the bulk copies' thread 0 changed nothing: NOTES v163.)
__device__ __forceinline__ void grid_barrier(unsigned* arrived, unsigned e, unsigned long long* stamps) {
  compute_sync();
  if (threadIdx.x == 0) {
    unsigned long long* at = stamps == nullptr ? nullptr : stamps + STAMP_SLOTS * ((size_t)(e + 1) * gridDim.x + blockIdx.x);
    if (at != nullptr) at[0] = global_ns();
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    if (at != nullptr) at[1] = global_ns();
    atomicAdd(arrived, 1u);
    const unsigned target = (e + 1) * gridDim.x;
    unsigned seen;
    do asm volatile("ld.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(arrived) : "memory");
    while (seen < target);
    if (at != nullptr) at[2] = global_ns();
    fence_async_global();  // the y / out it acquired, read next by bulk copies
  }
  compute_sync();
}

// Thread 0 once every block has passed the last barrier (the last of the G to count itself here):
// the barrier counters reset for the next launch.
__device__ __forceinline__ void grid_reset(unsigned* counters) {
  if (atomicAdd(counters + 1, 1u) == gridDim.x - 1) {
    counters[0] = 0u;
    counters[1] = 0u;
    __threadfence();
  }
}

// Thread 0 of block b, with stamps (--timeline): the block's start in entry 0's slots 0..2 and its
// SM's clock there in slot 3 (at = 0), or its end and the clock there in slots 4, 5 (at = 4).
__device__ __forceinline__ void block_stamps(unsigned long long* stamps, int b, int at) {
  if (stamps == nullptr) return;
  unsigned long long* slots = stamps + STAMP_SLOTS * b;
  const unsigned long long now = global_ns();
  if (at == 0) slots[0] = slots[1] = slots[2] = now, slots[3] = clock64();
  else slots[4] = now, slots[5] = clock64();
}

// Mark k of the phase that ends at barrier e (thread 0; marks: nullptr, or its slots' start).
__device__ __forceinline__ unsigned long long* phase_marks(unsigned long long* stamps, unsigned e) {
  return stamps == nullptr ? nullptr : stamps + STAMP_SLOTS * ((size_t)(e + 1) * gridDim.x + blockIdx.x) + 3;
}
__device__ __forceinline__ void mark(unsigned long long* marks, int k) {
  if (marks != nullptr && threadIdx.x == 0) marks[k] = global_ns();
}
