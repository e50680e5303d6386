"""What `swiftspec-bench kernels` times: the cases of its matrix, their shapes and their floors.

A case is one op of one layer's shard of a preset at TP t (the shapes a rank computes: q/k/v and
gate/up rows and o/down columns split, heads as sharding.head_layout places them), at M rows, for
one implementation. Its floor is the bytes it must move (weights once, activations in and out,
the keys and values it attends) over the device's measured copy bandwidth. Nothing here touches a
GPU: the options are checked and the matrix is planned before any GPU work.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from swiftspec_core.errors import UserError
from swiftspec_core.kernels.forward import AWQ_FP16_X
from swiftspec_core.models.args import ModelArgs, awq_bytes
from swiftspec_core.models.awq import GROUP as AWQ_GROUP
from swiftspec_core.models.presets import PRESETS
from swiftspec_core.models.sharding import shard_state

from .names import parse_names

BF16 = 2  # bytes per element: every op is timed in bfloat16
MAX_M = 16  # our kernels' most rows (the GEMM's and the attention's)
PROJECTIONS = ("qkv", "o", "gate_up", "down", "lm_head")
AWQ_PROJECTIONS = PROJECTIONS[:4]  # the layer projections AWQ quantizes (models/awq.py); lm_head stays bf16
ROW_PARALLEL = ("o", "down")  # the projections an all-reduce follows under TP
# Op groups as --ops names them; the rows name gemm and gemm_allreduce per projection.
OPS = ("gemm", "awq_gemm", "allreduce", "gemm_allreduce", "awq_gemm_allreduce", "attention", "rmsnorm", "swiglu",
       "forward", "draft_step")
# ours: our kernels (the fused kernel set); cublas+nccl: F.linear (cuBLAS) and comm/nccl.py's
# all-reduce; sdpa: F.scaled_dot_product_attention under the tree mask; torch: the engine's own
# torch path (transformer.py: grouped_attention, rms_norm, silu * up; the forward's torch set);
# persistent: a forward's layers in one launch of cuda/persistent.cu (Llama-3.2-1B only; not in
# --impl's default).
IMPLS = ("ours", "cublas+nccl", "sdpa", "torch", "persistent")
IMPLS_OF = {
    "gemm": ("ours", "cublas+nccl"), "awq_gemm": ("ours",), "allreduce": ("ours", "cublas+nccl"),
    "gemm_allreduce": ("ours", "cublas+nccl"), "awq_gemm_allreduce": ("ours",), "attention": ("ours", "sdpa", "torch"),
    "rmsnorm": ("ours", "torch"), "swiglu": ("ours", "torch"), "forward": ("ours", "torch", "persistent"),
    "draft_step": ("ours", "torch", "persistent"),
}
NEEDS_GROUP = ("allreduce", "gemm_allreduce", "awq_gemm_allreduce")  # ops that exist only across tp >= 2 processes
WITH_CONTEXT = ("attention", "forward", "draft_step")  # ops that read a KV cache


def op_group(op: str) -> str:
    """A row's op under its --ops name: gemm_qkv -> gemm, gemm_allreduce_o -> gemm_allreduce."""
    for name in ("awq_gemm_allreduce", "gemm_allreduce", "awq_gemm", "gemm"):  # a longer name before its prefix
        if op.startswith(name + "_"):
            return name
    return op


@dataclass(frozen=True)
class Case:
    op: str  # a row's op: gemm_qkv, allreduce, gemm_allreduce_o, attention, ...
    model: str
    tp: int
    m: int  # rows (tokens) of the call; the forward's width
    context: int | None  # verified tokens in the cache (ops in WITH_CONTEXT), else None
    impl: str

    @property
    def group(self) -> str:
        return op_group(self.op)

    @property
    def projection(self) -> str | None:
        return self.op[len(self.group) + 1:] or None

    @property
    def key(self) -> tuple:
        return (self.op, self.model, self.tp, self.m, self.context, self.impl)

    @property
    def processes(self) -> int:
        """Processes (GPUs) it runs on: a whole shard's forward and communication need the group."""
        return self.tp if self.group in NEEDS_GROUP + ("forward", "draft_step") else 1


def x_dtype(case: Case) -> str:
    """The dtype of x in a row's calls (the rows' dtype column): fp16 for the AWQ projections the
    one-GPU AWQ forward feeds fp16 (kernels/forward.py: AWQ_FP16_X), else bf16."""
    fp16 = case.group == "awq_gemm" and case.tp == 1 and case.projection in AWQ_FP16_X
    return "float16" if fp16 else "bfloat16"


@dataclass(frozen=True)
class Options:
    models: list[str]
    tps: list[int]
    ms: list[int]
    contexts: list[int]
    ops: list[str]  # group names (OPS)
    impls: list[str]
    tree_w: int  # draft_step runs the draft forward at width tree_w + 1 + graft_len
    tree_bs: int  # and stages its tokens as the drafter does at this --tree-bs (draft_visible)
    graft_len: int  # a grafted step's chain (0: a plain expansion)
    out: Path


@functools.cache
def shard_args(model: str, tp: int) -> ModelArgs:
    """One rank's shapes of `model` at TP tp (sharding.shard_state's rule, on no weights)."""
    args = ModelArgs.from_hf_config(PRESETS[model].hf_config())
    return shard_state(args, {}, 0, tp)[0] if tp > 1 else args


def gemm_shape(args: ModelArgs, projection: str) -> tuple[int, int, bool]:
    """(N, K, has bias) of a projection's weight [N, K] in a shard with these args."""
    q, kv = args.n_heads * args.head_dim, args.n_kv_heads * args.head_dim
    return {
        "qkv": (q + 2 * kv, args.dim, args.qkv_bias),
        "o": (args.dim, q, False),
        "gate_up": (2 * args.ffn_dim, args.dim, False),
        "down": (args.dim, args.ffn_dim, False),
        "lm_head": (args.vocab_size, args.dim, False),
    }[projection]


def kv_bytes(args: ModelArgs, tokens: int, layers: int = 1) -> int:
    """The keys and values of `tokens` positions in `layers` layers."""
    return layers * 2 * tokens * args.n_kv_heads * args.head_dim * BF16


def awq_gemm_bytes(n: int, k: int, m: int, bias: bool = False) -> int:
    """An AWQ GEMM's least bytes: its [n, k] weight's 4-bit codes, zeros and scales (groups of
    AWQ_GROUP), x [m, k] in and out [m, n] written in bf16 (and the bias); the probes in
    paper_figures/ floor arbitrary shapes with it."""
    return awq_bytes(n * k, AWQ_GROUP) + BF16 * (m * k + m * n + (n if bias else 0))


def floor_bytes(case: Case) -> int | None:
    """Bytes the case must move at least; None for the all-reduce (latency-bound: the bytes it
    moves over NVLink take nanoseconds, so no bandwidth floor says anything about it)."""
    a, m = shard_args(case.model, case.tp), case.m
    if case.group in ("gemm", "gemm_allreduce"):
        n, k, bias = gemm_shape(a, case.projection)
        return BF16 * (n * k + m * k + m * n + (n if bias else 0))  # the all-reduce not counted
    if case.group in ("awq_gemm", "awq_gemm_allreduce"):
        n, k, bias = gemm_shape(a, case.projection)
        return awq_gemm_bytes(n, k, m, bias)  # the all-reduce not counted
    if case.op == "allreduce":
        return None
    if case.op == "attention":  # q in, out written, and the keys/values of its positions
        return BF16 * 2 * m * a.n_heads * a.head_dim + kv_bytes(a, case.context + m)
    if case.op == "rmsnorm":  # h and m in, x = h + m and the normed y out, the weight
        return BF16 * (4 * m * a.dim + a.dim)
    if case.op == "swiglu":  # gate and up in, their product out
        return BF16 * 3 * m * a.ffn_dim
    if case.op in ("forward", "draft_step"):  # every weight once, and every layer's cache
        return a.weight_bytes(BF16) + kv_bytes(a, case.context + m, a.n_layers)
    raise ValueError(f"no floor rule for op {case.op!r}")


def message_bytes(case: Case) -> int:
    """The all-reduced tensor [m, dim] of allreduce and the GEMM + all-reduce ops."""
    return BF16 * case.m * shard_args(case.model, case.tp).dim


def moved_bytes(case: Case) -> int:
    """Bytes the achieved GB/s is counted from: the floor's, or the message of an all-reduce."""
    floor = floor_bytes(case)
    return message_bytes(case) if floor is None else floor


def parse_ints(text: str, flag: str, low: int, high: int | None = None) -> list[int]:
    """A comma list of integers in [low, high], in the order given, without repeats."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UserError(f"{flag} is empty")
    values = []
    for t in items:
        try:
            v = int(t)
        except ValueError:
            raise UserError(f"{flag} {text}: {t!r} is not a whole number") from None
        if v < low or (high is not None and v > high):
            raise UserError(f"{flag} {text}: {v} is outside {low}..{high if high is not None else ''}")
        values.append(v)
    return list(dict.fromkeys(values))


def validate(models: str, tp: str, m: str, context: str, ops: str, impl: str, tree_w: int, tree_bs: int,
             graft_len: int, out: str) -> Options:
    """Every option checked against the presets and the kernels' limits: a UserError otherwise."""
    from .run_folder import check_out_dir

    names = parse_names(models, "--models", "preset", PRESETS)
    opts = Options(models=names, tps=parse_ints(tp, "--tp", 1, 8), ms=parse_ints(m, "--m", 1, MAX_M),
                   contexts=parse_ints(context, "--context", 1),
                   ops=list(OPS) if ops.strip() == "all" else parse_names(ops, "--ops", "op", OPS), impls=parse_names(impl, "--impl", "impl", IMPLS),
                   tree_w=tree_w, tree_bs=tree_bs, graft_len=graft_len, out=Path(out))
    if tree_w < 1 or graft_len < 0 or draft_width(opts) > MAX_M:
        raise UserError(f"--tree-w {tree_w} --graft-len {graft_len}: the draft step's width tree_w + 1 + "
                        f"graft_len must be 2..{MAX_M}")
    if tree_bs < 1:
        raise UserError(f"--tree-bs {tree_bs}: must be at least 1")
    widest = max(opts.ms + [draft_width(opts)])
    for name in names:
        args = shard_args(name, 1)
        if max(opts.contexts) + widest > args.max_position:
            raise UserError(f"--context {max(opts.contexts)}: {name} holds {args.max_position} positions, "
                            f"fewer than the context plus {widest} tree tokens")
        for t in opts.tps:
            for proj in PROJECTIONS:
                n, k, _ = gemm_shape(shard_args(name, t), proj)
                if k % 8:  # 16-byte loads of the weight rows
                    raise UserError(f"{name} at --tp {t}: {proj}'s K = {k} is not a multiple of 8")
    check_out_dir(out)
    return opts


def draft_visible(opts: Options) -> int:
    """The visible rows a token of the draft step's staged block holds: the drafter's at --tree-bs
    and --tree-w (its tree's cache rows + 1, NOTES v190), not the step's width: the kernels read
    the block, and a persistent prologue's cost grows with it."""
    from swiftspec_core.decoders.base import SpecSettings, draft_tree_rows
    from swiftspec_core.decoders.drafter import staged_visible

    return staged_visible(opts.tree_w, draft_tree_rows(SpecSettings(tree_bs=opts.tree_bs, tree_w=opts.tree_w)),
                          opts.graft_len)


def draft_width(opts: Options) -> int:
    """The draft step's forward width at --tree-w and --graft-len (drafter.step_width)."""
    from swiftspec_core.decoders.drafter import step_width

    return step_width(opts.tree_w, opts.graft_len)


def plan(opts: Options) -> list[Case]:
    """The matrix, model by model and tp by tp. The forward and the draft step run at the largest
    context only (each width is a compiled, captured forward of the whole model)."""
    cases = []
    deepest = max(opts.contexts)
    for model in opts.models:
        for t in opts.tps:
            for group in opts.ops:
                if group in NEEDS_GROUP and t < 2:
                    continue
                for op, m, ctx in _shapes(group, opts, deepest):
                    cases += [Case(op, model, t, m, ctx, impl) for impl in IMPLS_OF[group] if impl in opts.impls]
    return cases


def _shapes(group: str, opts: Options, deepest: int) -> list[tuple[str, int, int | None]]:
    """(op, m, context) of one op group."""
    if group == "gemm":
        return [(f"gemm_{p}", m, None) for p in PROJECTIONS for m in opts.ms]
    if group in ("gemm_allreduce", "awq_gemm_allreduce"):
        return [(f"{group}_{p}", m, None) for p in ROW_PARALLEL for m in opts.ms]
    if group == "awq_gemm":
        return [(f"awq_gemm_{p}", m, None) for p in AWQ_PROJECTIONS for m in opts.ms]
    if group == "attention":
        return [(group, m, c) for m in opts.ms for c in opts.contexts]
    if group == "forward":
        return [(group, m, deepest) for m in opts.ms]
    if group == "draft_step":
        return [(group, draft_width(opts), deepest)]
    return [(group, m, None) for m in opts.ms]
