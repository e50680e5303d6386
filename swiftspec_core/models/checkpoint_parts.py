"""A real checkpoint's engine read part by part from its safetensors or .bin files
(checkpoint_files.py): every engine a worker process builds (a TP rank's shard, a split's group,
loading.load_engine), and an AWQ checkpoint's engine (from its safetensors alone) where no hf-* peer
needs its transformers twin (loading.load_model(hf_twin=False)).

The whole way (loading._pretrained or _awq_pretrained, then weights.engine_from_hf or
build_engine) holds the full model on each rank before its shard is taken: 141 GB for Llama-3-70B
in bf16 on each of 8 GPUs; for an AWQ checkpoint its 40 GB of packed tensors plus a 141 GB
dequantized twin for the hf-* peers, more than an H200's 150 GB. Here each part (the embedding, one
layer, the final norm with lm_head) is read from the files alone, named as the engine names it,
quantized by round-to-nearest under --quant awq (a plain checkpoint; an AWQ one is packed already)
and this rank's shard of it kept (weights.engine_by_part): a rank's peak is its shard plus one
part. The engine equals the whole way's bit for bit (tests/test_checkpoint_parts.py).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from ..comm.group import Group
from ..errors import UserError
from .args import ModelArgs
from .awq import quantized_args
from .awq_checkpoint import state_from_awq_tensors
from .checkpoint_files import check_tensors, needed_tensors, read_tensors, tensor_files
from .transformer import Transformer
from .weights import engine_by_part, engine_named, hf_layer


@dataclass(frozen=True)
class CheckpointRecipe:
    """What a real checkpoint's engine is read from when it is built, part by part."""
    folder: Path
    files: dict[str, str]  # tensor name -> the safetensors or .bin file holding it (checkpoint_files.tensor_files)
    needed: tuple[str, ...]  # the tensors read, in the model's order (checkpoint_files.needed_tensors)
    args: ModelArgs  # the checkpoint's own: quant "awq" for an AWQ checkpoint
    dtype: torch.dtype  # a plain checkpoint's weights are read in it, as from_pretrained(dtype=) would
    quant: str  # the engine's layer projections: none or awq (an AWQ checkpoint: awq)

    @property
    def packed(self) -> bool:
        """An AWQ checkpoint: its projections are read as the 4-bit tensors they are."""
        return self.args.quant == "awq"

    def engine(self, *, dtype: torch.dtype, device="cpu", group: Group | None = None, max_seq_len: int = 4096,
               kernels: str = "torch") -> Transformer:
        """This rank's engine, as the whole way builds it, with no more than one part of the model
        read at a time."""
        return engine_by_part(self.engine_args(), self._parts(device), quantize=self.quantizes, dtype=dtype,
                              device=device, group=group, max_seq_len=max_seq_len, kernels=kernels)

    @property
    def quantizes(self) -> bool:
        """A plain checkpoint under --quant awq: its projections are quantized by round-to-nearest."""
        return self.quant == "awq" and not self.packed

    def engine_args(self) -> ModelArgs:
        return quantized_args(self.args) if self.quantizes else self.args

    def _parts(self, device) -> Iterator[dict[str, torch.Tensor]]:
        """Engine-named parts: the embedding, layer 0, ..., layer L - 1, then norm and lm_head."""
        for _, names in itertools.groupby(self.needed, key=hf_layer):
            # No name here holds the read tensors while the part is away (they go with it).
            yield self._named(self._read(list(names), device))

    def _read(self, names: list[str], device) -> dict[str, torch.Tensor]:
        """The named tensors on `device`, each a copy: none refers to the file's mapping, which goes
        (with its resident pages) once the part is read (models/pages.py says why that matters)."""
        tensors = read_tensors(self.folder, self.files, names)
        # An AWQ checkpoint's int32 codes and fp16 scales stay as they are (the engine converts the rest).
        return {name: t.to(device=device, dtype=None if self.packed else self.dtype, copy=True)
                for name, t in tensors.items()}

    def _named(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return state_from_awq_tensors(self.args, tensors) if self.packed else engine_named(self.args, tensors)


def checkpoint_recipe(folder: Path, config, args: ModelArgs, dtype: torch.dtype,
                      quant: str) -> CheckpointRecipe | None:
    """The recipe of a model folder's safetensors or .bin checkpoint (args: its own,
    ModelArgs.from_hf_config before the quantization_config left `config`), after checking it holds
    every tensor the model needs, of the shapes it makes them (a UserError before any weight is
    read); None where the folder has neither (an AWQ checkpoint: a UserError, it is read from its
    safetensors alone)."""
    files = tensor_files(folder)
    if args.quant == "awq" and not any(file.endswith(".safetensors") for file in files.values()):
        raise UserError(f"{folder}: an AWQ checkpoint needs model.safetensors (or its index)")
    if not files:
        return None
    shapes = needed_tensors(config, args.quant_group if args.quant == "awq" else None)
    check_tensors(folder, files, shapes)
    needed = tuple(shapes)
    return CheckpointRecipe(folder, files, needed, args, dtype, "awq" if args.quant == "awq" else quant)
