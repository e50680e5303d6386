"""paper_figures/ab_replay.py's CPU side: a patch of cuda/ lands in a copy of cuda/ (never in
cuda/ itself); a patch of anything else, one that does not apply, a missing one or bad arguments
end with one error line and exit 2; the capture order cancels position trends; the verdict's
interval is taken over graphs; the two builds switch sources, caches and B's variables."""
import difflib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paper_figures import ab_replay
from swiftspec_core.kernels import build


def _patch_of(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


def test_a_cuda_patch_lands_in_the_copy_only(tmp_path):
    original = (build.CUDA_DIR / "gemm_swiglu.cu").read_text()
    changed = original.replace('#include "gemm_tile.cuh"', '#define GEMM_WEIGHTS_AFTER_WAIT\n#include "gemm_tile.cuh"', 1)
    assert changed != original
    patch = tmp_path / "x.patch"
    patch.write_text(_patch_of("cuda/gemm_swiglu.cu", original, changed))
    (tmp_path / "into").mkdir()
    copy = ab_replay.patched_cuda(str(patch), tmp_path / "into")
    assert (copy / "gemm_swiglu.cu").read_text() == changed
    assert (copy / "gemm.cu").read_text() == (build.CUDA_DIR / "gemm.cu").read_text()
    assert (build.CUDA_DIR / "gemm_swiglu.cu").read_text() == original


@pytest.mark.parametrize("args", [["--patch", "none.patch"], ["--patch", "", "--env", "NAME"],
                                  ["--patch", "", "--graphs", "1"]])
def test_bad_arguments_are_an_error_line_and_exit_2(tmp_path, args):
    run = subprocess.run([sys.executable, "paper_figures/ab_replay.py", *args], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], env={"PYTHONPATH": ".", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and run.stderr.startswith("error: ")
    if args[1]:
        assert run.stderr.strip() == f"error: no patch at {args[1]}"


def test_the_capture_order_is_balanced_and_cancels_trends():
    assert ab_replay.thue_morse(4) == [0, 1, 1, 0]
    order = ab_replay.thue_morse(8)
    assert order == [0, 1, 1, 0, 1, 0, 0, 1]
    position = np.arange(8)
    for degree in (0, 1, 2):  # a position cost of degree < 3 sums alike on both sides
        cost = position ** degree
        assert cost[np.array(order) == 0].sum() == cost[np.array(order) == 1].sum()


def _times(offsets: list[float], order: list[int], shift: float, rounds: int = 200, seed: int = 0) -> np.ndarray:
    """[rounds, graphs] us: 1000 + each graph's own offset + `shift` on side B + round noise."""
    rng = np.random.default_rng(seed)
    base = 1000.0 + np.asarray(offsets) + shift * np.asarray(order)
    return base + rng.normal(0, 0.3, size=(rounds, len(order)))


def test_contrast_takes_its_interval_over_graphs():
    order = ab_replay.thue_morse(8)
    offsets = [0.0, 2.1, -1.4, 2.6, -2.2, 0.7, 1.5, -0.9]  # where each graph's buffers sit: +-2..3 us
    same = ab_replay.contrast(_times(offsets, order, 0.0), order)
    assert same["95% low"] < 0 < same["95% high"]
    assert same["95% high"] - same["95% low"] > 2  # the graphs' spread, not the round noise's ~0.1
    assert same["A spread us"] == pytest.approx(2.6, abs=0.2)  # A: graphs 0, 3, 5, 6
    assert same["B spread us"] == pytest.approx(4.3, abs=0.2)  # B: graphs 1, 2, 4, 7
    moved = ab_replay.contrast(_times(offsets, order, 10.0), order)
    assert moved["95% low"] > 0 and abs(moved["B - A us"] - (same["B - A us"] + 10)) < 0.2
    assert moved["A us"] == pytest.approx(same["A us"], abs=0.2)


def test_contrast_needs_two_graphs_a_side():
    with pytest.raises(ValueError):
        ab_replay.contrast(np.zeros((5, 3)), [0, 1, 1])


def test_builds_switch_the_sources_and_keep_each_sides_caches(tmp_path, monkeypatch):
    for name in ("CUDA_DIR", "module", "_function", "_shared_limit"):  # restored after the test
        monkeypatch.setattr(build, name, getattr(build, name))
    original = (build.CUDA_DIR / "gemm_swiglu.cu").read_text()
    patch = tmp_path / "x.patch"
    patch.write_text(_patch_of("cuda/gemm_swiglu.cu", original, original + "// patched\n"))
    (tmp_path / "into").mkdir()
    monkeypatch.delenv("SWIFTSPEC_AB_TRIAL", raising=False)
    builds = ab_replay.Builds(ab_replay.patched_cuda(str(patch), tmp_path / "into"), {"SWIFTSPEC_AB_TRIAL": "1"})
    builds.use(1)
    b_module = build.module
    assert build.source("gemm_swiglu").endswith("// patched\n") and os.environ["SWIFTSPEC_AB_TRIAL"] == "1"
    builds.use(0)
    assert not build.source("gemm_swiglu").endswith("// patched\n") and "SWIFTSPEC_AB_TRIAL" not in os.environ
    assert build.module is not b_module and build._function is not builds.caches[1][1]
    builds.use(1)
    assert build.module is b_module  # the same cache again: nothing of B's is rebuilt or dropped


@pytest.mark.parametrize("path, old, new, says", [
    ("swiftspec_core/kernels/gemm.py", "a\n", "b\n", "must patch cuda/ files only"),
    ("cuda/gemm_swiglu.cu", "no such line\n", "another\n", "does not apply")])
def test_a_patch_outside_cuda_or_that_does_not_apply_is_an_error_line_and_exit_2(tmp_path, capsys, path, old, new,
                                                                                   says):
    patch = tmp_path / "x.patch"
    patch.write_text(_patch_of(path, old, new))
    (tmp_path / "into").mkdir()
    with pytest.raises(SystemExit) as exit_:
        ab_replay.patched_cuda(str(patch), tmp_path / "into")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and len(err.strip().splitlines()) == 1


def test_rows_print_as_a_markdown_table(capsys):
    from paper_figures.timing import print_rows

    print_rows([{"B": "x.patch", "B - A us": 1.234, "same bits": True}, {"B": "(none)", "B - A us": -0.5, "same bits": False}])
    assert capsys.readouterr().out.splitlines() == [
        "| B | B - A us | same bits |", "|---|---|---|", "| x.patch | 1.23 | True |", "| (none) | -0.50 | False |"]


def test_the_floor_counts_every_weight_and_the_cache_at_the_bandwidth():
    from swiftspec_bench.kernel_shapes import kv_bytes, shard_args

    short, long_ = (ab_replay.floor_us("llama-3.2-1b", 9, context, 4e12) for context in (1000, 2000))
    args = shard_args("llama-3.2-1b", 1)
    assert long_ - short == pytest.approx(kv_bytes(args, 1000, args.n_layers) / 4e12 * 1e6)
    assert ab_replay.floor_us("llama-3.2-1b", 9, 1000, 2e12) == pytest.approx(2 * short)
    assert 500 < short < 700  # ~2.5 GB of bf16 weights and the cache at 4 TB/s
