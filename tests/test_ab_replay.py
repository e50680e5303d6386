"""paper_figures/ab_replay.py's CPU side: a patch of cuda/ lands in a copy of cuda/ (never in
cuda/ itself), a patch of anything else or a missing one ends with an error line and exit 2."""
import difflib
import subprocess
import sys
from pathlib import Path

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


def test_a_patch_outside_cuda_is_refused(tmp_path, capsys):
    patch = tmp_path / "x.patch"
    patch.write_text(_patch_of("swiftspec_core/kernels/gemm.py", "a\n", "b\n"))
    (tmp_path / "into").mkdir()
    with pytest.raises(SystemExit) as exit_:
        ab_replay.patched_cuda(str(patch), tmp_path / "into")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_a_missing_patch_is_an_error_line_and_exit_2(tmp_path):
    run = subprocess.run([sys.executable, "paper_figures/ab_replay.py", "--patch", str(tmp_path / "none.patch")],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
                         env={"PYTHONPATH": ".", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"error: no patch at {tmp_path / 'none.patch'}"]
