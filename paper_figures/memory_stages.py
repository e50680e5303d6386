"""Where an in-process engine's GPU memory goes, stage by stage: allocated now, the peak since the
stage before, and what the caching allocator holds (nvidia-smi's number, about), after the model
is loaded, after its engine is built (the kernel set's layout), after the warm-up that captures
its graphs, and after one decode. Session 40 saw the AWQ Llama-3-70B's ar at 72.6 GB a process
for about 40 GB of weights.

    python3 paper_figures/memory_stages.py llama-3-70b --quant awq [--kernels fused] [--prompt 200] [--tokens 32]

Random weights (the real shape); bf16 on the GPU.
"""
from __future__ import annotations

import argparse

import torch

from swiftspec_bench.systems import SYSTEMS, LoadedPair, run_query
from swiftspec_core.decoders.base import WARMUP_PROMPT, WARMUP_TOKENS, SpecSettings
from swiftspec_core.models.loading import load_model


def stage(name: str) -> None:
    torch.cuda.synchronize()
    gb = lambda b: f"{b / 1e9:7.2f}"  # noqa: E731
    print(f"{name:<34} allocated {gb(torch.cuda.memory_allocated())} GB  peak {gb(torch.cuda.max_memory_allocated())}"
          f"  reserved {gb(torch.cuda.memory_reserved())}", flush=True)
    torch.cuda.reset_peak_memory_stats()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--quant", default="none")
    p.add_argument("--kernels", default="fused")
    p.add_argument("--prompt", type=int, default=200, help="prompt tokens of the timed decode")
    p.add_argument("--tokens", type=int, default=32)
    a = p.parse_args()
    dtype = torch.bfloat16
    stage("start")
    target = load_model(a.model, weights="random", dtype=dtype, device="cuda", quant=a.quant)
    stage("loaded")
    pair = LoadedPair(target, None, dtype=dtype, device="cuda", max_seq_len=a.prompt + a.tokens + 64,
                      kernels=a.kernels, quant=a.quant)
    engine, _ = pair.models_for(SYSTEMS["ar"])
    held = sum(t.nbytes for t in engine.state_dict().values())
    stage(f"engine built ({held / 1e9:.2f} GB held)")
    settings = SpecSettings()
    run_query("ar", pair, WARMUP_PROMPT, max_new_tokens=WARMUP_TOKENS, eos_ids=set(), settings=settings)
    stage("warm-up (graphs captured)")
    prompt = [1 + i % 1000 for i in range(a.prompt)]
    result, seconds = run_query("ar", pair, prompt, max_new_tokens=a.tokens, eos_ids=set(), settings=settings)
    stage(f"decode ({len(result.tokens)} tokens, {seconds:.2f} s)")


if __name__ == "__main__":
    main()
