"""--kernels: which kernel set a run's engines use (torch ops, our fused cuda/ kernels, or those with
the draft's forwards, and the target's where it can, on the persistent kernel)."""
from __future__ import annotations

from pathlib import Path

from swiftspec_core.errors import UserError


def choose_sets(o, device: str, dtype: str, target: str, draft: str | None, draft_gpus: int) -> tuple[str, ...]:
    """--kernels as a comma list (one name, or several: every system runs under each, so a run
    compares kernel sets on the same queries; with --interleave, query by query): each resolved by
    choose, in order, repeats dropped (auto may resolve to one named beside it)."""
    names = [name.strip() for name in o.kernels.split(",")]  # "fused, persistent" as --systems takes a list
    if "" in names:
        raise UserError(f"--kernels {o.kernels}: an empty name in the list")
    return tuple(dict.fromkeys(choose(o, device, dtype, target, draft, draft_gpus, name) for name in names))


def choose(o, device: str, dtype: str, target: str, draft: str | None, draft_gpus: int,
           kernels: str | None = None) -> str:
    """-> torch, fused or persistent. fused runs bf16 on a GPU, forwards of at most MAX_ROWS tokens,
    and the shapes the kernels take (kernels.shape_supported) for the target and the draft (None:
    no system drafts). persistent is fused with the draft's forwards on the persistent kernel (a
    draft of its shapes on one GPU, draft_gpus: the most any draft engine spans; trees it can mask),
    and the target's where the kernel takes it (persistent_target). auto is persistent where the
    draft fits it (or, with no draft, where the target does), else fused where fused runs, the
    shapes known before loading (presets, local folders), else torch (fused measured faster end to
    end on 2xH200, and exact: paper_figures/NOTES.md v9; the persistent draft faster than fused
    query by query on one H200, tree 1.05-1.08x and swiftspec 1.02x, and exact: NOTES
    "Thirty-first session"; the persistent target faster where its verifications are narrow:
    PERSISTENT_TARGET_WIDTH). kernels: the set asked for (default o.kernels, --kernels as given)."""
    from swiftspec_core.decoders.drafter import step_width
    from swiftspec_core.kernels import MAX_ROWS, shape_supported
    from swiftspec_core.models.transformer import KERNEL_SETS, PERSISTENT

    kernels = o.kernels if kernels is None else kernels
    if kernels not in (*KERNEL_SETS, "auto"):
        raise UserError(f"--kernels {kernels}: choose {', '.join(KERNEL_SETS)} or auto")
    if kernels == "torch":
        return "torch"
    draft_width = step_width(o.tree_w, o.graft_len if o.graft != "off" else 0)
    widths = ((o.tree_bs, "--tree-bs"), (draft_width, "a draft step (--tree-w + 1 + --graft-len)"),
              (o.chain_k + 1, "a chain verification (--chain-k + 1)"))
    shapes = {spec: known_args(spec) for spec in [target] + ([draft] if draft else [])}
    if kernels == "auto":
        fits = (device == "cuda" and dtype == "bfloat16" and all(width <= MAX_ROWS for width, _ in widths)
                and all(args is not None and shape_supported(args) for args in shapes.values()))
        if not fits:
            return "torch"
        if draft is not None:
            return PERSISTENT if persistent_draft_fits(o, draft, shapes[draft], draft_gpus) else "fused"
        return PERSISTENT if persistent_target(o, shapes[target], ["ar"]) else "fused"  # no draft: ar
    if device != "cuda" or dtype != "bfloat16":
        raise UserError(f"--kernels {kernels} runs bfloat16 on a GPU (this run: {dtype} on {device})")
    for width, what in widths:
        if width > MAX_ROWS:
            raise UserError(f"--kernels {kernels}: {what} is {width} tokens wide; the kernels take at most {MAX_ROWS}")
    for spec, args in shapes.items():
        if args is not None and not shape_supported(args):
            raise UserError(f"--kernels {kernels}: {spec} has head_dim {args.head_dim}; the kernels take 64 or 128")
    if kernels == PERSISTENT and draft is not None:
        check_persistent_draft(o, draft, shapes[draft], draft_gpus)
    return kernels


def check_persistent_draft(o, draft: str, args, draft_gpus: int) -> None:
    """--kernels persistent: the draft's forwards fit the persistent kernel (its shape, one GPU, the
    draft tree's rows within a token's mask), or a UserError saying which does not."""
    from swiftspec_core.decoders.base import SpecSettings, draft_tree_rows
    from swiftspec_core.kernels.persistent_forward import MAX_TREE_ROWS, unsupported_shape

    if args is None:
        raise UserError(f"--kernels persistent: the draft's shape must be known before loading (a preset or a "
                        f"local folder), not {draft}")
    why = unsupported_shape(args)
    if why is not None:
        raise UserError(f"--kernels persistent: {draft}: the persistent forward {why}")
    if draft_gpus > 1:
        raise UserError(f"--kernels persistent runs the draft on one GPU; this run shards it over {draft_gpus} "
                        f"(--tp, --split)")
    rows = draft_tree_rows(SpecSettings(tree_bs=o.tree_bs, tree_w=o.tree_w))
    if rows > MAX_TREE_ROWS:
        raise UserError(f"--kernels persistent: at --tree-bs {o.tree_bs} --tree-w {o.tree_w} the draft tree keeps "
                        f"{rows} cache rows; its masks hold {MAX_TREE_ROWS}")


def persistent_draft_fits(o, draft: str, args, draft_gpus: int) -> bool:
    """check_persistent_draft's verdict as a bool (auto's choice)."""
    try:
        check_persistent_draft(o, draft, args, draft_gpus)
    except UserError:
        return False
    return True


# The widest verification a run may have for its target to take the persistent kernel: end to end
# on one H200 the target build beat fused at widths 1 (ar, -7% a round) and 8 (chain k = 7, -3.6%)
# and lost at 12 (tree and swiftspec at bs 12, +1.3% and +2.3%; NOTES v198).
PERSISTENT_TARGET_WIDTH = 8


def persistent_target(o, args, systems) -> bool:
    """Whether a run's target runs the persistent kernel (where a system keeps it on one GPU:
    systems.target_kernels): a Llama-3-8B-shaped target (its target build: keys by position; the
    1B's draft build sums a tree token's keys in cache-row order, so as a verifier it is not exact,
    NOTES v198) known before loading (args; None: not known), bf16 without --quant awq, and every
    verification of the run's `systems` (ar 1 token, chain --chain-k + 1, the trees --tree-bs) at
    most PERSISTENT_TARGET_WIDTH wide."""
    from swiftspec_core.decoders import DECODERS
    from swiftspec_core.decoders.base import SpecSettings, verification_width
    from swiftspec_core.kernels.persistent_forward import is_target, unsupported_shape

    if args is None or o.quant != "none" or unsupported_shape(args) is not None or not is_target(args):
        return False
    settings = SpecSettings(tree_bs=o.tree_bs, chain_k=o.chain_k)
    widths = [verification_width(s, settings) for s in systems if s in DECODERS]
    return max(widths, default=1) <= PERSISTENT_TARGET_WIDTH


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
