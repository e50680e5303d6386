"""Bitwise fingerprints of the AWQ kernels' outputs, to compare two builds of them (NOTES v245):

    PYTHONPATH=. python3 paper_figures/awq_output_hash.py > hashes.json   # in each tree, then diff

awq_gemm on the 70B o, qkv and down and awq_swiglu on its gate_up, M = 1, 8, 16, bf16 and fp16
x: seeded random codes, zeros, scales and x (kernel_ops.random_awq), each output's SHA-256. Two
builds whose every line matches wrote the same bits."""
import hashlib
import json

import torch

from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_swiglu

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672), "gate_up_swiglu": (57344, 8192)}

hashes = {}
for op, (n, k) in SHAPES.items():
    torch.manual_seed(0)
    w = random_awq(n, k)
    for m in (1, 8, 16):
        for dtype in (torch.bfloat16, torch.float16):
            x = torch.randn(m, k, device="cuda").to(dtype)
            out = awq_swiglu(x, w) if op.endswith("swiglu") else awq_gemm(x, w)
            torch.cuda.synchronize()
            hashes[f"{op} m{m} {str(dtype).removeprefix('torch.')}"] = hashlib.sha256(out.cpu().view(torch.int16).numpy().tobytes()).hexdigest()[:16]
print(json.dumps(hashes, indent=1))
