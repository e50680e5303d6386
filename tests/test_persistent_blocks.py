"""A layer's o_proj and MLP block on the persistent kernel inside the fused forward
(swiftspec_core/kernels/persistent_blocks.py): on the CPU, which models and widths it takes and its
rings (the wiring: test_fused_forward.py); on a GPU (skipped without one), at Llama-3-8B's layer
shapes, the kernel against its reference on fresh inputs with its outputs poisoned, a row's bits
whatever the width and its neighbours, and every decoder emitting exactly fused ar's tokens."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from engine_fixtures import VOCAB, perturbed, prompt, target_state, tiny_args
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.kernels import persistent_blocks as pb
from swiftspec_core.kernels.persistent import LLAMA_8B, SHARED_MAX, STATIC_RESERVE, shared_bytes
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine


def eight_b_args(layers: int = 1) -> ModelArgs:
    """Llama-3-8B's layer shapes (the kernel's), a few layers and a small vocabulary."""
    return ModelArgs(dim=4096, n_layers=layers, n_heads=32, n_kv_heads=8, head_dim=128, ffn_dim=14336,
                     vocab_size=VOCAB, norm_eps=1e-5, rope_theta=500000.0, rope_scaling=None, qkv_bias=False,
                     tie_embeddings=False, max_position=2048)


def fake(args: ModelArgs, device="cuda", dtype=torch.bfloat16, tp: int = 1):
    return SimpleNamespace(args=args, device=torch.device(device), dtype=dtype, group=SimpleNamespace(size=tp))


def test_it_takes_llama_3_8b_shapes_in_bf16_on_one_gpu_at_widths_to_16():
    assert pb.unsupported(fake(eight_b_args()), 8) is None
    assert pb.unsupported(fake(dataclasses.replace(eight_b_args(), qkv_bias=True)), 16) is None  # qkv is ours
    assert "GPU" in pb.unsupported(fake(eight_b_args(), device="cpu"), 8)
    assert "bfloat16" in pb.unsupported(fake(eight_b_args(), dtype=torch.float32), 8)
    assert "one GPU" in pb.unsupported(fake(eight_b_args(), tp=2), 8)
    assert "one GPU" in pb.unsupported(fake(dataclasses.replace(eight_b_args(), quant="awq")), 8)
    assert "built for" in pb.unsupported(fake(tiny_args()), 8)
    assert "width" in pb.unsupported(fake(eight_b_args()), 17)


def test_each_width_gets_the_deepest_ring_that_fits():
    for width in range(1, 17):
        depth = pb.ring_depth(width)
        assert shared_bytes(pb.PAGE_K, depth, width, LLAMA_8B) + STATIC_RESERVE <= SHARED_MAX
        deeper = [d for d in pb.DEPTHS if d > depth]
        assert all(shared_bytes(pb.PAGE_K, d, width, LLAMA_8B) + STATIC_RESERVE > SHARED_MAX for d in deeper)
    assert [pb.ring_depth(w) for w in (1, 8, 9, 13, 14, 16)] == [4, 4, 3, 3, 2, 2]


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def random_layers(layers: int, seed: int = 0) -> SimpleNamespace:
    """A model-like object of random Llama-3-8B-shaped o_proj and MLP weights (what PersistentBlocks
    reads), on the GPU."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = eight_b_args(layers)

    def w(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen, device="cuda") * scale).to(torch.bfloat16)

    blocks = [SimpleNamespace(wo=w(a.dim, a.dim, scale=a.dim ** -0.5), w_gate_up=w(2 * a.ffn_dim, a.dim, scale=a.dim ** -0.5),
                              w_down=w(a.dim, a.ffn_dim, scale=a.ffn_dim ** -0.5), mlp_norm=1 + 0.1 * w(a.dim))
              for _ in range(layers)]
    return SimpleNamespace(args=a, device=torch.device("cuda"), dtype=torch.bfloat16, group=SimpleNamespace(size=1),
                           layers=blocks)


def run_blocks(model, i: int, h: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """Layer i's blocks at h's width, every buffer the launch writes poisoned (NaN) first."""
    blocks = pb.PersistentBlocks(model, h.shape[0])
    for t in (blocks.outs, blocks.mid, blocks.y):
        t.fill_(float("nan"))
    return blocks(i, h, attn).clone()


@gpu
@pytest.mark.parametrize("width", [1, 8, 12, 16])
def test_the_blocks_are_their_reference_on_fresh_inputs(width):
    model = random_layers(2)
    gen = torch.Generator(device="cuda").manual_seed(width)
    for i in range(2):
        h, attn = (torch.randn(width, 4096, generator=gen, device="cuda").to(torch.bfloat16) for _ in range(2))
        got = run_blocks(model, i, h, attn)
        ref = pb.blocks_reference(model.layers[i], h, attn, model.args.norm_eps)
        assert not got.isnan().any()
        err = ((got.float() - ref.float()).norm(dim=1) / ref.float().norm(dim=1)).max().item()
        assert err < 1e-2, f"layer {i}, width {width}: relative error {err:.3g}"  # bf16 roundings, fp32 order


@gpu
def test_a_rows_result_does_not_depend_on_the_width_or_its_neighbours():
    model = random_layers(1)
    gen = torch.Generator(device="cuda").manual_seed(7)
    h, attn = (torch.randn(16, 4096, generator=gen, device="cuda").to(torch.bfloat16) for _ in range(2))
    alone = run_blocks(model, 0, h[3:4], attn[3:4])[0]
    for width, at in ((8, 5), (12, 0), (16, 15)):
        rows = torch.roll(torch.arange(16, device="cuda"), at - 3)[:width]  # row 3 at `at`, others around it
        got = run_blocks(model, 0, h[rows].contiguous(), attn[rows].contiguous())
        assert torch.equal(got[at], alone), f"width {width}, row {at}"


def gpu_engine(state: dict):
    return build_engine(eight_b_args(), {k: v.float() for k, v in state.items()}, dtype=torch.bfloat16, device="cuda",
                        max_seq_len=1024, compile=False, kernels="fused")


@gpu
@pytest.mark.parametrize("system", ["chain", "tree", "swiftspec"])
def test_decoders_emit_exactly_fused_ars_tokens_with_the_blocks(system):
    base = target_state(0, 0.5, eight_b_args())
    target, draft = gpu_engine(base), gpu_engine(perturbed(base, 0.3))
    p = prompt(16) * 2
    ref = DECODERS["ar"](target, None, p, max_new_tokens=40, eos_ids=set())
    got = DECODERS[system](target, draft, p, max_new_tokens=40, eos_ids=set(), settings=SpecSettings(draft_steps=2))
    assert "_persistent_blocks" in target.__dict__, "the fused forward did not run the persistent blocks"
    assert got.tokens == ref.tokens
