"""INT4 AWQ: AutoAWQ's packed layout, round-to-nearest quantization, hub checkpoints, and engines
holding AWQ layers (their twin, the decoders' losslessness, TP sharding)."""
from __future__ import annotations

import json
import weakref

import pytest
import torch
import torch.distributed as dist

from engine_fixtures import prompt
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.errors import UserError
from swiftspec_core.models import awq
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.awq_checkpoint import state_from_awq_tensors
from swiftspec_core.models.sharding import check_awq_shards, shard_state
from swiftspec_core.models.weights import build_engine, random_state
from swiftspec_core.runtime.launch import run_workers


def awq_args(**changes) -> ModelArgs:
    # Every input width a multiple of 32 (the group here); ffn 96 is 3 groups: TP 2 pads a group.
    base = ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, ffn_dim=96, vocab_size=200,
                     norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, qkv_bias=False,
                     tie_embeddings=False, max_position=256)
    return base.with_(**changes)


def quantized(args: ModelArgs, seed: int = 0, dtype=torch.float64, scale: float = 3.0):
    """(AWQ args, quantized state, the plain state it was quantized from)."""
    plain = {k: v * scale if "norm" not in k else v for k, v in random_state(args, dtype, seed=seed).items()}
    group = awq.group_for(args)
    return args.with_(quant="awq", quant_group=group), awq.quantize_state(plain, group), plain


# --- layout ----------------------------------------------------------------------------------------

def test_packing_order_matches_autoawq_by_hand():
    """Column 8c + j of a group of 8 sits in nibble REVERSE_ORDER[j]: nibbles 0..7 hold columns
    0, 2, 4, 6, 1, 3, 5, 7. With code = column index (and + 8), the int32 reads 0x75316420
    (and 0xFDB9ECA8, negative as an int32, as the hub stores it)."""
    for offset, expected in ((0, 0x75316420), (8, 0xFDB9ECA8 - 2**32)):
        codes = (torch.arange(8) + offset)[:, None].expand(8, 32).to(torch.uint8)  # [N=8, K=32]
        w = awq.pack(codes, torch.zeros(8, 1, dtype=torch.uint8), torch.ones(8, 1))
        assert w.qweight.shape == (32, 1) and w.qweight.dtype == torch.int32
        assert (w.qweight == expected).all(), hex(int(w.qweight[0, 0]) & 0xFFFFFFFF)
    assert awq.REVERSE_ORDER == (0, 4, 1, 5, 2, 6, 3, 7)


def test_unpack_inverts_pack():
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (24, 256), generator=gen, dtype=torch.uint8)
    zeros = torch.randint(0, 16, (24, 2), generator=gen, dtype=torch.uint8)
    scales = torch.rand(24, 2, generator=gen).to(torch.float16)
    w = awq.pack(codes, zeros, scales)
    assert [tuple(t.shape) for t in w] == [(256, 3), (2, 3), (2, 24)]
    assert w.shape == (24, 256) and w.group == 128
    back = awq.unpack(w)
    assert torch.equal(back[0], codes) and torch.equal(back[1], zeros) and torch.equal(back[2], scales)


def test_round_trip_is_within_half_a_step():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(40, 512, generator=gen, dtype=torch.float64) * 0.02
    w[0, :128] = w[0, :128].abs() + 0.01  # an all-positive group: the range still takes in 0
    w[1, 128:256] = 0.0  # a constant group
    q = awq.quantize(w)
    codes, zeros, scales = awq.unpack(q)
    assert int(codes.max()) <= 15 and int(zeros.max()) <= 15
    step = scales.double().repeat_interleave(128, dim=1)  # [N, K]
    err = (awq.dequantize(q, torch.float64) - w).abs()
    worst = (err / step).max().item()
    assert worst <= 0.5 + 1e-5, f"error {worst:.6f} steps"
    assert err[1, 128:256].max() == 0
    rel = ((awq.dequantize(q, torch.float64) - w).norm() / w.norm()).item()
    assert 1e-3 < rel < 0.1, rel  # 4 bits: a real error, and a bounded one


def test_dequantize_is_exact_in_fp32_then_rounded_once():
    q = awq.quantize(torch.randn(16, 128, generator=torch.Generator().manual_seed(2)))
    f32, f64 = awq.dequantize(q), awq.dequantize(q, torch.float64)
    assert torch.equal(f32.double(), f64)
    assert torch.equal(awq.dequantize(q, torch.bfloat16), f64.to(torch.bfloat16))


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="multiple of 8"):
        awq.quantize(torch.zeros(12, 128))
    with pytest.raises(ValueError, match="group size 128"):
        awq.quantize(torch.zeros(16, 96))
    assert awq.group_for(awq_args()) == 32
    assert awq.group_for(awq_args(dim=256, ffn_dim=512, head_dim=64)) == 128


# --- hub checkpoints -------------------------------------------------------------------------------

def hub_tensors(args: ModelArgs, plain: dict, group: int) -> dict:
    """A fake AutoAWQ checkpoint: each HF projection quantized on its own, under transformers' names."""
    a, hd = args, args.head_dim
    out = {"model.embed_tokens.weight": plain["embed"], "model.norm.weight": plain["norm"],
           "lm_head.weight": plain["lm_head"]}
    for i in range(a.n_layers):
        p, s = f"model.layers.{i}.", f"layers.{i}."
        q, k, v = plain[s + "wqkv"].split([a.n_heads * hd, a.n_kv_heads * hd, a.n_kv_heads * hd])
        gate, up = plain[s + "w_gate_up"].chunk(2)
        linears = {"self_attn.q_proj": q, "self_attn.k_proj": k, "self_attn.v_proj": v,
                   "self_attn.o_proj": plain[s + "wo"], "mlp.gate_proj": gate, "mlp.up_proj": up,
                   "mlp.down_proj": plain[s + "w_down"]}
        for name, w in linears.items():
            out.update({f"{p}{name}.{part}": t for part, t in zip(awq.PARTS, awq.quantize(w, group))})
        out[p + "input_layernorm.weight"] = plain[s + "attn_norm"]
        out[p + "post_attention_layernorm.weight"] = plain[s + "mlp_norm"]
    return out


def test_hub_tensors_load_to_the_quantized_state():
    """Quantizing q, k, v (gate, up) apart and joining them along N gives the engine's fused
    projections bit for bit: groups run along K, and every output column is quantized alone."""
    args, state, plain = quantized(awq_args(), dtype=torch.float32)
    loaded = state_from_awq_tensors(args, hub_tensors(args, plain, args.quant_group))
    assert sorted(loaded) == sorted(state)
    for name in state:
        assert loaded[name].dtype == state[name].dtype and torch.equal(loaded[name], state[name]), name
    with pytest.raises(UserError, match="lacks model.layers.1.mlp.up_proj.qzeros"):
        state_from_awq_tensors(args, {k: v for k, v in hub_tensors(args, plain, 32).items()
                                      if k != "model.layers.1.mlp.up_proj.qzeros"})


def test_hub_folder_loads(tmp_path):
    from safetensors.torch import save_file
    from transformers import AutoConfig

    args, state, plain = quantized(awq_args(dim=128, ffn_dim=256, head_dim=32), dtype=torch.float32)
    assert args.quant_group == 128
    tensors = {k: v.contiguous() for k, v in hub_tensors(args, plain, 128).items()}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    quant = dict(quant_method="awq", bits=4, group_size=128, version="GEMM", zero_point=True)
    cfg = AutoConfig.for_model("llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, vocab_size=200,
                               max_position_embeddings=256, rms_norm_eps=1e-6, quantization_config=quant)
    from swiftspec_core.models.loading import engine_of, load_model
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    tiny_tokenizer().save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(cfg.to_dict() | dict(quantization_config=quant | dict(bits=8))))
    with pytest.raises(UserError, match="4-bit GEMM"):
        load_model(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(cfg.to_dict()))
    loaded = load_model(str(tmp_path))
    got_args, got = loaded.awq
    assert got_args.quant == "awq" and got_args.quant_group == 128 and loaded.weights == "real"
    assert all(torch.equal(got[k], state[k]) for k in state) and sorted(got) == sorted(state)

    # load_model / engine_of: the engine holds the checkpoint's own tensors, the transformers model
    # their dequantization (what the hf-* peers run), and the two compute the same logits.
    shapes = load_model(str(tmp_path), device="meta")  # shapes only: the args, no tensors
    assert shapes.awq[0] == loaded.awq[0] and not shapes.awq[1]
    assert all(p.is_meta for p in shapes.hf.parameters())
    with pytest.raises(UserError, match="--quant awq"):
        engine_of(loaded, dtype=torch.float32)
    model = engine_of(loaded, quant="awq", dtype=torch.float32)
    assert all(torch.equal(model.state_dict()[k], state[k]) for k in state)
    tokens = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        ref = loaded.hf(tokens).logits[0].float()
    got = run_steps_on(model, tokens[0])
    assert ((got - ref).norm() / ref.norm()).item() < 1e-5


def test_weight_bytes_count_the_4bit_tensors():
    args, state, _ = quantized(awq_args(), dtype=torch.float32)
    packed = awq.packed_entries(state)
    assert len(packed) == 4 * args.n_layers
    expected = sum(w.nbytes() for w in packed.values()) + 2 * state["lm_head"].numel()
    assert args.weight_bytes(2) == expected
    assert args.weight_bytes(2) < awq_args().weight_bytes(2) / 2


# --- engines ---------------------------------------------------------------------------------------

def run_steps_on(model, tokens: torch.Tensor) -> torch.Tensor:
    """Causal logits [T, V] of one prompt."""
    rows = torch.arange(len(tokens))
    return model(tokens, rows, rows, torch.ones(len(tokens), len(tokens), dtype=torch.bool).tril(),
                 model.new_cache(16))


def run_steps(model, vocab: int):
    """A 7-token prefill then one decode step: [7, V] and [1, V] logits."""
    T = 7
    tokens = torch.tensor([0, vocab - 1, 5, vocab // 2, 17, vocab - 2, 3])
    cache = model.new_cache(16)
    rows = torch.arange(T)
    prefill = model(tokens, rows, rows, torch.ones(T, T, dtype=torch.bool).tril(), cache)
    cache.length = T
    step = torch.tensor([T])
    decode = model(torch.tensor([vocab - 3]), step, step, torch.ones(1, T + 1, dtype=torch.bool), cache)
    return prefill, decode


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_awq_engine_matches_its_dequantized_twin(qkv_bias):
    args, state, _ = quantized(awq_args(qkv_bias=qkv_bias))
    model = build_engine(args, state, dtype=torch.float64)
    assert model.layers[0].wqkv.qweight.dtype == torch.int32 and model.layers[0].wqkv.scales.dtype == torch.float16
    twin = build_engine(awq_args(qkv_bias=qkv_bias), awq.dequantized_state(state, torch.float64), dtype=torch.float64)
    for x, y in zip(run_steps(model, args.vocab_size), run_steps(twin, args.vocab_size)):
        assert torch.allclose(x, y, rtol=0, atol=1e-12)
    # bf16 compute (the weights dequantized to bf16) against the fp32 twin: the bound.
    bf16 = build_engine(args, state, dtype=torch.bfloat16)
    twin32 = build_engine(awq_args(qkv_bias=qkv_bias), awq.dequantized_state(state, torch.float32), dtype=torch.float32)
    for x, y in zip(run_steps(bf16, args.vocab_size), run_steps(twin32, args.vocab_size)):
        err = ((x - y).norm() / y.norm()).item()
        assert err <= 2e-2, f"bf16 AWQ engine vs fp32 twin: relative error {err:.2e}"


def test_tiled_engine_computes_the_same_bits():
    """AWQLinear.tile_ (what use_kernels("fused") does to every AWQ layer) swaps the hub's tensors
    for the kernel layout; the torch ops untile it per call, so the engine's logits stay bitwise."""
    from swiftspec_core.models.transformer import AWQLinear

    args, state, _ = quantized(awq_args(qkv_bias=True), dtype=torch.float32)
    hub = build_engine(args, state, dtype=torch.float32)  # it holds state's own tensors
    tiled = build_engine(args, {k: v.clone() for k, v in state.items()}, dtype=torch.float32)  # its own copies
    before = {k: v.clone() for k, v in state.items()}
    layers = [m for m in tiled.modules() if isinstance(m, AWQLinear)]
    assert len(layers) == 4 * args.n_layers
    replaced = [weakref.ref(t) for m in layers for t in m.packed]
    for m in layers:
        m.tile_()
        kept = m.packed
        m.tile_()  # once only: a second call keeps the tiled tensors
        assert all(a is b for a, b in zip(kept[:3], m.packed[:3]))
    assert all(r() is None for r in replaced)  # the hub's tensors are freed: one copy held
    for m, ref in zip(layers, (m for m in hub.modules() if isinstance(m, AWQLinear))):
        assert isinstance(m.packed, awq.TiledAWQWeight) and m.qweight.dim() == 3
        assert all(torch.equal(a, b) for a, b in zip(awq.untile(m.packed), ref.packed))
    for x, y in zip(run_steps(tiled, args.vocab_size), run_steps(hub, args.vocab_size)):
        assert torch.equal(x, y)
    assert all(torch.equal(v, before[k]) for k, v in state.items())  # tiling copies: the caller's state is kept


@pytest.fixture(scope="module")
def awq_pair():
    args, state, plain = quantized(awq_args(dim=128, ffn_dim=192, head_dim=32, vocab_size=384), scale=3.0)
    state["lm_head"] = state["lm_head"] * 3  # peaked next-token distributions, as engine_fixtures
    target = build_engine(args, state, dtype=torch.float64, max_seq_len=512)
    same = build_engine(args, state, dtype=torch.float64, max_seq_len=512)
    plain["lm_head"] = plain["lm_head"] * 3
    unquantized = build_engine(awq_args(dim=128, ffn_dim=192, head_dim=32, vocab_size=384), plain,
                               dtype=torch.float64, max_seq_len=512)
    return target, {"same": same, "unquantized": unquantized}


@pytest.mark.parametrize("draft", ["same", "unquantized"])
@pytest.mark.parametrize("system,settings", [("chain", SpecSettings(chain_k=3)), ("tree", SpecSettings()),
                                             ("swiftspec", SpecSettings(draft_steps=2))])
def test_decoders_stay_lossless_on_awq_weights(awq_pair, system, settings, draft):
    target, drafts = awq_pair
    p = prompt()
    ref = DECODERS["ar"](target, None, p, max_new_tokens=16, eos_ids=set())
    got = DECODERS[system](target, drafts[draft], p, max_new_tokens=16, eos_ids=set(), settings=settings)
    assert got.tokens == ref.tokens and len(got.tokens) == 16
    if draft == "same":
        assert sum(got.accepted) / len(got.accepted) > 1.5  # an equal draft is accepted (swiftspec: up to d)


# --- tensor parallelism ----------------------------------------------------------------------------

def _tp_worker(rank, world_size, ctx):
    args, state = ctx.args
    out = run_steps(build_engine(args, state, dtype=torch.float64, group=ctx.group, max_seq_len=64), args.vocab_size)
    leaders = [ctx.placement.target_ranks[0], ctx.placement.draft_ranks[0]]
    gathered = [None] * world_size if rank == 0 else None
    dist.gather_object((ctx.group.size, out) if rank in leaders else None, gathered, dst=0, group=ctx.world.pg)
    return dict(g for g in gathered if g is not None) if rank == 0 else None


def test_tp2_and_tp3_awq_equal_tp1():
    """4 q heads on 3 ranks pad to 6 (a whole padded group of wo's input), ffn 96 = 3 groups pads
    to 4 on 2 ranks and 3 on 3; the 2 kv heads are replicated on 3 ranks."""
    args, state, _ = quantized(awq_args(qkv_bias=True))
    got = run_workers(_tp_worker, 5, (args, state), split=(3, 2), timeout=120)
    ref = run_steps(build_engine(args, state, dtype=torch.float64, max_seq_len=64), args.vocab_size)
    assert sorted(got) == [2, 3]
    for tp in (2, 3):
        for step, x, y in zip(("prefill", "decode"), got[tp], ref):
            err = ((x - y).norm() / y.norm()).item()
            assert err <= 1e-10, f"AWQ TP {tp} {step}: relative error {err:.2e}"


def test_shards_keep_groups_whole():
    args, state, _ = quantized(awq_args())
    for size in (2, 3):
        for rank in range(size):
            local, shard, _ = shard_state(args, state, rank, size)
            assert local.ffn_dim % args.quant_group == 0
            for name, w in awq.packed_entries(shard).items():
                assert w.group == args.quant_group, name
    # 6 q heads of 16 on 2 ranks: 48 input columns of wo per rank, not whole groups of 32.
    args, state, _ = quantized(awq_args(n_heads=6, dim=96))
    with pytest.raises(ValueError, match="whole groups"):
        shard_state(args, state, 0, 2)


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 2), (6, 2), (6, 3), (8, 2), (8, 8)])
def test_the_check_before_loading_agrees_with_sharding(n_heads, n_kv_heads):
    """check_awq_shards (run on the args alone, before any weight loads) refuses exactly the
    splits that shard_state refuses."""
    args, state, _ = quantized(awq_args(n_heads=n_heads, n_kv_heads=n_kv_heads, dim=16 * n_heads))
    for size in (2, 3, 4):
        try:
            for rank in range(size):
                shard_state(args, state, rank, size)
            shards = True
        except ValueError:
            shards = False
        try:
            check_awq_shards(args, size)
            checked = True
        except ValueError:
            checked = False
        assert checked == shards, (n_heads, n_kv_heads, size)


# --- the CLI ---------------------------------------------------------------------------------------

def test_cli_quant_awq_rows_and_errors(tmp_path):
    from pathlib import Path

    import pandas as pd
    from typer.testing import CliRunner

    from swiftspec_bench.cli import app

    data = Path(__file__).with_name("fixtures")
    out = tmp_path / "run"
    args = ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--systems", "ar,tree", "--datasets", "gsm8k",
            "--limit", "1", "--max-new-tokens", "8", "--data-dir", str(data), "--weights", "random", "--out", str(out)]
    res = CliRunner().invoke(app, args + ["--quant", "awq"])
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    frame = pd.read_parquet(out / "results.parquet")
    assert set(frame.quant) == {"awq"} and len(frame) == 2
    assert frame.output_sha.nunique() == 1  # tree emits ar's tokens on the AWQ target
    res = CliRunner().invoke(app, args + ["--quant", "none"])  # the folder holds awq rows
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "quant=awq" in res.stderr, res.stderr
    res = CliRunner().invoke(app, args + ["--quant", "gptq", "--out", str(tmp_path / "other")])
    assert res.exit_code == 2 and res.stderr == "error: --quant gptq: choose none or awq\n", res.stderr


def test_loaded_pair_quantizes_the_target_only():
    from swiftspec_bench.systems import SYSTEMS, LoadedPair
    from swiftspec_core.models.loading import load_model
    from swiftspec_core.models.transformer import AWQLinear

    target, draft = load_model("tiny-qwen2"), load_model("tiny-qwen2")
    pair = LoadedPair(target, draft, dtype=torch.float32, device="cpu", max_seq_len=64, quant="awq")
    t, d = pair.models_for(SYSTEMS["tree"])
    assert isinstance(t.layers[0].w_down, AWQLinear) and t.args.quant == "awq" and t.args.quant_group == 64
    assert isinstance(d.layers[0].w_down, torch.nn.Parameter) and d.args.quant == "none"
    assert t.layers[0].bqkv is not None  # Qwen2's bias stays plain beside the AWQ wqkv
