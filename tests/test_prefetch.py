"""L2 prefetch of o_proj's weights (swiftspec_core/kernels/prefetch.py, common.cuh's
prefetch_l2_rows): what it prefetches, and that tree_attention, which issues it, writes bitwise the
same outputs with it as without. CPU: the argument rules; GPU: the kernel."""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.kernels import prefetch
from swiftspec_core.kernels.prefetch import NONE, prefetch_args

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_nothing_to_prefetch_gives_the_null_arguments():
    assert prefetch_args(None) == NONE
    assert prefetch_args(torch.zeros(64, 64, dtype=torch.bfloat16)) == NONE  # a CPU tensor
    assert prefetch_args(object()) == NONE  # an AWQ weight: not one [N, K] tensor


@gpu
@pytest.mark.parametrize("n,k", [(64, 256), (6144, 4096), (128256, 2048), (7, 24)])
def test_prefetch_covers_every_row_from_its_start_within_half_the_l2(n, k):
    w = torch.empty(n, k, device="cuda", dtype=torch.bfloat16)
    base, rows, stride, per_row = (int(v) for v in prefetch_args(w))
    half_l2 = prefetch._l2_bytes(w.device.index) // 2
    assert (base, rows, stride) == (w.data_ptr(), n, 2 * k)
    assert per_row % 16 == 0 and 0 < per_row <= 2 * k and rows * per_row <= half_l2
    if 2 * n * k <= half_l2:
        assert per_row == 2 * k, "a weight that fits half the L2 is prefetched whole"
    assert prefetch_args(w[:, 1:]) == NONE  # not contiguous


@gpu
def test_attention_writes_the_same_bits_with_the_prefetch():
    from swiftspec_core.kernels.attention import tree_attention
    from test_kernel_attention import tree_case  # tests/ is on sys.path under pytest

    weight = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)  # the 8B's o_proj
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(32, 8, 128, 8, 1000, seed=1)
    want = tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, 32, 8)
    out = torch.full_like(want, float("nan"))
    tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, 32, 8, out=out, prefetch=weight)
    torch.cuda.synchronize()
    assert torch.equal(out, want)
