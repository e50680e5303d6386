"""paper_figures/sass_mix.py: kernels and loop bodies found in a cuobjdump listing and their
instructions put on Hopper's pipes; on the AWQ GEMM itself where nvcc and a cuobjdump are at hand
(skipped otherwise: the toolkit here has nvcc, the cuobjdump comes from NVIDIA's wheel)."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "paper_figures" / "sass_mix.py"
_SPEC = importlib.util.spec_from_file_location("sass_mix", _PATH)
sass_mix = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sass_mix)

LISTING = """
\t\tFunction : k_one
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;           /* 0x00000a00ff017624 */
        /*0010*/                   LOP3.LUT R2, R3, 0xf000f, R4, 0xea, !PT ;          /* 0x000f000f03027812 */
        /*0020*/                   HMMA.16816.F32.BF16 R8, R12, R16, R8 ;             /* 0x000000100c08723c */
        /*0030*/              @!P0 BRA 0x10 ;                                         /* 0x0000000000008947 */
        /*0040*/                   LDGSTS.E.BYPASS.128 [R5], desc[UR4][R6.64] ;       /* 0x0000000006057fae */
        /*0050*/                   EXIT ;                                              /* 0x000000000000794d */
\t\tFunction : k_two
        /*0000*/                   FFMA R1, R2, R3, R4 ;                               /* 0x0000000302017223 */
        /*0010*/                   BRA 0x20 ;                                          /* 0x0000000000007947 */
"""


def test_a_listing_is_split_into_kernels_and_loops():
    found = sass_mix.kernels(LISTING)
    assert list(found) == ["k_one", "k_two"]
    assert [op for _, op, _ in found["k_one"]] == ["IMAD.MOV.U32", "LOP3.LUT", "HMMA.16816.F32.BF16", "BRA",
                                                  "LDGSTS.E.BYPASS.128", "EXIT"]
    assert sass_mix.loops(found["k_one"]) == [(1, 3)]  # the branch back to 0x10: LOP3 .. BRA
    assert sass_mix.loops(found["k_two"]) == []  # a forward branch is no loop
    pipes = [sass_mix.pipe_of(op) for _, op, _ in found["k_one"]]
    assert pipes == ["fma-heavy", "alu", "tensor", "other", "memory", "other"]


@pytest.mark.skipif(not shutil.which("nvcc") or not (os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")),
                    reason="needs nvcc and a cuobjdump")
def test_the_awq_gemm_group_loop_has_its_mma_count():
    # A 4 KB group at M <= 8: 4 chunks x (8 mma's on codes + 2 on x alone); a fixed count whatever
    # ptxas schedules, in the one loop with mma's (not the largest: since the RMSNorms moved into the
    # epilogue, its loop has more instructions than the group loop).
    code = sass_mix.kernels(sass_mix.disassemble("awq_gemm"))["awq_gemm_r8_g128_c1"]
    mma = [sum(op.startswith("HMMA") for _, op, _ in code[first:last + 1]) for first, last in sass_mix.loops(code)]
    assert sorted(mma)[-2:] == [0, 40]
