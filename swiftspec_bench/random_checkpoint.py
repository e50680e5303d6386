"""Write a random-weight checkpoint folder at a preset's real shape: the test bed of the real-weight
path (loading.load_model, models/checkpoint_parts.py) at sizes no weights file of ours can bring
to the GPU machine (64 MiB travel), e.g. Llama-3-70B as AutoAWQ publishes it:

    python3 -m swiftspec_bench.random_checkpoint llama-3-70b /tmp/llama-3-70b-awq --awq [--seed 0]

Its values are those `--weights random --seed S` draws (weights.init_random_ in the transformers
model's parameter order, in bf16), so `run --target FOLDER` emits what `run --target PRESET
--weights random` emits; with --awq each layer projection is quantized alone by round-to-nearest
(awq.quantize, AutoAWQ's layout), which is what `--quant awq` computes with (it quantizes the
joined q/k/v and gate/up row by row: the same codes). One safetensors file a part (the embedding,
each layer, the final norm with lm_head) and their index; one part in memory at a time. FOLDER
must be new (or empty): the parts are written beside it and renamed into place once whole, so an
interrupted write leaves no half checkpoint, and no file of another checkpoint is replaced or mixed in.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
from pathlib import Path

import torch

DTYPE = torch.bfloat16  # what --weights random draws on a GPU run (--dtype's default there)


def write(preset_name: str, folder: Path, *, awq: bool, seed: int = 0, device: str = "cpu") -> int:
    """Write the folder (config.json, the stand-in tokenizer, the parts and their index); returns
    the bytes written in tensors."""
    from swiftspec_core.models.args import ModelArgs
    from swiftspec_core.models.awq import group_for
    from swiftspec_core.models.presets import PRESETS

    preset = PRESETS[preset_name]
    config = preset.hf_config()
    group = group_for(ModelArgs.from_hf_config(config))
    check_new_folder(folder)
    whole = Path(os.path.abspath(folder))  # "." has no name to put a temporary folder beside
    whole.parent.mkdir(parents=True, exist_ok=True)
    folder = whole.with_name(f".{whole.name}.{os.getpid()}.tmp")  # renamed to `whole` once written
    folder.mkdir()
    try:
        total = _write_parts(preset, config, group, folder, awq=awq, seed=seed, device=device)
        os.replace(folder, whole)  # over an empty folder too (POSIX rename)
    finally:
        if folder.exists():
            shutil.rmtree(folder)
    return total


def _write_parts(preset, config, group: int, folder: Path, *, awq: bool, seed: int, device: str) -> int:
    """write's files, into `folder`."""
    from safetensors.torch import save_file

    from swiftspec_core.models.awq import PARTS, quantize
    from swiftspec_core.models.checkpoint_files import SAFETENSORS_INDEX
    from swiftspec_core.models.loading import stand_in_tokenizer
    from swiftspec_core.models.random_parts import hf_parameters
    from swiftspec_core.models.weights import draw_random_, hf_layer, random_generator

    gen = random_generator(seed, device)
    parts = [list(p) for _, p in itertools.groupby(hf_parameters(config, DTYPE), key=lambda p: hf_layer(p[0]))]
    weight_map, total = {}, 0
    for i, params in enumerate(parts):
        drawn = {name: torch.empty(shape, dtype=dt, device=device) for name, shape, dt in params}
        draw_random_(drawn.items(), gen)
        tensors = {}
        for name, t in drawn.items():
            if awq and hf_layer(name) is not None and name.endswith("_proj.weight"):
                base = name.removesuffix(".weight")
                tensors.update({f"{base}.{part}": q for part, q in zip(PARTS, quantize(t, group))})
            else:
                tensors[name] = t
        file = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        save_file({k: v.contiguous().cpu() for k, v in tensors.items()}, str(folder / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(tensors, file))
        total += sum(v.nbytes for v in tensors.values())
    config.dtype = "bfloat16"
    if awq:
        config.quantization_config = dict(quant_method="awq", bits=4, group_size=group, version="gemm", zero_point=True)
    config.save_pretrained(folder)
    stand_in_tokenizer(preset).save_pretrained(folder)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / SAFETENSORS_INDEX).write_text(json.dumps(index, indent=1))
    return total


def check_new_folder(folder: Path) -> None:
    """A UserError unless `folder` is new or an empty folder: a checkpoint written over another
    would replace its files, or mix in the parts it does not replace."""
    from swiftspec_core.errors import UserError

    if folder.is_dir() and any(folder.iterdir()):
        raise UserError(f"{folder} is a folder that holds files already: name a new or empty folder")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} is an existing file, not a folder")


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one `error:` line and exit 2, as every bad input here is."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (--help lists the options)\n")


def main(argv: list[str] | None = None) -> int:
    from swiftspec_core.errors import UserError

    from .run_folder import named_folder
    from .run_settings import check_seed

    parser = _OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset")
    parser.add_argument("folder")
    parser.add_argument("--awq", action="store_true", help="AutoAWQ's 4-bit layout (group 128 where it divides)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where the values are drawn: a run draws them on its own device")
    a = parser.parse_args(argv)
    from swiftspec_core.models.presets import PRESETS

    try:
        if a.preset not in PRESETS:
            raise UserError(f"unknown preset {a.preset!r}; presets: {', '.join(PRESETS)}")
        check_seed(a.seed)
        if a.device == "cuda" and not torch.cuda.is_available():
            raise UserError("--device cuda: no CUDA device is available")
        folder = named_folder(a.folder, "FOLDER")  # "" would write into the current folder
        total = write(a.preset, folder, awq=a.awq, seed=a.seed, device=a.device)
    except UserError as exc:
        return _fail(str(exc))
    except OSError as exc:  # a folder that cannot be made or written (read-only, no space)
        return _fail(f"cannot write {a.folder}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        return _fail("interrupted")
    print(f"wrote {total / 1e9:.2f} GB of tensors to {folder}")
    return 0


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
