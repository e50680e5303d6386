"""On GPU: CUDA-graph forwards equal eager ones, and every decoder stays lossless through them; on
two GPUs, a split swiftspec round equals lockstep and TP 2 equals TP 1 (the worker pool: CuPy NCCL,
graphs, compiled blocks), in fp32 and in bf16."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import perturbed, prompt, target_state, tiny_args
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.models.loading import load_engine
from swiftspec_core.models.weights import build_engine
from swiftspec_core.graphs import PaddedForward
from swiftspec_core.runtime.service import WorkerPlan, WorkerPool
from swiftspec_core.tree import tree_mask
from test_runtime import needs_2_gpus

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def gpu_engine(state, dtype=torch.float32):
    return build_engine(tiny_args(), {k: v.float() for k, v in state.items()}, dtype=dtype, device="cuda",
                        max_seq_len=1024)


def test_graph_forward_equals_eager():
    model = gpu_engine(target_state())
    cache_a, cache_b = model.new_cache(128), model.new_cache(128)
    graphed = PaddedForward(model, cache_a, 8, 8, graph=True)
    n = 20
    for cache in (cache_a, cache_b):
        model(torch.arange(n, device="cuda"), torch.arange(n, device="cuda"), torch.arange(n, device="cuda"),
              torch.ones(n, n, dtype=torch.bool, device="cuda").tril(), cache)
        cache.length = n
    for size in (1, 5, 8):  # fresh random trees each time
        parents = [-1] + [int(torch.randint(0, i, ())) for i in range(1, size)]
        visible = [[n]]
        for i in range(1, size):
            visible.append(visible[parents[i]] + [n + i])
        tokens, rows = torch.randint(0, 384, (size,)).tolist(), list(range(n, n + size))
        with torch.inference_mode():
            for _, logits in graphed.graphs.values():
                logits.fill_(float("nan"))  # poison: the replay must write every row we read
        got = graphed(tokens, rows, rows, n, visible).clone()
        ref = model(torch.tensor(tokens, device="cuda"), torch.tensor(rows, device="cuda"),
                    torch.tensor(rows, device="cuda"), tree_mask(n, n + size, visible, "cuda"), cache_b)
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(cache_a.k[:, n:n + size], cache_b.k[:, n:n + size], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("system", ["chain", "tree", "swiftspec"])
def test_decoders_lossless_with_graphs(system):
    base = target_state()
    target, draft = gpu_engine(base), gpu_engine(perturbed(base, 0.3))
    p = prompt()
    ref = DECODERS["ar"](target, None, p, max_new_tokens=48, eos_ids=set())
    got = DECODERS[system](target, draft, p, max_new_tokens=48, eos_ids=set(), settings=SpecSettings(draft_steps=2))
    assert got.tokens == ref.tokens


def test_compiled_blocks_equal_eager():
    state = {k: v.float() for k, v in target_state().items()}
    eager = build_engine(tiny_args(), state, dtype=torch.bfloat16, device="cuda", max_seq_len=256, compile=False)
    fused = build_engine(tiny_args(), state, dtype=torch.bfloat16, device="cuda", max_seq_len=256, compile=True)
    assert fused.compiled and not eager.compiled
    n = 30
    args = (torch.randint(0, 384, (n,), device="cuda"), torch.arange(n, device="cuda"), torch.arange(n, device="cuda"),
            torch.ones(n, n, dtype=torch.bool, device="cuda").tril())
    ref, got = eager(*args, eager.new_cache(64)), fused(*args, fused.new_cache(64))
    assert ((got - ref).norm() / ref.norm()).item() < 1e-2  # bf16: one rounding here and there


# Across two GPUs, through WorkerPool as `swiftspec-bench run --split 1+1 / --tp 2` runs them. The
# draft (tiny-qwen2) differs from the target (tiny-llama), so rounds reject and accept.
POOL_SETTINGS = SpecSettings(tree_bs=6, tree_w=4, draft_steps=2)
POOL_PROMPTS = [[5, 9, 33, 70, 12, 4, 99], [200, 3, 3, 17]]
POOL_TOKENS = 40
# A bf16 divergence is a near tie when the fp32 target's top-2 logit margin at its position is
# below this fraction of its largest logit: bf16 keeps 8 significant bits, and two forwards of
# different widths (ar's 1, tree's bs) round differently; on the tiny preset they differ by up to
# ~1.6 * 2^-8 of the logit scale, and its margins go down to ~2e-3 of it (CPU, 14 positions).
BF16_NEAR_TIE = 2 ** -5


def pool_decode(system: str, dtype: str, world: int, split: tuple[int, int] | None = None) -> list:
    plan = WorkerPlan(system=system, target="tiny-llama", draft="tiny-qwen2", weights="random", dtype=dtype, seed=0,
                      max_seq_len=512, settings=POOL_SETTINGS)
    pool = WorkerPool(plan, world_size=world, device="cuda", split=split)
    try:
        return [pool.decode(p, max_new_tokens=POOL_TOKENS, eos_ids=set(), timeout=600)[0] for p in POOL_PROMPTS]
    finally:
        pool.close()


def pool_engine(spec: str, dtype: str):
    """The engine a pool worker builds, here on cuda:0 in this process (TP 1)."""
    return load_engine(spec, weights="random", dtype=getattr(torch, dtype), device="cuda", seed=0, max_seq_len=512)


def in_process(system: str, dtype: str) -> list:
    target = pool_engine("tiny-llama", dtype)
    draft = pool_engine("tiny-qwen2", dtype) if system != "ar" else None
    return [DECODERS[system](target, draft, p, max_new_tokens=POOL_TOKENS, eos_ids=set(), settings=POOL_SETTINGS)
            for p in POOL_PROMPTS]


@needs_2_gpus
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_split_round_on_two_gpus_equals_lockstep(dtype):
    # The split runs lockstep's forwards at lockstep's widths (the same graphs), the draft's on
    # its own GPU, and the link carries only token ids: equal in bf16 too, accepted lengths included.
    got, ref = pool_decode("swiftspec", dtype, 2, split=(1, 1)), in_process("swiftspec", dtype)
    for g, r in zip(got, ref):
        assert g.tokens == r.tokens and g.accepted == r.accepted
        assert g.draft_steps == POOL_SETTINGS.draft_steps and len(g.link_wait_s) == g.rounds


@needs_2_gpus
@pytest.mark.parametrize("system", ["ar", "tree"])
def test_tp2_under_graphs_equals_tp1_fp32(system):
    # TP 2 sums each row-parallel matmul's halves in an all-reduce: fp32 logits move by ~1e-7,
    # far below the tiny preset's smallest margins, so the greedy tokens are the same.
    got, ref = pool_decode(system, "float32", 2), in_process(system, "float32")
    target = in_process("ar", "float32")
    for g, r, t in zip(got, ref, target):
        assert g.tokens == r.tokens == t.tokens and g.accepted == r.accepted


def top2_margin(model, ids: list[int]) -> tuple[float, float]:
    """(top-1 minus top-2 logit, largest |logit|) of the next token after `ids`, eager."""
    n = len(ids)
    pos = torch.arange(n, device="cuda")
    logits = model(torch.tensor(ids, device="cuda"), pos, pos, torch.ones(n, n, dtype=torch.bool, device="cuda").tril(),
                   model.new_cache(n + 8))[-1].float()
    top = logits.topk(2).values
    return (top[0] - top[1]).item(), logits.abs().max().item()


@needs_2_gpus
def test_tp2_bf16_tree_equals_ar_up_to_near_ties():
    # In bf16 tree verifies bs tokens per forward and ar one: they round differently, so a near tie
    # may go either way (exact equality needs the kernels to be bitwise across widths). Any other
    # divergence is a real one and fails.
    ar, tree = pool_decode("ar", "bfloat16", 2), pool_decode("tree", "bfloat16", 2)
    fp32 = pool_engine("tiny-llama", "float32")
    for p, a, t in zip(POOL_PROMPTS, ar, tree):
        assert len(a.tokens) == len(t.tokens) == POOL_TOKENS
        first = next((i for i, (x, y) in enumerate(zip(a.tokens, t.tokens)) if x != y), None)
        if first is not None:
            margin, scale = top2_margin(fp32, p + a.tokens[:first])
            assert margin < BF16_NEAR_TIE * scale, f"prompt {p}: tree leaves ar at token {first}, margin {margin:.4g}"
