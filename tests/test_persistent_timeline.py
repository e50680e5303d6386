"""persistent_timeline.summarize on stamps built by hand: each column is the quantity its docstring
names, and stamps that are not whole layers are refused."""
from __future__ import annotations

import numpy as np
import pytest

from paper_figures import persistent_timeline as timeline


def stamps_of(work_ns: list[list[int]], release_ns: int, layers: int, fence_ns: int = 200) -> np.ndarray:
    """Blocks that leave each barrier together `release_ns` after the last arrival, each fenced
    `fence_ns` after its arrival; block j's work in phase p is work_ns[p][j]."""
    phases, blocks = len(work_ns), len(work_ns[0])
    stamps = np.zeros((layers * phases + 1, blocks, timeline.STAMP_SLOTS), dtype=np.int64)
    stamps[0] = 1000
    for e in range(1, layers * phases + 1):
        stamps[e, :, 0] = stamps[e - 1, :, 2] + np.array(work_ns[(e - 1) % phases])
        stamps[e, :, 1] = stamps[e, :, 0] + fence_ns
        stamps[e, :, 2] = stamps[e, :, 0].max() + release_ns
    return stamps


def test_each_phase_reads_its_median_block_its_last_block_and_the_release():
    names = timeline.phase_names(qkv=False, attention=False, o_proj=False)
    assert names == ["A (gate_up)", "B (down)"]
    rows = timeline.summarize(stamps_of([[3000, 4000, 9000], [2000, 2000, 1000]], 500, layers=3), names)
    a, b, layer = rows
    assert (a["block us"], a["last us"], a["release us"], a["fence us"], a["last block"]) == (4.0, 9.0, 0.5, 0.2, 2)
    assert (b["block us"], b["last us"], b["release us"], b["last block"]) == (2.0, 2.0, 0.5, 0)
    assert (layer["last us"], layer["release us"]) == (11.0, 1.0)


def test_the_attention_layer_has_six_phases_and_partial_layers_are_refused():
    names = timeline.phase_names(qkv=True, attention=True, o_proj=True)
    assert len(names) == 6 and names[1].startswith("S") and names[2].startswith("R")
    with pytest.raises(ValueError):
        timeline.summarize(np.zeros((6, 4, timeline.STAMP_SLOTS), dtype=np.int64), names)


def test_marks_read_the_blocks_that_wrote_them():
    names = timeline.phase_names(qkv=False, attention=True, o_proj=False)  # S, R, A, B
    stamps = stamps_of([[3000, 5000, 1000], [100, 2000, 100], [1000] * 3, [1000] * 3], 500, layers=2)
    for layer in range(2):
        e = layer * 4 + 1  # S ends at barrier e: blocks 0 and 1 have items, block 1 arrives last
        stamps[e, 0, 3], stamps[e, 1, 3] = stamps[e - 1, 0, 2] + 1000, stamps[e - 1, 1, 2] + 3000
    rows = [r for r in timeline.marks(stamps, names) if r["mark"] == "q landed"]
    assert rows == [{"phase": "S (attention items)", "mark": "q landed", "block us": 2.0, "last block us": 3.0}]
    assert all(r["block us"] == "" for r in timeline.marks(stamps, names) if r["mark"] != "q landed")


def test_the_sm_clock_is_cycles_over_nanoseconds():
    stamps = np.zeros((1, 3, timeline.STAMP_SLOTS), dtype=np.int64)
    stamps[0, :, 0], stamps[0, :, 4] = 1000, 3000  # 2000 ns
    stamps[0, :, 3], stamps[0, :, 5] = 50, [3650, 3850, 4050]  # 3600, 3800, 4000 cycles
    assert timeline.sm_clock_ghz(stamps) == 1.9


def test_a_gemm_phases_wait_is_its_cycles_at_the_sms_clock():
    names = timeline.phase_names(qkv=False, attention=False, o_proj=False)  # A, B
    stamps = stamps_of([[3000, 4000], [1000, 1000]], 500, layers=2)
    stamps[0, :, 4], stamps[0, :, 3], stamps[0, :, 5] = stamps[0, :, 0] + 1000, 0, 2000  # 2 GHz
    for e in (1, 3):  # A's barriers; block 1 arrives last
        stamps[e, :, 3] = stamps[e - 1, :, 2] + [500, 700]  # first page consumed
        stamps[e, :, 6] = [2000, 6000]  # cycles waited: 1 us, 3 us
    rows = {r["mark"]: r for r in timeline.marks(stamps, names) if r["phase"] == "A (gate_up)"}
    assert (rows["first page consumed"]["block us"], rows["first page consumed"]["last block us"]) == (0.6, 0.7)
    assert (rows["waited on pages (sum)"]["block us"], rows["waited on pages (sum)"]["last block us"]) == (2.0, 3.0)
    assert rows["last page landed"]["block us"] == ""
