"""paper_figures/read_probe.py: its probes compile (CPU, nvcc), a bad --shapes ends in one `error:` line
before any GPU work, and on a GPU every mechanism reads each code word of its tiles exactly once (the
xor of its threads' sinks is the xor of the codes) with the output poisoned first."""
import shutil

import numpy as np
import pytest
import torch

import read_probe
from nvcc_compile import compile_text
from script_checks import assert_main_fails


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_probes_compile(tmp_path):
    report = compile_text(read_probe.SOURCE, tmp_path, "read_probe")
    assert "error" not in report.lower()


@pytest.mark.parametrize("shapes", ["", "o,mlp", "Q"])
def test_unknown_shapes_are_refused_before_any_gpu_work(shapes, monkeypatch, capsys):
    monkeypatch.setattr(read_probe, "compile_source", lambda code: pytest.fail("compiled before the check"))
    line = assert_main_fails(read_probe.main, ["read_probe.py", "--shapes", shapes], monkeypatch, capsys)
    assert "--shapes" in line and "gate_up" in line


def test_the_split_shapes_read_qkvs_codes():
    tiles, k, _ = read_probe.SHAPES["qkv"]
    for name, (split_tiles, split_k, splits) in read_probe.SPLIT_SHAPES.items():
        assert split_tiles * split_k == tiles * k, name  # the same bytes
        assert split_k // 128 >= splits, name  # every warp with a group


def test_the_gemm_occupancy_fits_as_many_blocks_as_awq_gemms_registers():
    from swiftspec_core.kernels.awq_gemm import SHARED_PER_SM, WARPS_PER_SM

    for splits in (3, 11, 19, 22):
        blocks, shared = WARPS_PER_SM // splits, read_probe.gemm_occupancy_shared(splits) + 1024
        assert blocks * shared <= SHARED_PER_SM < (blocks + 1) * shared
        assert splits * 4 * 1024 <= shared - 1024  # the ring (3 in flight) fits in it


def test_the_shapes_are_the_plans_of_the_70b_layers():
    from swiftspec_core.kernels.awq_gemm import plan
    from swiftspec_core.models.awq import TILE_COLUMNS

    sizes = {"gate_up": (57344, 8192), "down": (8192, 28672), "o": (8192, 8192), "qkv": (10240, 8192)}
    for name, (n, k) in sizes.items():  # [N, K] of the 70B's layer projections at TP 1; an H100 / H200's 132 SMs
        assert read_probe.SHAPES[name] == (n // TILE_COLUMNS, k, plan(n, k, 128, 132)[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("mechanism", read_probe.MECHANISMS)
@pytest.mark.parametrize("depth", read_probe.DEPTHS)
@pytest.mark.parametrize("shared, hold", [(0, 0), (113 * 1024, 1000)])
def test_every_code_word_is_read_once(mechanism, depth, shared, hold):
    from swiftspec_core.kernels.build import compile_source

    fn = compile_source(read_probe.SOURCE).get_function(f"read_{mechanism}_d{depth}")
    tiles, k, splits = 3, 1024, 3  # 8 groups a tile over 3 warps: 3, 3 and 2 groups
    codes = torch.randint(-2**31, 2**31 - 1, (tiles * k * 32 // 4,), dtype=torch.int32, device="cuda")
    sink = torch.full((tiles * 32 * splits,), -1, dtype=torch.int32, device="cuda")  # poisoned
    read_probe.read(fn, mechanism, depth, codes, sink, tiles, k, splits, shared, hold)
    torch.cuda.synchronize()

    def xor_all(t: torch.Tensor) -> int:
        return int(np.bitwise_xor.reduce(t.cpu().numpy().view(np.uint32)))

    assert xor_all(sink) == xor_all(codes)
