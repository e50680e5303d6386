"""Bitwise fingerprints of the AWQ kernels' outputs, to compare two builds of them (NOTES v245):

    PYTHONPATH=. python3 paper_figures/awq_output_hash.py > hashes.json   # in each tree, then diff

awq_gemm on the 70B o, qkv and down and awq_swiglu on its gate_up, M = 1, 8, 16, bf16 and fp16
x: seeded random codes, zeros, scales and x (kernel_ops.random_awq), each output's SHA-256. Then
the norm epilogues (awq_norms, NOTES v251): o and down with the residual and the next RMSNorm
(out, the next x in x's dtype, the sums), and qkv consuming o's next x and sums. Two builds whose
every line matches wrote the same bits."""
import hashlib
import json

import torch

from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_swiglu
from swiftspec_core.kernels.awq_norms import NextNorm, awq_gemm_norms, norm_sums

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672), "gate_up_swiglu": (57344, 8192)}
DTYPES = (torch.bfloat16, torch.float16)


def fingerprint(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().cpu().view(torch.int32 if t.dtype == torch.float32 else torch.int16)
                          .numpy().tobytes()).hexdigest()[:16]


hashes = {}
weights = {}
for op, (n, k) in SHAPES.items():
    torch.manual_seed(0)
    weights[op] = w = random_awq(n, k)
    for m in (1, 8, 16):
        for dtype in DTYPES:
            x = torch.randn(m, k, device="cuda").to(dtype)
            out = awq_swiglu(x, w) if op.endswith("swiglu") else awq_gemm(x, w)
            torch.cuda.synchronize()
            hashes[f"{op} m{m} {str(dtype).removeprefix('torch.')}"] = fingerprint(out)

for m in (1, 8, 16):
    for dtype in DTYPES:
        name = str(dtype).removeprefix("torch.")
        nexts = {}
        for op in ("o", "down"):
            n, k = SHAPES[op]
            torch.manual_seed(m)
            x, h = torch.randn(m, k, device="cuda").to(dtype), torch.randn(m, n, device="cuda").to(torch.bfloat16)
            g = (torch.rand(n, device="cuda") + 0.5).to(torch.bfloat16)
            nexts[op] = nxt = NextNorm(g, torch.empty(m, n, dtype=dtype, device="cuda"), norm_sums(n, "cuda"))
            awq_gemm_norms(x, weights[op], out=h, residual=h, next_norm=nxt)
            torch.cuda.synchronize()
            hashes[f"{op} norms m{m} {name}: out, next x, sums"] = ", ".join(
                fingerprint(t) for t in (h, nxt.x, nxt.sums[:, :m]))
        o_next = nexts["o"]
        out = awq_gemm_norms(o_next.x, weights["qkv"], row_sums=o_next.sums, eps=1e-5)
        torch.cuda.synchronize()
        hashes[f"qkv norms m{m} {name}"] = fingerprint(out)
print(json.dumps(hashes, indent=1))
