"""Figures from a run's rows, each as PNG and PDF:
(a) speed per dataset and system, grouped bars (the paper's Fig. 6 shape);
(b) per-query speed of each system, sorted, the slow tail (p95 of time per token) marked (Fig. 7);
(c) mean accepted length (tokens per target verification) per dataset and system;
(d) where a pair ran swiftspec at several splits: its speed against the target group's GPUs, the
    other systems as lines across (Fig. 9)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .compare import mean_accepted  # noqa: E402
from .placement import SPLIT_LABEL, label_split, shared_gpu_systems  # noqa: E402


def provenance(rows: pd.DataFrame) -> str:
    """What a figure's numbers come from: device, weights, and how acceptance was obtained."""
    def values(col):
        return "+".join(str(v) for v in dict.fromkeys(rows[col])) if col in rows else "?"

    replayed = "acceptance" in rows and (rows["acceptance"] == "replayed").any()
    acceptance = "acceptance replayed" if replayed else f"acceptance {values('acceptance')}"
    shared = shared_gpu_systems(rows)
    void = f"\ntimes void: {', '.join(shared)} shared a GPU" if shared else ""
    return f"device {values('device')}, weights {values('weights')}, {acceptance}{void}"


def _grouped_bars(ax, table: pd.DataFrame, ylabel: str) -> None:
    """table: index = groups on the x axis, columns = bars in each group."""
    n = max(len(table.columns), 1)
    width = 0.8 / n
    x = np.arange(len(table.index))
    for i, system in enumerate(table.columns):
        ax.bar(x + (i - (n - 1) / 2) * width, table[system].to_numpy(dtype=float), width, label=system)
    ax.set_xticks(x, table.index, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)


def _per_pair(frame: pd.DataFrame, draw, title: str, ylabel: str, out: Path, stem: str) -> list[Path]:
    """One panel per (target, draft): rows of two drafts for one target are never drawn together."""
    pairs = list(frame.groupby(["target", "draft"], sort=False))
    fig, axes = plt.subplots(1, len(pairs), figsize=(max(6.0, 2.0 + 1.2 * frame["dataset"].nunique()) *
                                                      len(pairs), 4.5), squeeze=False)
    for ax, ((target, draft), rows) in zip(axes[0], pairs):
        draw(ax, rows)
        ax.set_title(f"{target}\ndraft {draft}", fontsize="medium")
        ax.set_ylabel(ylabel)
    fig.suptitle(f"{title}\n{provenance(frame)}", fontsize="medium")
    fig.tight_layout()
    return _save(fig, out, stem)


def _save(fig, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def speed_by_dataset(frame: pd.DataFrame, out: Path) -> list[Path]:
    def draw(ax, rows):
        table = rows.pivot_table(index="dataset", columns="system", values="tokens_per_s", aggfunc="mean",
                                 sort=False)
        _grouped_bars(ax, table, "tokens/s (mean)")

    return _per_pair(frame, draw, "Decoding speed per dataset", "tokens/s (mean)", out, "speed_by_dataset")


def per_query_speed(frame: pd.DataFrame, out: Path) -> list[Path]:
    def draw(ax, rows):
        for system, by_system in rows.groupby("system", sort=False):
            speeds = np.sort(by_system["tokens_per_s"].to_numpy(dtype=float))
            rank = np.arange(1, len(speeds) + 1) / len(speeds) * 100
            line, = ax.plot(rank, speeds, marker="o" if len(speeds) < 30 else None, ms=3, label=system)
            # p95 time per token is the speed below which the slowest 5% of queries fall
            p95_ms = np.quantile(by_system["latency_s"] / by_system["new_tokens"].clip(lower=1), 0.95) * 1e3
            ax.axhline(1e3 / p95_ms, color=line.get_color(), ls="--", lw=0.8)
        ax.set_xlabel("queries, slowest first (%)")
        ax.set_xlim(0, 100)
        ax.legend(fontsize="small", title="dashed: p95 time/token", title_fontsize="x-small")
        ax.grid(alpha=0.3)

    return _per_pair(frame, draw, "Per-query decoding speed, sorted", "tokens/s", out, "per_query_speed")


def accepted_length(frame: pd.DataFrame, out: Path) -> list[Path]:
    def draw(ax, rows):
        datasets = list(dict.fromkeys(rows["dataset"]))
        systems = list(dict.fromkeys(rows["system"]))
        table = pd.DataFrame({s: [mean_accepted(rows[(rows["dataset"] == d) & (rows["system"] == s)])
                                  for d in datasets] for s in systems}, index=datasets)
        _grouped_bars(ax, table, "tokens per verification")

    return _per_pair(frame, draw, "Mean accepted length per dataset", "tokens per verification", out,
                     "accepted_length")


def by_target_gpus(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """One pair's rows -> (mean tokens/s of each split system family [target GPUs x family, e.g.
    swiftspec:graft:fused], the other systems' mean tokens/s)."""
    gpus = rows["system"].map(label_split).str[0].astype(float)  # target GPUs; NaN: not at a split
    split_rows = rows[gpus.notna()]
    family = split_rows["system"].str.replace(SPLIT_LABEL, "", regex=True)
    table = split_rows.pivot_table(index=gpus[gpus.notna()].rename("target GPUs"), columns=family,
                                   values="tokens_per_s", aggfunc="mean", sort=True)
    others = rows[gpus.isna()].groupby("system", sort=False)["tokens_per_s"].mean()
    return table, others


def speed_by_target_gpus(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Fig. 9's shape, drawn only where some pair ran swiftspec at two splits or more."""
    if max(len(by_target_gpus(rows)[0]) for _, rows in frame.groupby(["target", "draft"])) < 2:
        return []

    def draw(ax, rows):
        table, others = by_target_gpus(rows)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for family in table.columns:
            ax.plot(table.index, table[family].to_numpy(), marker="o", label=family)
        for i, (system, speed) in enumerate(others.items(), start=len(table.columns)):
            # a color each, after the split families': axhline alone draws every line in the first
            ax.axhline(speed, ls="--", lw=0.8, color=colors[i % len(colors)], label=system)
        ax.set_xticks(table.index)
        ax.set_xlabel("GPUs of the target group")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)

    return _per_pair(frame, draw, "Speed against the target's share of the GPUs", "tokens/s (mean)", out,
                     "speed_by_target_gpus")


def plot_run(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Draw every figure of a run into `out` (created); returns the files written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return (speed_by_dataset(frame, out) + per_query_speed(frame, out) + accepted_length(frame, out)
            + speed_by_target_gpus(frame, out))
