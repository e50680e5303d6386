"""The top-k + logsumexp kernel (cuda/topk.cu): its reference on CPU against float64, and on a GPU
the kernel against the reference on fresh random rows (ties, -inf, strided rows), its output
memory poisoned first, and a row's result alone equal to the same row among others."""
from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from swiftspec_core.kernels.topk import KS, MAX_SLICES, SLICE_TARGET, slices, supports, top_k, topk, topk_reference

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available() or importlib.util.find_spec("cupy") is None,
                               reason="needs a CUDA GPU and cupy")


def naive(row: list[float], k: int) -> tuple[list[float], list[int], float]:
    order = sorted(range(len(row)), key=lambda i: (-row[i], i))[:k]
    m = max(row)
    lse = m + math.log(sum(math.exp(x - m) for x in row)) if m != -math.inf else -math.inf
    return [row[i] for i in order], order, lse


def rows_with_ties(t: int, v: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(t, v, generator=gen) * 4).to(torch.bfloat16).float()  # bf16 values: many ties
    x[:, torch.randint(0, v, (max(1, v // 50),), generator=gen)] = -math.inf
    if v > 10:
        x[0, 3] = x[0, 7] = x[0].max() + 1  # a tie at the top: index order decides
    if v > 2 * SLICE_TARGET:
        x[1, 100] = x[1, v - 5] = x[1].max() + 1  # a tie between two slices' lists
        x[2, :SLICE_TARGET + 7] = -math.inf  # a slice of -inf only (its sum must add nothing)
    return x


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_reference_ranks_by_value_then_index_and_its_lse_is_float64s(k):
    x = rows_with_ties(3, 257, seed=k)
    values, indices, lse = topk_reference(x, k)
    for t in range(3):
        v, i, s = naive(x[t].tolist(), k)
        assert values[t].tolist() == v and indices[t].tolist() == i
        assert abs(lse[t].item() - s) <= 1e-5 * abs(s) + 1e-6


def test_torch_path_matches_the_reference_up_to_the_order_of_equal_values():
    x = torch.randn(4, 1000, dtype=torch.float64).float()  # no ties
    for got, want in zip(top_k(x, 8, fused=False), topk_reference(x, 8)):
        torch.testing.assert_close(got, want)


def test_slices_depend_on_the_vocabulary_alone_and_fit_the_merge_warp():
    assert slices(37) == 1 and slices(SLICE_TARGET) == 1 and slices(SLICE_TARGET + 1) == 2
    assert slices(128256) == MAX_SLICES == slices(151936)
    for v in (37, 1000, 32000, 128256, 151936):  # every slice non-empty: the last starts before V
        n = slices(v)
        assert (n - 1) * -(-v // n) < v


def test_supports_and_refuses():
    x = torch.zeros(2, 16)
    assert not supports(x, 2)  # CPU: the decoders take the torch path
    with pytest.raises(ValueError, match="topk"):
        topk(x, 2)


def poisoned_call(logits: torch.Tensor, k: int):
    """topk with the caching allocator's blocks of its output sizes filled with NaN / -1 first."""
    kk = next(c for c in KS if c >= k)
    rows = logits.shape[0]
    bait = [torch.full((rows, kk), math.nan, device="cuda"), torch.full((rows, kk), -1, dtype=torch.int64, device="cuda"),
            torch.full((rows,), math.nan, device="cuda")]
    del bait
    return topk(logits, k)


@needs_gpu
@pytest.mark.parametrize("v", [37, 1000, 32000, 128256, 151936])
@pytest.mark.parametrize("k", [1, 2, 3, 8, 16])
def test_kernel_equals_reference(v, k):
    if k > v:
        pytest.skip("k > V")
    x = rows_with_ties(9, v, seed=v + k).cuda()
    values, indices, lse = poisoned_call(x, k)
    want_v, want_i, want_lse = topk_reference(x, k)
    bad = (indices != want_i).nonzero()
    assert bad.numel() == 0, f"first index mismatch at {bad[0].tolist()}: {indices[tuple(bad[0])]} vs {want_i[tuple(bad[0])]}"
    assert torch.equal(values, want_v)
    err = (lse - want_lse).abs().max().item()
    print(f"V {v} k {k}: lse max abs error {err:.3g}")
    assert err <= 1e-5 * want_lse.abs().max().item() + 1e-5


@needs_gpu
def test_strided_rows_and_a_row_alone():
    wide = torch.randn(16, 130000, device="cuda")
    x = wide[:, :128256]  # rows 130000 apart
    values, indices, lse = topk(x, 8)
    want = topk_reference(x, 8)
    assert torch.equal(values, want[0]) and torch.equal(indices, want[1])
    alone = topk(x[5:6].clone(), 8)
    assert torch.equal(alone[0][0], values[5]) and torch.equal(alone[1][0], indices[5])
    assert torch.equal(alone[2][0], lse[5])  # the sum's order depends on V alone


@needs_gpu
def test_the_verifiers_greedy_read_from_the_kernel_is_argmaxs():
    """greedy_with_margins takes the kernel's first index as the token (no argmax): on rows with
    ties at the top it must be argmax's first maximum, and the runner-up and margin torch's."""
    from swiftspec_core.decoders.verifier import greedy_with_margins

    x = rows_with_ties(9, 128256, seed=3).cuda()
    x[4, 10] = x[4, 20] = x[4, 30] = x[4].max() + 2  # three-way tie: the runner-up ties the best
    best, margin, second = greedy_with_margins(x, fused=True)
    assert best == x.argmax(-1).tolist()
    _, want_i, _ = topk_reference(x, 2)
    assert second == want_i[:, 1].tolist() and margin[4] == 0.0
