"""On GPU: CUDA-graph forwards equal eager ones, and every decoder stays lossless through them."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import perturbed, prompt, target_state, tiny_args
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.models.weights import build_engine
from swiftspec_core.runtime.graphs import PaddedForward
from swiftspec_core.tree import tree_mask

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
