"""paper_figures/awq_fp16_probe.py (CPU): its ablation (awq_gemm.cu without the weight copies) finds
each copy it removes exactly once, leaves none behind, and compiles."""
import shutil

import pytest

import awq_fp16_probe
from nvcc_compile import compile_text


def test_the_ablation_removes_every_weight_copy():
    code = awq_fp16_probe.source_without_copies()
    assert code.count("copy16_streamed(") == 1  # its definition (common.cuh) only


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_ablation_compiles(tmp_path):
    compile_text(awq_fp16_probe.source_without_copies(), tmp_path, "awq_gemm")
