"""paper_figures/cluster_occupancy.py's host side on the CPU: build.launch_config's cluster attribute
it launches with sits where the driver reads it, its kernel compiles (nvcc, where at hand), and bad
arguments end in one error line, exit 2. What it measures needs a GPU (NOTES v171)."""
from __future__ import annotations

import ctypes
import shutil

import pytest

from swiftspec_core.kernels import build

from paper_figures import cluster_occupancy as probe
from nvcc_compile import compile_text
from script_checks import assert_main_fails


def test_a_cluster_launch_config_holds_its_attribute():
    """build.launch_config's cluster attribute (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 4) with its
    dimension where the driver reads it, after the PDL attribute where both are asked for."""
    config = build.launch_config((128,), (256,), 4096, 0, pdl=False, cluster=8)
    attr = config.attrs.contents
    assert (config.num_attrs, attr.id, config.grid[0], config.block[0], config.shared_mem) == (1, 4, 128, 256, 4096)
    assert list((ctypes.c_uint * 3).from_address(ctypes.addressof(attr.value))) == [8, 1, 1]
    both = build.launch_config((128,), (256,), 0, 0, pdl=True, cluster=1)
    assert both.num_attrs == 2 and (both.attrs[0].id, both.attrs[1].id) == (6, 4)
    assert both.attrs[0].value.programmatic_stream_serialization == 1 and list(both.attrs[1].value.cluster_dim) == [1, 1, 1]


def test_the_kernel_compiles(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    compile_text(probe.SOURCE, tmp_path, "meet")


@pytest.mark.parametrize("argv", [["--shared", "0"], ["--shared", str(300 * 1024)]])
def test_bad_arguments_end_in_one_error_line(argv, monkeypatch, capsys):
    assert_main_fails(probe.main, ["cluster_occupancy.py", *argv], monkeypatch, capsys)
