"""What --target and --draft name, and what their weights allow, checked before anything loads
(runner.validate): a preset, a model folder, a .gguf file or a hub id; the hf-* peers and replayed
acceptance against the weights they need."""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from swiftspec_core.errors import UserError

GGUF_MAGIC = b"GGUF"


def check_model_spec(spec: str, flag: str, weights: str = "real", quant: str = "none") -> None:
    """Catch what can be caught before loading: a preset name; a model folder (config.json, and
    weight files unless --weights random; an AWQ checkpoint only as the --target of --quant awq:
    awq_checkpoint.check_quant's rule, asked again once a hub id's config is known); a .gguf file (its
    magic bytes); or something shaped like a hub id (owner/name). Anything else is an unknown
    preset or path."""
    from swiftspec_core.models.awq_checkpoint import check_quant
    from swiftspec_core.models.checkpoint_files import CHECKPOINT_NAMES
    from swiftspec_core.models.loading import HUB_ID
    from swiftspec_core.models.presets import PRESETS

    if spec in PRESETS:
        return
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"{flag} {spec}: not a model folder (no config.json)")
        # a HF folder's weights: one file, or shards with their index (a GGUF file is named itself)
        if weights == "real" and not any((path / f).is_file() for names in CHECKPOINT_NAMES for f in names):
            raise UserError(f"{flag} {spec}: the folder holds no weights "
                            f"({' or '.join(single for _, single in CHECKPOINT_NAMES)})")
        if weights == "real":
            check_quant(f"{flag} {spec}", _is_awq_folder(path), quant)
        return
    if path.is_file():
        if path.suffix != ".gguf":
            raise UserError(f"{flag} {spec}: not a model folder or a .gguf file")
        with open(path, "rb") as f:
            if f.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
                raise UserError(f"{flag} {spec}: not a GGUF file (it does not start with GGUF)")
        return
    if path.suffix == ".gguf" or spec.startswith((".", "/", "~")) or path.is_absolute():
        raise UserError(f"{flag} {spec}: no such file or folder")
    if HUB_ID.match(spec):
        return  # a hub id: whether it exists is known only when loading
    raise UserError(f"{flag} {spec}: unknown preset (known: {', '.join(PRESETS)}), and no such path")


def check_tree_width(tree_w: int, systems: list[str], draft: str, shape) -> None:
    """The tree decoders give each expanded node its --tree-w best children: at most the draft's
    vocabulary (torch's top-k failed past it, mid-run). `shape`: the draft's ModelArgs or config
    (anything with vocab_size), None where it is not known yet (then checked once it loads)."""
    from swiftspec_core.decoders import GRAFTING  # the tree decoders

    vocab = getattr(shape, "vocab_size", None)
    if vocab and tree_w > vocab and any(s in GRAFTING for s in systems):
        raise UserError(f"--tree-w {tree_w}: a node has at most {vocab} children (the vocabulary of --draft {draft})")


def check_peers_have_a_model(systems: list[str], target: str, weights: str, quant: str) -> None:
    """The hf-* peers run the target's transformers model, which a random target under --quant awq
    never has (its engine is drawn layer by layer: loading.draws_layer_by_layer)."""
    from swiftspec_core.models.loading import draws_layer_by_layer

    from .systems import SYSTEMS

    peers = [s for s in systems if not SYSTEMS[s].on_engine]
    if peers and draws_layer_by_layer(target, weights, quant):
        raise UserError(f"--quant awq with random weights: {', '.join(peers)} cannot run, as the target's "
                        f"AWQ engine is drawn layer by layer and no transformers model of it is built")


def check_replay_weights(replay_path: Path | None, acceptance: str, target: str, weights: str) -> None:
    """Replayed acceptance is for random weights: its rounds emit the drafted tokens the recording
    accepted, not the target's greedy ones, so rows of a real target would claim outputs it never made."""
    from swiftspec_core.models.loading import is_random

    if replay_path is not None and not is_random(target, weights):
        raise UserError(f"--acceptance {acceptance} is for --weights random (replayed rounds are not the "
                        f"target's own tokens); add --weights random, or measure with --acceptance real")


def _is_awq_folder(path: Path) -> bool:
    from swiftspec_core.models.awq_checkpoint import is_awq_quantization

    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False  # loading reports what is wrong with it
    return isinstance(config, dict) and is_awq_quantization(config.get("quantization_config"))


def model_sha(spec: str, weights: str) -> str:
    """A local model folder's or .gguf file's fingerprint: sha256 of its config.json and of each
    weight file's name and size (not its bytes: 140 GB would take minutes); "" for a preset, a hub
    id or random weights (their name says what they are; "" reads back from a CSV as it was)."""
    path = _local_path(spec)
    if weights != "real" or path is None:
        return ""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(f for f in path.iterdir() if f.is_file() and (
        f.name == "config.json" or f.suffix in (".safetensors", ".bin", ".gguf") or f.name.endswith(".index.json")))
    for f in files:
        digest.update(f"{f.name}\0{f.stat().st_size}\0".encode())
        if f.name.endswith(".json"):
            digest.update(f.read_bytes())
    return digest.hexdigest()


def row_spelling(spec: str, spelled: Iterable[str]) -> str:
    """How rows already made name the local model folder or file `spec` names (one of `spelled`,
    which names the same path relatively or absolutely, with a trailing slash or through a link), so
    that one model makes one row key whatever its spelling; else `spec` itself."""
    path = _local_path(spec)
    if path is None:
        return spec
    for other in dict.fromkeys(spelled):
        other_path = _local_path(other) if other != spec else None
        if other_path is not None and os.path.samefile(other_path, path):
            return other
    return spec


def _local_path(spec: str) -> Path | None:
    """The file or folder a model spec names on this machine; None for a preset (named first, as
    check_model_spec takes it), a hub id or nothing."""
    path = Path(spec).expanduser()
    return path if spec and spec not in _presets() and path.exists() else None


def _presets():
    from swiftspec_core.models.presets import PRESETS

    return PRESETS
