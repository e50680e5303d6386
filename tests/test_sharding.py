"""Tensor-parallel sharding: exact layout in-process, and TP 2 / TP 3 engines equal TP 1 (gloo)."""
from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.distributed as dist

from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.sharding import PAD, head_layout, shard_state
from swiftspec_core.models.transformer import Transformer
from swiftspec_core.models.weights import build_engine, random_state, state_from_hf
from swiftspec_core.runtime.launch import run_workers


def llama_args(**changes) -> ModelArgs:
    # GQA 6 q / 2 kv heads; ffn 101 and vocab 257 divide by neither 2 nor 3.
    base = ModelArgs(dim=48, n_layers=2, n_heads=6, n_kv_heads=2, head_dim=8, ffn_dim=101, vocab_size=257,
                     norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, qkv_bias=False,
                     tie_embeddings=False, max_position=128)
    return base.with_(**changes)


def qwen2_case():
    """A tiny transformers Qwen2 (qkv bias, tied embeddings; 4 q heads pad to 6 on 3 ranks)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=70, vocab_size=203, tie_word_embeddings=True,
                      max_position_embeddings=128)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):  # initialised to zero: make them matter
                p.normal_(0.0, 0.5)
    return state_from_hf(model)


def cases():
    out = [("llama-gqa", llama_args(), random_state(llama_args(), torch.float32, seed=0))]
    a, s = qwen2_case()
    out.append(("qwen2", a, s))
    mqa = llama_args(dim=24, n_heads=3, n_kv_heads=1, ffn_dim=37, vocab_size=100, tie_embeddings=True)
    out.append(("llama-mqa", mqa, random_state(mqa, torch.float32, seed=1)))
    return out


def run_steps(model: Transformer, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A 7-token prefill then one decode step over the cache: [7, V] and [1, V] logits (on CPU)."""
    T, dev = 7, model.device
    tokens = torch.tensor([0, vocab - 1, 5, vocab // 2, 17, vocab - 2, 3], device=dev)  # every vocab shard
    cache = model.new_cache(16)
    rows = torch.arange(T, device=dev)
    prefill = model(tokens, rows, rows, torch.ones(T, T, dtype=torch.bool, device=dev).tril(), cache)
    cache.length = T
    step = torch.tensor([T], device=dev)
    decode = model(torch.tensor([vocab - 3], device=dev), step, step,
                   torch.ones(1, T + 1, dtype=torch.bool, device=dev), cache)
    return prefill.cpu(), decode.cpu()


def _tp_worker(rank, world_size, ctx):
    """Split 3+2: the 'target' group runs TP 3 and the 'draft' group TP 2, side by side."""
    tp = len(ctx.placement.tp_ranks(rank))
    assert ctx.group.size == tp
    mine = {name: run_steps(build_engine(a, s, dtype=torch.float32, group=ctx.group, max_seq_len=64),
                            a.vocab_size)
            for name, a, s in ctx.args}
    leaders = [ctx.placement.target_ranks[0], ctx.placement.draft_ranks[0]]
    gathered = [None] * world_size if rank == 0 else None
    dist.gather_object((tp, mine) if rank in leaders else None, gathered, dst=0, group=ctx.world.pg)
    return dict(g for g in gathered if g is not None) if rank == 0 else None


@pytest.fixture(scope="module")
def model_cases():
    return cases()


def test_tp2_and_tp3_equal_tp1(model_cases):
    got = run_workers(_tp_worker, 5, model_cases, split=(3, 2), timeout=120)
    assert sorted(got) == [2, 3]
    for name, a, s in model_cases:
        ref = run_steps(build_engine(a, s, dtype=torch.float32, max_seq_len=64), a.vocab_size)
        for tp in (2, 3):
            for step, x, y in zip(("prefill", "decode"), got[tp][name], ref):
                assert x.shape == y.shape == (x.shape[0], a.vocab_size)
                err = ((x - y).norm() / y.norm()).item()
                assert err <= 1e-5, f"{name} TP {tp} {step}: relative error {err:.2e}"


def _gpu_tp_worker(rank, world_size, ctx):
    return {name: run_steps(build_engine(a, s, dtype=torch.float32, device=ctx.device, group=ctx.group,
                                         max_seq_len=64), a.vocab_size)
            for name, a, s in ctx.args}


@pytest.mark.skipif(torch.cuda.device_count() < 2 or importlib.util.find_spec("cupy") is None,
                    reason="needs 2 CUDA GPUs and cupy")
def test_tp2_on_gpus_equals_tp1(model_cases):
    """The same check through CuPy NCCL (fp32; cuBLAS may pick other kernels per shape)."""
    got = run_workers(_gpu_tp_worker, 2, model_cases, device="cuda", timeout=300)
    for name, a, s in model_cases:
        ref = run_steps(build_engine(a, s, dtype=torch.float32, device="cuda", max_seq_len=64), a.vocab_size)
        for step, x, y in zip(("prefill", "decode"), got[name], ref):
            err = ((x - y).norm() / y.norm()).item()
            assert err <= 1e-4, f"{name} NCCL TP 2 {step}: relative error {err:.2e}"


@pytest.mark.parametrize("heads,kv_heads,size", [(6, 2, 2), (6, 2, 3), (6, 2, 4), (4, 2, 3), (3, 1, 2),
                                                 (32, 8, 3), (16, 2, 3), (12, 2, 8), (8, 8, 3), (28, 4, 3)])
def test_head_layout_keeps_gqa_mapping(heads, kv_heads, size):
    lay = head_layout(heads, kv_heads, size)
    group, per_slot = heads // kv_heads, lay.q_per_rank // lay.kv_per_rank
    assert lay.q_per_rank % lay.kv_per_rank == 0
    seen = []
    for q, kv in zip(lay.q_heads, lay.kv_heads):
        assert len(q) == lay.q_per_rank and len(kv) == lay.kv_per_rank
        for j, h in enumerate(q):
            if h != PAD:
                assert kv[j // per_slot] == h // group, (q, kv)
                seen.append(h)
    assert seen == list(range(heads))
    if heads % size == 0 and kv_heads % size == 0:  # the plain split, no replication
        assert (lay.q_per_rank, lay.kv_per_rank) == (heads // size, kv_heads // size)


def _local_shapes(args):
    return {k: v.shape for k, v in Transformer(args, device="meta").state_dict().items()}


@pytest.mark.parametrize("size", [2, 3])
def test_shards_recover_the_full_state(size):
    args = llama_args(qkv_bias=True)
    state = random_state(args, torch.float32, seed=3)
    hd, H, KV, F, V = args.head_dim, args.n_heads, args.n_kv_heads, args.ffn_dim, args.vocab_size
    shards = [shard_state(args, state, r, size) for r in range(size)]
    local = shards[0][0]
    lay = head_layout(H, KV, size)
    assert (local.n_heads, local.n_kv_heads) == (lay.q_per_rank, lay.kv_per_rank)
    assert local.ffn_dim == -(-F // size) and local.vocab_size == -(-V // size)
    assert [vs for _, _, vs in shards] == [r * local.vocab_size for r in range(size)]
    for _, st, _ in shards:
        assert {k: v.shape for k, v in st.items()} == _local_shapes(local)

    def cat(key, dim, rows=None):
        parts = [st[key] if rows is None else st[key][rows] for _, st, _ in shards]
        return torch.cat(parts, dim)

    q_rows = slice(0, local.n_heads * hd)
    for i in range(args.n_layers):
        p = f"layers.{i}."
        for w in ("wqkv", "bqkv"):
            full = state[p + w]
            q_all = cat(p + w, 0, q_rows).unflatten(0, (-1, hd))  # [size * q_per_rank, hd, ...]
            real = [h for hs in lay.q_heads for h in hs]
            assert torch.equal(q_all[[j for j, h in enumerate(real) if h != PAD]], full[:H * hd].unflatten(0, (H, hd)))
            assert not q_all[[j for j, h in enumerate(real) if h == PAD]].any()
            for r, (_, st, _) in enumerate(shards):  # each local kv slot is its global kv head or zero
                k = st[p + w][local.n_heads * hd:].unflatten(0, (2, local.n_kv_heads, hd))
                for slot, g in enumerate(lay.kv_heads[r]):
                    for m in range(2):
                        want = full[(H + m * KV + g) * hd:(H + m * KV + g + 1) * hd] if g != PAD else 0 * k[m, slot]
                        assert torch.equal(k[m, slot], want)
        wo = cat(p + "wo", 1).unflatten(1, (-1, hd))
        real = [h for hs in lay.q_heads for h in hs]
        assert torch.equal(wo[:, [j for j, h in enumerate(real) if h != PAD]], state[p + "wo"].unflatten(1, (H, hd)))
        assert not wo[:, [j for j, h in enumerate(real) if h == PAD]].any()
        gate = cat(p + "w_gate_up", 0, slice(0, local.ffn_dim))
        up = cat(p + "w_gate_up", 0, slice(local.ffn_dim, None))
        full_gate, full_up = state[p + "w_gate_up"].chunk(2)
        assert torch.equal(gate[:F], full_gate) and torch.equal(up[:F], full_up)
        assert not gate[F:].any() and not up[F:].any()
        down = cat(p + "w_down", 1)
        assert torch.equal(down[:, :F], state[p + "w_down"]) and not down[:, F:].any()
        for norm in ("attn_norm", "mlp_norm"):
            assert all(torch.equal(st[p + norm], state[p + norm]) for _, st, _ in shards)
    for key in ("embed", "lm_head"):
        whole = cat(key, 0)
        assert torch.equal(whole[:V], state[key]) and not whole[V:].any()


def test_shard_rejects_unknown_entries():
    args = llama_args()
    state = random_state(args, torch.float32)
    state["layers.0.extra"] = torch.zeros(3)
    with pytest.raises(KeyError, match="extra"):
        shard_state(args, state, 0, 2)
