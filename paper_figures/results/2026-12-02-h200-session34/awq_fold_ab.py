"""Two forms of the fp16-operand kernels' fold, timed against the tree's at 73da00c (NOTES v214), one
H200; a record of call 4, which ran it from paper_figures/ at that commit (its text replacements
match that commit's cuda/awq_gemm.cu only):

    PYTHONPATH=. python3 paper_figures/awq_fold_ab.py [--ops o,qkv,down,gate_up] [--rounds 3]

Session 34's call 2 ran awq_gemm_f16 with the zero taken as bf16 128 + zero and adjusted in fp32,
and odd tiles' scales divided by 16 each group ("c2"); call 3's tree takes the zero as fp16 1024 +
c zero and divides odd tiles' sums once at the store (no spills in the r16 g32 clusters), and its
isolated down row ran 36.3 us where call 2's ran 33.7. Here both (and "zero-bf16": call 3's store
with call 2's zero) are built from this tree's text and timed at M = 8 with fp16 x, rounds
alternating, plan()'s S, PDL on (the raw launches of awq_fp16_probe.py). Bits are not checked
(the forms differ only in exact power-of-two steps); times only. Random weights."""
from __future__ import annotations

import argparse
import statistics

import torch

from awq_fp16_probe import SHAPES, launcher
from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import plan
from swiftspec_core.models.args import awq_bytes

ZERO_NOW = '''        if (j == 2) both = permute(both, 0u, 0x4321u);  // both >> 8: tiles 2, 3 (in place, as the codes)
        const unsigned zero_pair = nibbles_fp16(both, j);
        z_g = __half2float(__ushort_as_half((unsigned short)zero_pair));
        z_g8 = __half2float(__ushort_as_half((unsigned short)(zero_pair >> 16)));'''
ZERO_BF16 = '''        const unsigned zero_pair = nibbles_plus_128(both, j);
        z_g = __uint_as_float(zero_pair << 16), z_g8 = __uint_as_float(zero_pair & 0xFFFF0000u);
        if (j & 1) z_g = fmaf(16.f, z_g, -1024.f), z_g8 = fmaf(16.f, z_g8, -1024.f);
        else z_g += 896.f, z_g8 += 896.f;'''
SCALE_NOW = "      const float s_g = scale_of(word, half_shift), s_g8 = scale_of(word8, half_shift);"
SCALE_C2 = ("      float s_g = scale_of(word, half_shift), s_g8 = scale_of(word8, half_shift);\n"
            "      if (kF16 && (j & 1)) s_g *= 0.0625f, s_g8 *= 0.0625f;")
UNIT_NOW = "  const float unit = kF16 && (j & 1) ? 0.0625f : 1.f;  // exact"
UNIT_C2 = "  const float unit = 1.f;"
VARIANTS = {"now": [], "zero-bf16": [(ZERO_NOW, ZERO_BF16)],
            "c2": [(ZERO_NOW, ZERO_BF16), (SCALE_NOW, SCALE_C2), (UNIT_NOW, UNIT_C2)]}


def module(replacements):
    code = build.source("awq_gemm")
    for old, new in replacements:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return build.compile_source(code)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default="o,qkv,down,gate_up")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    modules = {name: module(r) for name, r in VARIANTS.items()}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| op | " + " | ".join(VARIANTS) + " |  (us, M = 8, fp16 x, median of rounds; random weights)")
    print("|---|" + "---|" * len(VARIANTS))
    for op in args.ops.split(","):
        n, k = SHAPES[op]
        splits, _ = plan(n, k, 128, sms)
        copies = input_copies(awq_bytes(n * k, 128))
        ws = [random_awq(n, k) for _ in range(copies)]
        x = torch.randn(8, k, device="cuda").to(torch.float16)
        out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)
        times = {name: [] for name in VARIANTS}
        for r in range(args.rounds):
            for name in (list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))):
                calls = [launcher(modules[name], x, w, out, splits) for w in ws]
                times[name].append(time_calls(lambda i: calls[i % copies](), max(CALLS, copies)))
        print(f"| {op} | " + " | ".join(f"{statistics.median(t):.2f} ({min(t):.2f}-{max(t):.2f})" for t in times.values())
              + " |", flush=True)
        ws.clear()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
