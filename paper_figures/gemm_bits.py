"""The bf16 GEMM kernels' outputs on fixed inputs, written to a file, and two such files compared: does
a change to cuda/gemm_tile.cuh keep every bit? (A kernel version's A/B runs this once per version,
each in its own process, with the other version's cuda/ and its launch modules, kernels/gemm.py and
gemm_epilogue.py, swapped in between: session 13's call 1 swapped cuda/ alone, which kept the bits
comparable but voided the timings, NOTES v66.)

    PYTHONPATH=. python3 paper_figures/gemm_bits.py dump OUT.pt [--models llama-3-8b,llama-3.2-1b]
    PYTHONPATH=. python3 paper_figures/gemm_bits.py compare A.pt B.pt

dump: each model's qkv, o, down and lm_head through gemm, gate_up through gemm_swiglu, and where the
model's width allows (forward.NORMS_IN_GEMMS_MAX_DIM) qkv and gate_up with the norm inside, at M = 1,
8 and 16, on seeded random bf16 operands (one GPU, TP 1). compare: one line a case, the number of
elements that differ; exit 1 if any does."""
from __future__ import annotations

import argparse
import sys

import torch

from swiftspec_bench.kernel_shapes import gemm_shape, shard_args
from swiftspec_core.kernels.forward import NORMS_IN_GEMMS_MAX_DIM
from swiftspec_core.kernels.gemm import gemm
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu


def cases(model: str):
    """(name, [N, K], with the norm inside) of one model's projections at TP 1."""
    args = shard_args(model, 1)
    for projection in ("qkv", "o", "gate_up", "down", "lm_head"):
        yield projection, gemm_shape(args, projection)[:2], False
        if projection in ("qkv", "gate_up") and args.dim <= NORMS_IN_GEMMS_MAX_DIM:
            yield projection + "+norm", gemm_shape(args, projection)[:2], True


@torch.inference_mode()
def dump(path: str, models: list[str]) -> None:
    out = {}
    for model in models:
        for name, (n, k), with_norm in cases(model):
            g = torch.Generator(device="cuda").manual_seed(n * 7 + k)
            w = (torch.randn(n, k, generator=g, device="cuda") / k ** 0.5).to(torch.bfloat16)
            norm = ((1 + 0.1 * torch.randn(k, generator=g, device="cuda")).to(torch.bfloat16), 1e-5) if with_norm else None
            for m in (1, 8, 16):
                x = torch.randn(m, k, generator=g, device="cuda").to(torch.bfloat16)
                y = gemm_swiglu(x, w, norm=norm) if name.startswith("gate_up") else gemm(x, w, norm=norm)
                out[f"{model} {name} m{m}"] = y.cpu()
    torch.save(out, path)
    print(f"wrote {len(out)} outputs to {path}")


def compare(a_path: str, b_path: str) -> int:
    a, b = torch.load(a_path), torch.load(b_path)
    differ = 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"{key}: only in {a_path if key in a else b_path}")
            differ += 1
            continue
        n = int((a[key].view(torch.int16) != b[key].view(torch.int16)).sum())
        print(f"{key}: {n} of {a[key].numel()} elements differ")
        differ += n > 0
    print(f"{differ} of {len(set(a) | set(b))} cases differ")
    return 1 if differ else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--models", default="llama-3-8b,llama-3.2-3b,llama-3.2-1b")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args()
    if args.command == "dump":
        dump(args.out, args.models.split(","))
    else:
        sys.exit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
