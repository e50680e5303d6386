"""Refuse a load that cannot fit its GPU before any weight is placed there: torch would run out of
memory only after minutes of reading or drawing (a 70B model takes 141 GB in bf16, 282 GB in fp32; an
H200 has 150 GB: 140 GiB)."""
from __future__ import annotations

import torch

from ..errors import UserError


def check_fits(what: str, nbytes: int, device) -> None:
    """UserError where `nbytes` (a lower bound: weights alone) exceed what `device` has free now.
    Only a CUDA device is checked (a CPU's file-mapped weights need not be resident)."""
    device = torch.device(device)
    if device.type != "cuda":
        return
    free, total = torch.cuda.mem_get_info(device)
    if nbytes > free:
        raise UserError(f"{what} needs at least {nbytes / 1e9:.1f} GB on {device}, which has {free / 1e9:.1f} GB "
                        f"free of {total / 1e9:.1f} GB (--tp and --split spread a model over GPUs; --quant awq "
                        "keeps its layers in 4 bits)")
