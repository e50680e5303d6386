"""Can the persistent probe run in thread-block clusters? (NOTES v171; `PYTHONPATH=. python3
paper_figures/cluster_occupancy.py` on a GPU.)

Lead 1a after the twenty-sixth session merges the attention's chunks inside a cluster (distributed
shared memory and a cluster barrier instead of global partials and a grid barrier). The persistent
kernel holds one block an SM and waits at grid barriers, so every block of every cluster must be
resident at once, or it deadlocks. For cluster sizes 1..16 at the probe's shared memory this
prints the driver's cuOccupancyMaxActiveClusters and then launches that many clusters of a kernel
whose blocks meet at a grid barrier with a timeout: whether all arrived, on how many distinct SMs,
and the barrier's time. Size 16 needs the non-portable cluster attribute.
"""
from __future__ import annotations

import argparse
import ctypes

import numpy as np
import torch

from swiftspec_core.kernels import build

from swiftspec_core.kernels.persistent import SHARED_MAX, shared_bytes
from paper_figures.timing import fail, print_rows

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256, 1) meet(unsigned* arrived, unsigned* sms, unsigned long long* ns,
                                                          unsigned timeout_ns) {
  extern __shared__ unsigned char smem[];
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    sms[blockIdx.x] = sm;
    smem[0] = (unsigned char)sm;  // the dynamic shared memory is in use
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    atomicAdd(arrived, 1u);
    unsigned seen;
    do {
      asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(seen) : "l"(arrived) : "memory");
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (seen < gridDim.x && now - start < timeout_ns);
    ns[blockIdx.x] = now - start;
  }
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=int, default=shared_bytes(1024, 3, 8),
                        help="dynamic shared memory a block (default: the persistent probe's at 1024x3, M 8)")
    args = parser.parse_args()
    if not 0 < args.shared <= SHARED_MAX:
        fail(f"--shared takes 1..{SHARED_MAX} bytes (got {args.shared})")
    if not torch.cuda.is_available():
        fail("cluster_occupancy.py needs a GPU")
    fn = build.compile_source(SOURCE).get_function("meet")
    handle = ctypes.c_void_p(fn.kernel.ptr)
    try:
        build.set_function_attribute(fn.kernel.ptr, build.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, args.shared)
        build.set_function_attribute(fn.kernel.ptr, build.FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
    except RuntimeError as err:
        fail(str(err))
    stream = torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for cluster in (1, 2, 4, 8, 16):
        count = ctypes.c_int(0)
        config = build.launch_config((cluster * (sms // cluster),), (256,), args.shared, stream, False, cluster)
        err = build._driver().cuOccupancyMaxActiveClusters(ctypes.byref(count), handle, ctypes.byref(config))
        row = {"cluster": cluster, "max active clusters": count.value if not err else f"CUresult {err}",
               "blocks": cluster * count.value if not err else "", "all met": "", "distinct SMs": "",
               "barrier us (median)": ""}
        if not err and count.value:
            blocks = cluster * count.value
            arrived = torch.zeros(1, dtype=torch.int32, device="cuda")
            on_sm = torch.zeros(blocks, dtype=torch.int32, device="cuda")
            ns = torch.zeros(blocks, dtype=torch.int64, device="cuda")
            try:
                build.launch_ex(fn.kernel.ptr, (blocks,), (256,), (build.ptr(arrived), build.ptr(on_sm), build.ptr(ns),
                                np.uint32(50_000_000)), args.shared, stream, False, cluster)
            except RuntimeError:
                row["all met"] = "launch failed"
            else:
                torch.cuda.synchronize()
                row["all met"] = int(arrived.item()) == blocks and bool((ns < 50_000_000).all())
                row["distinct SMs"] = len(set(on_sm.tolist()))
                row["barrier us (median)"] = float(ns.float().median()) / 1e3
        rows.append(row)
    print(f"Clusters of the persistent probe's blocks: 256 threads, {args.shared} bytes of dynamic shared "
          f"memory, one block an SM ({sms} SMs); a grid barrier with a 50 ms timeout\n")
    print_rows(rows)


if __name__ == "__main__":
    main()
