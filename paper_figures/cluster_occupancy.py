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

from paper_figures.persistent_layouts import shared_bytes
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
CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14  # CU_FUNC_ATTRIBUTE_
MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CU_FUNC_ATTRIBUTE_


def cluster_config(blocks: int, cluster: int, shared: int, stream: int):
    """A launch configuration of `blocks` blocks of 256 threads in clusters of `cluster` (the
    attribute's value union starts with clusterDim {x, y, z})."""
    config = build.launch_config((blocks,), (256,), shared, stream, pdl=False)
    attr = config.keep
    attr.id = CLUSTER_DIMENSION
    ctypes.memmove(ctypes.addressof(attr.value), (ctypes.c_uint * 3)(cluster, 1, 1), 12)
    config.num_attrs = 1
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=int, default=shared_bytes(1024, 3, 8),
                        help="dynamic shared memory a block (default: the persistent probe's at 1024x3, M 8)")
    args = parser.parse_args()
    if not 0 < args.shared <= 227 * 1024:
        fail(f"--shared takes 1..{227 * 1024} bytes (got {args.shared})")
    if not torch.cuda.is_available():
        fail("cluster_occupancy.py needs a GPU")
    driver = build._driver()
    fn = build.compile_source(SOURCE).get_function("meet")
    handle = ctypes.c_void_p(fn.kernel.ptr)
    for attribute, value in ((MAX_DYNAMIC_SHARED_SIZE_BYTES, args.shared), (NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)):
        if driver.cuFuncSetAttribute(handle, attribute, value):
            fail(f"cuFuncSetAttribute({attribute}, {value}) failed")
    stream = torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for cluster in (1, 2, 4, 8, 16):
        count = ctypes.c_int(0)
        config = cluster_config(cluster * (sms // cluster), cluster, args.shared, stream)
        err = driver.cuOccupancyMaxActiveClusters(ctypes.byref(count), handle, ctypes.byref(config))
        row = {"cluster": cluster, "max active clusters": count.value if not err else f"CUresult {err}",
               "blocks": cluster * count.value if not err else "", "all met": "", "distinct SMs": "",
               "barrier us (median)": ""}
        if not err and count.value:
            blocks = cluster * count.value
            arrived = torch.zeros(1, dtype=torch.int32, device="cuda")
            on_sm = torch.zeros(blocks, dtype=torch.int32, device="cuda")
            ns = torch.zeros(blocks, dtype=torch.int64, device="cuda")
            values = [build.ptr(arrived), build.ptr(on_sm), build.ptr(ns), np.uint32(50_000_000)]
            params = [ctypes.c_uint64(int(v)) if isinstance(v, np.uint64) else ctypes.c_uint32(int(v)) for v in values]
            pointers = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
            launch = cluster_config(blocks, cluster, args.shared, stream)
            if driver.cuLaunchKernelEx(ctypes.byref(launch), handle, pointers, None):
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
