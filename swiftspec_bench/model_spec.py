"""What --target and --draft name, checked before anything loads (runner.validate): a preset, a
model folder, a .gguf file or a hub id."""
from __future__ import annotations

from pathlib import Path

from swiftspec_core.errors import UserError

GGUF_MAGIC = b"GGUF"
# Files that hold a HF folder's weights (single file or sharded with an index).
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def check_model_spec(spec: str, flag: str, weights: str = "real") -> None:
    """Catch what can be caught before loading: a preset name; a model folder (config.json, and
    weight files unless --weights random); a .gguf file (its magic bytes); or something shaped
    like a hub id (owner/name). Anything else is an unknown preset or path."""
    from swiftspec_core.models.loading import HUB_ID
    from swiftspec_core.models.presets import PRESETS

    if spec in PRESETS:
        return
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"{flag} {spec}: not a model folder (no config.json)")
        if weights == "real" and not any((path / f).is_file() for f in WEIGHT_FILES):
            raise UserError(f"{flag} {spec}: the folder holds no weights ({' or '.join(WEIGHT_FILES[::2])})")
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
