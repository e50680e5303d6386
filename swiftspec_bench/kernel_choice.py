"""--kernels: which kernel set a run's engines use (torch ops, or our fused cuda/ kernels)."""
from __future__ import annotations

from pathlib import Path

from swiftspec_core.errors import UserError


def choose(o, device: str, dtype: str, specs: list[str]) -> str:
    """-> torch or fused. fused runs bf16 on a GPU, forwards of at most MAX_ROWS tokens, and the
    shapes the kernels take (kernels.shape_supported) for every model in `specs`; auto is fused
    wherever that holds and the shapes are known before loading (presets, local folders), else
    torch (fused measured faster end to end on 2xH200, and exact: paper_figures/NOTES.md v9)."""
    from swiftspec_core.kernels import MAX_ROWS, shape_supported
    from swiftspec_core.models.transformer import KERNEL_SETS

    if o.kernels not in (*KERNEL_SETS, "auto"):
        raise UserError(f"--kernels {o.kernels}: choose {', '.join(KERNEL_SETS)} or auto")
    if o.kernels == "torch":
        return "torch"
    draft_width = o.tree_w + 1 + (o.graft_len if o.graft != "off" else 0)  # leaves, a pending token, a chain
    widths = ((o.tree_bs, "--tree-bs"), (draft_width, "a draft step (--tree-w + 1 + --graft-len)"),
              (o.chain_k + 1, "a chain verification (--chain-k + 1)"))
    shapes = {spec: known_args(spec) for spec in specs}
    if o.kernels == "auto":
        fits = (device == "cuda" and dtype == "bfloat16" and all(width <= MAX_ROWS for width, _ in widths)
                and all(args is not None and shape_supported(args) for args in shapes.values()))
        return "fused" if fits else "torch"
    if device != "cuda" or dtype != "bfloat16":
        raise UserError(f"--kernels fused runs bfloat16 on a GPU (this run: {dtype} on {device})")
    for width, what in widths:
        if width > MAX_ROWS:
            raise UserError(f"--kernels fused: {what} is {width} tokens wide; the kernels take at most {MAX_ROWS}")
    for spec, args in shapes.items():
        if args is not None and not shape_supported(args):
            raise UserError(f"--kernels fused: {spec} has head_dim {args.head_dim}; the kernels take 64 or 128")
    return "fused"


def known_args(spec: str):
    """The model's ModelArgs where they are known without loading it (a preset, a local folder's
    config.json), else None."""
    from swiftspec_core.models.args import ModelArgs
    from swiftspec_core.models.presets import PRESETS

    if spec in PRESETS:
        return ModelArgs.from_hf_config(PRESETS[spec].hf_config())
    if (Path(spec).expanduser() / "config.json").is_file():
        from transformers import AutoConfig

        try:
            return ModelArgs.from_hf_config(AutoConfig.from_pretrained(Path(spec).expanduser()))
        except (ValueError, OSError):  # loading the model says what is wrong with it
            return None
    return None
