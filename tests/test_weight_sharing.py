"""One copy of each model's weights: the engine and the transformers model it was built from share
every tensor, both still compute the same greedy tokens, and file-mapped pages are given back."""
from __future__ import annotations

import sys

import pytest
import torch

from swiftspec_bench.systems import SYSTEMS, LoadedPair, run_query
from swiftspec_core.decoders.base import SpecSettings
from swiftspec_core.models.loading import load_model
from swiftspec_core.models.vocab import eos_ids
from swiftspec_core.models.pages import release_file_pages


def _span(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    return start, start + t.numel() * t.element_size()


def _storages(tensors) -> dict[int, int]:
    """Distinct storages behind the tensors: data_ptr -> bytes."""
    return {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}


def _built_pair(target, draft):
    pair = LoadedPair(target, draft, dtype=torch.float32, device="cpu", max_seq_len=256)
    engines = pair.models_for(SYSTEMS["ar"])
    return pair, engines


def _check_one_copy(hf, engine) -> None:
    ours = list(engine.parameters())
    theirs = list(hf.parameters())
    spans = [_span(p) for p in ours]
    for name, p in hf.named_parameters():  # each lies inside one of the engine's tensors
        lo, hi = _span(p)
        assert any(a <= lo and hi <= b for a, b in spans), name
    engine_bytes = sum(p.numel() * p.element_size() for p in ours)
    # Everything reachable from both models is the engine's weights, once: no second copy lives.
    assert sum(_storages(ours + theirs).values()) == engine_bytes
    assert _storages(theirs).keys() <= _storages(ours).keys()


@pytest.mark.parametrize("spec", ["tiny-qwen2", "tiny-llama"])
def test_engine_and_transformers_share_one_copy_and_agree(spec):
    target = load_model(spec, seed=3)
    draft = load_model(spec, seed=4)
    prompt = target.tokenizer.encode("def add(a, b):")
    eos, settings = eos_ids(target), SpecSettings()
    pair = LoadedPair(target, draft, dtype=torch.float32, device="cpu", max_seq_len=256)
    before = run_query("hf-ar", pair, prompt, max_new_tokens=12, eos_ids=eos, settings=settings)[0].tokens
    engines = pair.models_for(SYSTEMS["ar"])
    for loaded, engine in zip((target, draft), engines):
        _check_one_copy(loaded.hf, engine)
    outputs = {name: run_query(name, pair, prompt, max_new_tokens=12, eos_ids=eos, settings=settings)[0].tokens
               for name in ("hf-ar", "hf-assisted", "ar", "tree")}
    assert all(tokens == before for tokens in outputs.values()), outputs


def test_a_model_loaded_from_a_folder_shares_its_mapped_weights(tmp_path):
    """A saved model loads memory-mapped (transformers maps safetensors files): building still
    leaves one copy, and the engine computes what the model computed before it was built."""
    saved = load_model("tiny-qwen2", seed=5)
    saved.hf.save_pretrained(tmp_path)
    saved.tokenizer.save_pretrained(tmp_path)
    target = load_model(str(tmp_path))
    prompt = torch.tensor(target.tokenizer.encode("print('hi')"))
    with torch.inference_mode():
        ref = target.hf(prompt[None]).logits[0]
    pair, (engine, _) = _built_pair(target, None)
    _check_one_copy(target.hf, engine)
    with torch.inference_mode():
        assert torch.equal(target.hf(prompt[None]).logits[0], ref)


def _resident_kb(t: torch.Tensor) -> int:
    """Resident kB of the mapping that holds t (smaps)."""
    lo, _ = _span(t)
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                a, b = (int(x, 16) for x in head[0].split("-"))
                inside = a <= lo < b
            elif inside and head[0] == "Rss:":
                return int(head[1])
    raise AssertionError("no mapping holds the tensor")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/smaps")
def test_release_file_pages_drops_mapped_pages_and_keeps_values(tmp_path):
    values = torch.arange(4 << 20, dtype=torch.float32)  # 16 MiB
    path = tmp_path / "w.bin"
    values.numpy().tofile(path)
    mapped = torch.from_file(str(path), shared=False, size=values.numel(), dtype=torch.float32)
    assert torch.equal(mapped, values)  # reads every page
    assert _resident_kb(mapped) >= 15 << 10
    release_file_pages(mapped)
    assert _resident_kb(mapped) < 1 << 10
    assert torch.equal(mapped, values)  # read back from the file
    heap = values.clone()
    release_file_pages(heap)  # not a file mapping: left alone
    assert torch.equal(heap, values)


_BUILD_PEAK = """
import sys, torch
from swiftspec_bench.systems import SYSTEMS, LoadedPair
from swiftspec_core.models.loading import load_model

def rss_kb(field="VmRSS"):  # VmHWM: this process's peak (ru_maxrss would count the forked parent's too)
    return int(open("/proc/self/status").read().split(field + ":")[1].split()[0])

target = load_model(sys.argv[1])
with torch.inference_mode():
    target.hf(torch.tensor([[1, 2, 3]]))  # reads every weight: all of them resident now
before = rss_kb()
LoadedPair(target, None, dtype=torch.float32, device="cpu", max_seq_len=64).models_for(SYSTEMS["ar"])
print(before, rss_kb("VmHWM"), rss_kb())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_building_the_engine_adds_about_one_layer_of_memory(tmp_path):
    """The real pair's main job peaked at twice its weights while the engines were built (the HF
    model, all fused blocks at once and the engine's own copy). Now building a ~230 MB model from
    its mapped files may add little more than one layer (22 MB) at the peak, and nothing after."""
    import subprocess
    from pathlib import Path

    from transformers import AutoConfig

    from swiftspec_core.models.loading import _random_model
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    config = AutoConfig.for_model("qwen2", hidden_size=768, intermediate_size=3072, num_hidden_layers=6,
                                  num_attention_heads=12, num_key_value_heads=2, vocab_size=4096,
                                  tie_word_embeddings=False)
    hf = _random_model(config, torch.float32, torch.device("cpu"), seed=0)
    weight_kb = sum(p.numel() * p.element_size() for p in hf.parameters()) >> 10
    hf.save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)  # a model folder has one (loading checks)
    del hf
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", _BUILD_PEAK, str(tmp_path)], cwd=root, capture_output=True,
                         text=True, check=True).stdout
    before, peak, after = map(int, out.split()[-3:])
    assert peak - before < weight_kb // 4, (before, peak, after, weight_kb)
    assert after - before < weight_kb // 8, (before, peak, after, weight_kb)
