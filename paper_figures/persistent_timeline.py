"""Where a persistent layer's time goes (persistent_mlp.py --timeline; NOTES v162-v168, v177):
thread 0 of every block stamps %globaltimer at each grid barrier e, on arrival, after its fence and
on departure, into stamps[e + 1][block][0..2] (ns; cuda/persistent_ring.cuh), and its phase's own
moments into slots 3.. (MARKS names them); entry 0 holds the block's start (slots 0..2), its clock64 there
(3) and the launch's end in ns and clock64 (4, 5). A phase is the work between two barriers; per
phase, over the layers after the first (its start is the launch's):
- block us: a block's arrival less its own departure from the barrier before (median over blocks);
- last us: the last arrival less the median departure before: the phase on the critical path;
- release us: the median departure less the last arrival: the barrier's hand-over;
- fence us: of it, the last block's fence (its writes made visible before it counts itself);
- last block: the block that arrived last most often (an imbalance shows as one block or a set).
The stamps step in 0.256 us on an H200 (NOTES v145); medians over blocks and layers see through it.
marks() reads a phase's marks: each the time since the block left the barrier before, or for a
mark in CYCLES (a GEMM phase's time waiting on pages, v177) its clock64 cycles at the SMs' clock;
sm_clock_ghz() the SMs' clock over the launch (entry 0 holds each block's clock64 at its start and
end)."""
from __future__ import annotations

from collections import Counter

import numpy as np


STAMP_SLOTS = 8  # cuda/persistent_ring.cuh's
GEMM_MARKS = ["first page consumed", "last page landed", "last page consumed", "waited on pages (sum)",
              "x landed"]
MARKS = {"Q (qkv)": GEMM_MARKS,
         "S (attention items)": ["q landed", "first chunk landed", "scores, maxima in smem", "outputs in smem",
                                 "partials written"],
         "R (merge)": ["maxima read", "merged", "written"],
         "O (o_proj)": GEMM_MARKS, "A (gate_up)": GEMM_MARKS, "B (down)": GEMM_MARKS}  # thread 0's (cuda/persistent.cu)
CYCLES = {"waited on pages (sum)"}  # marks that hold clock64 cycles, not a %globaltimer moment


TARGET_PHASES = ["Q (qkv)", "T (target attention items)", "M (target merge)", "O (o_proj)", "A (gate_up)",
                 "B (down)"]  # the target build's (cuda/persistent_target.cuh: T, M write no marks)


def phase_names(qkv: bool, attention: bool, o_proj: bool) -> list[str]:
    """A layer's phases in the kernel's order (cuda/persistent.cu): each ends in a grid barrier."""
    return ((["Q (qkv)"] if qkv else []) + (["S (attention items)", "R (merge)"] if attention else [])
            + (["O (o_proj)"] if o_proj else []) + ["A (gate_up)", "B (down)"])


def phase_ends(stamps: np.ndarray, per_layer: int, p: int) -> list[int]:
    """The stamps' entries of the barriers that end phase p in the layers read (2.., or the one
    layer; entry e - 1 is the barrier before)."""
    barriers = stamps.shape[0] - 1
    if barriers % per_layer or barriers == 0:
        raise ValueError(f"{barriers} barriers are not whole layers of {per_layer} phases")
    layers = barriers // per_layer
    return [layer * per_layer + p + 1 for layer in range(1 if layers > 1 else 0, layers)]


def summarize(stamps: np.ndarray, names: list[str]) -> list[dict]:
    """stamps [layers * len(names) + 1, G, STAMP_SLOTS] (ns) -> a row a phase (medians over layers
    2.., or the one layer) and a last row, the layer: the phases' last + release summed."""
    rows = []
    for p, name in enumerate(names):
        block, last, release, fence, who = [], [], [], [], Counter()
        for e in phase_ends(stamps, len(names), p):
            arrive, fenced, leave, left_before = stamps[e, :, 0], stamps[e, :, 1], stamps[e, :, 2], stamps[e - 1, :, 2]
            lastb = int(arrive.argmax())
            block.append(np.median(arrive - left_before))
            last.append(arrive[lastb] - np.median(left_before))
            release.append(np.median(leave) - arrive[lastb])
            fence.append(fenced[lastb] - arrive[lastb])
            who[lastb] += 1
        rows.append({"phase": name, "block us": np.median(block) / 1e3, "last us": np.median(last) / 1e3,
                     "release us": np.median(release) / 1e3, "fence us": np.median(fence) / 1e3,
                     "last block": who.most_common(1)[0][0]})
    rows.append({"phase": "the layer (last + release summed)", "block us": "",
                 "last us": sum(r["last us"] for r in rows), "release us": sum(r["release us"] for r in rows),
                 "fence us": sum(r["fence us"] for r in rows), "last block": ""})
    return rows


def marks(stamps: np.ndarray, names: list[str]) -> list[dict]:
    """A row a mark of the phases in MARKS: the median over layers (2..) of the median over the
    blocks that wrote it of (mark - the block's departure before), and the same for the block that
    arrived last, us; a mark in CYCLES is a duration, its cycles at the SMs' clock."""
    rows, ghz = [], None  # the SMs' clock, read once a CYCLES mark needs it
    for p, name in enumerate(names):
        for k, label in enumerate(MARKS.get(name, [])):
            typical, last = [], []
            for e in phase_ends(stamps, len(names), p):
                raw = stamps[e, :, 3 + k]
                wrote = raw > 0
                if not wrote.any():
                    continue
                if label in CYCLES:
                    ghz = ghz or sm_clock_ghz(stamps)
                    ns = raw / ghz
                else:
                    ns = raw - stamps[e - 1, :, 2]  # since the departure before
                typical.append(np.median(ns[wrote]))
                lastb = int(stamps[e, :, 0].argmax())
                if wrote[lastb]:
                    last.append(ns[lastb])
            rows.append({"phase": name, "mark": label,
                         "block us": np.median(typical) / 1e3 if typical else "",
                         "last block us": np.median(last) / 1e3 if last else ""})
    return rows


def sm_clock_ghz(stamps: np.ndarray) -> float:
    """The SMs' clock over the launch: entry 0 holds each block's start (slot 0, ns; slot 3, its
    clock64) and end (slots 4, 5); the median over blocks of cycles / ns."""
    start = stamps[0]
    return float(np.median((start[:, 5] - start[:, 3]) / (start[:, 4] - start[:, 0])))
