"""The kernel table: DIR/kernels.csv (one row per case) and DIR/kernels.md (the layout of the
SwiftSpec paper's Table 8: a table per op, a row per shape, a column pair per implementation),
both replaced atomically after every case, so an interrupted run keeps what it finished."""
from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path

from swiftspec_core.errors import UserError

from .kernel_shapes import IMPLS, OPS, Case, floor_bytes, moved_bytes, op_group, x_dtype
from .results import _atomic_write

CSV_NAME, MD_NAME = "kernels.csv", "kernels.md"
COLUMNS = ("op", "model", "tp", "m", "context", "impl", "median_us", "gbps", "floor_us", "device", "commit", "dtype")
KEY = COLUMNS[:6]
INTS = ("tp", "m", "context")
FLOATS = ("median_us", "gbps", "floor_us")


def make_row(case: Case, us: float, bandwidth: float, device: str, commit: str) -> dict:
    """One measured case; bandwidth in bytes/s (runtime/floor.py's copy bandwidth)."""
    floor = floor_bytes(case)
    return dict(op=case.op, model=case.model, tp=case.tp, m=case.m, context=case.context, impl=case.impl,
                median_us=round(us, 2), gbps=round(moved_bytes(case) / us / 1e3, 1),
                floor_us=None if floor is None else float(f"{floor / bandwidth * 1e6:.4g}"),  # tiny ops: 0.004 us, not 0.0
                device=device, commit=commit, dtype=x_dtype(case))


def row_key(row: dict) -> tuple:
    return tuple(row[c] for c in KEY)


def read_rows(out: Path) -> list[dict]:
    """The rows an earlier run wrote into `out` (none if it wrote none)."""
    path = out / CSV_NAME
    if not path.exists():
        return []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise UserError(f"--out {out}: {CSV_NAME} has columns {reader.fieldnames}, not this table's")
            return [_typed(r) for r in reader]
    except (ValueError, csv.Error) as exc:  # a number that does not parse; not UTF-8 (a ValueError too)
        raise UserError(f"--out {out}: {CSV_NAME} is not a kernel table as this command writes it ({exc})") from None


def _typed(raw: dict) -> dict:
    row = dict(raw)
    if op_group(row["op"]) not in OPS or row["impl"] not in IMPLS:  # the table's order (_order) has no place for it
        raise ValueError(f"op {row['op']!r} / impl {row['impl']!r} is not one of this command's")
    for c in INTS:
        row[c] = int(row[c]) if row[c] else None
    for c in FLOATS:
        row[c] = float(row[c]) if row[c] else None
    return row


def write(out: Path, rows: list[dict], notes: list[str], meta: dict) -> None:
    """Both files, each replaced atomically. meta: device, commit, bandwidth (bytes/s), timing."""
    out.mkdir(parents=True, exist_ok=True)
    ordered = sorted(rows, key=_order)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: ("" if r[c] is None else r[c]) for c in COLUMNS} for r in ordered)
    _atomic_write(out / CSV_NAME, lambda f: f.write(text.getvalue().encode()))
    _atomic_write(out / MD_NAME, lambda f: f.write(markdown(ordered, notes, meta).encode()))


def _order(row: dict) -> tuple:
    return (OPS.index(op_group(row["op"])), row["op"], row["model"], row["tp"], row["m"], row["context"] or 0,
            IMPLS.index(row["impl"]))


def markdown(rows: list[dict], notes: list[str], meta: dict) -> str:
    """A table per op (rows in `rows`' order): shape columns, then each implementation's median
    us and achieved GB/s, the floor, and ours (and persistent, where measured) over the floor."""
    lines = [
        "# Kernel table (swiftspec-bench kernels)", "",
        f"Device {meta['device']}; commit {meta['commit']}; bfloat16, random weights; copy bandwidth "
        f"{meta['bandwidth'] / 1e12:.2f} TB/s (runtime/floor.py), the floors' denominator.",
        f"Timing: {meta['timing']}", "",
        "A cell is the median us per call and, in parentheses, the GB/s achieved (bytes the op must "
        "move / time; an all-reduce: its message). Floor: those bytes over the copy bandwidth "
        "(weights + activations + the keys and values attended; none for an all-reduce, which is "
        "latency-bound). Shapes are one rank's shard at that tp. ours: our kernels (the fused set); "
        "cublas+nccl: F.linear and comm/nccl.py's all-reduce; sdpa: F.scaled_dot_product_attention "
        "under the tree mask; torch: the engine's torch functions, eager, in the same CUDA graph "
        "(forward and draft_step: the engine as the decoders run it, compiled blocks); persistent: "
        "a forward's layers in one launch of cuda/persistent.cu.", "",
    ]
    by_group: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_group[op_group(r["op"])].append(r)
    for group in OPS:
        if group in by_group:
            lines += _op_table(group, by_group[group])
    if notes:
        lines += ["## Not measured", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def _op_table(group: str, rows: list[dict]) -> list[str]:
    impls = [i for i in IMPLS if any(r["impl"] == i for r in rows)]
    with_context = any(r["context"] is not None for r in rows)
    shape_cols = ["op", "model", "tp", "m"] + (["context"] if with_context else [])
    cells: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        cells.setdefault(tuple(r[c] for c in shape_cols), {})[r["impl"]] = r
    over = [i for i in ("ours", "persistent") if i in impls] or ["ours"]  # the ratios shown
    head = shape_cols + impls + ["floor us"] + [f"{i} / floor" for i in over]
    lines = [f"## {group}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for shape, by_impl in cells.items():
        floor = next((r["floor_us"] for r in by_impl.values() if r["floor_us"] is not None), None)
        ratios = [f"{by_impl[i]['median_us'] / floor:.2f}x" if i in by_impl and floor else "" for i in over]
        row = [str(v) for v in shape] + [_cell(by_impl.get(i)) for i in impls]
        lines.append("| " + " | ".join(row + [_num(floor)] + ratios) + " |")
    return lines + [""]


def _cell(row: dict | None) -> str:
    return "" if row is None else f"{_num(row['median_us'])} ({row['gbps']:.0f})"


def _num(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
