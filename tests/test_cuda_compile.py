"""Every cuda/*.cu compiles for sm_90 with nvcc, as build.py hands it to NVRTC (our headers inlined,
the same options), no kernel spills registers to local memory, and the AWQ GEMMs' static shared
memory is whole 128-byte lines (their rings, in the dynamic shared memory after it, start on one:
awq_gemm_block.cuh). Runs wherever nvcc is on PATH,
GPU or not (CI has nvcc 13.0), so a compile error shows before a GPU machine is lent; skips otherwise.
One nvcc call per file; the files are globbed when the tests are collected.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from swiftspec_core.kernels import build

NVCC = shutil.which("nvcc")
SOURCES = sorted(path.stem for path in build.CUDA_DIR.glob("*.cu"))
# ptxas -v, per function: "Function properties for NAME\n    S bytes stack frame, N bytes spill stores, N bytes spill loads"
_PROPERTIES = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                         r"(\d+) bytes spill loads")
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_STATIC_SHARED = re.compile(r"(\d+) bytes smem")
RING_SOURCES = ("awq_gemm", "awq_gemm_allreduce")  # kernels whose cp.async rings start the dynamic shared memory


def spills(ptxas_report: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """-> (entry functions compiled, {function: (spill store bytes, spill load bytes)})."""
    found = {name: (int(stores), int(loads)) for name, _stack, stores, loads in _PROPERTIES.findall(ptxas_report)}
    return _ENTRY.findall(ptxas_report), found


def static_shared(ptxas_report: str) -> dict[str, int]:
    """-> {entry function: its static shared memory in bytes (0 where ptxas reports none)}."""
    parts = _ENTRY.split(ptxas_report)  # [before, name, its lines, name, its lines, ...]
    return {name: int(m.group(1)) if (m := _STATIC_SHARED.search(lines)) else 0
            for name, lines in zip(parts[1::2], parts[2::2])}


def test_spill_report_is_parsed():
    report = """ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, used 0 barriers
ptxas info    : Compiling entry function 'b_c4' for 'sm_90'
ptxas info    : Function properties for b_c4
    48 bytes stack frame, 44 bytes spill stores, 40 bytes spill loads
"""
    assert spills(report) == (["a", "b_c4"], {"a": (0, 0), "b_c4": (44, 40)})
    assert static_shared(report + "ptxas info    : Used 74 registers, used 1 barriers, 128 bytes smem\n") == \
        {"a": 0, "b_c4": 128}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", SOURCES)
def test_kernel_source_compiles_without_spills(name, tmp_path):
    src = tmp_path / f"{name}.cu"
    src.write_text(build.source(name))
    cmd = build.nvcc_command(str(src), str(tmp_path / f"{name}.cubin"), "sm_90", "-Xptxas", "-v")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    report = done.stdout + done.stderr
    assert done.returncode == 0, f"nvcc failed on cuda/{name}.cu (inlined source: {src}):\n{report}"
    entries, found = spills(report)
    print(f"cuda/{name}.cu:\n{report}")
    assert entries, f"cuda/{name}.cu: ptxas reported no entry function (no extern \"C\" __global__?):\n{report}"
    assert set(entries) <= set(found), f"cuda/{name}.cu: no properties line for {set(entries) - set(found)}:\n{report}"
    spilling = {f: s for f, s in found.items() if s != (0, 0)}
    assert not spilling, f"cuda/{name}.cu spills (function: (store bytes, load bytes)) {spilling}:\n{report}"
    if name in RING_SOURCES:
        off_line = {f: b for f, b in static_shared(report).items() if b % 128}
        assert not off_line, f"cuda/{name}.cu: static shared memory off a 128-byte line (bytes) {off_line}"


def test_pdl_launch_config_is_cudas_layout():
    """cuLaunchKernelEx reads CUlaunchConfig and CUlaunchAttribute (cuda.h) from these bytes: the
    attribute id 6 (programmatic stream serialization) at 0, its value 1 at 8, 72 bytes in all;
    the config's stream at 32, attribute pointer at 40, count at 48."""
    import ctypes

    config = build.launch_config((3, 2), (256,), 1024, 0x1234)
    raw = bytes(config.attrs.contents)
    assert len(raw) == 72 and raw[:4] == (6).to_bytes(4, "little") and raw[8:12] == (1).to_bytes(4, "little")
    assert list(config.grid) == [3, 2, 1] and list(config.block) == [256, 1, 1] and config.shared_mem == 1024
    assert (type(config).stream.offset, type(config).attrs.offset, type(config).num_attrs.offset) == (32, 40, 48)
    assert config.stream == 0x1234 and config.num_attrs == 1 and ctypes.sizeof(config) == 56
    assert build.launch_config((3,), (64,), 0, 0x1234, pdl=False).num_attrs == 0  # a plain launch: no attribute


def test_every_new_dynamic_shared_memory_high_is_set(monkeypatch):
    """build.function raises a kernel's dynamic shared memory limit to every new high, below 48 KB
    too: with its static shared memory the kernel may need the opt-in there (the attention with
    the append at head_dim 64: 42 KB dynamic and 8.6 KB static failed to launch without it)."""
    class Function:
        max_dynamic_shared_size_bytes = 0

    fn = Function()
    monkeypatch.setattr(build, "_function", lambda name, kernel, device: fn)
    monkeypatch.setattr(build, "_shared_limit", {})
    for want, limit in ((0, 0), (42 * 1024, 42 * 1024), (40 * 1024, 42 * 1024), (60 * 1024, 60 * 1024)):
        assert build.function("attention", "tree_attention_hd64", 0, want) is fn
        assert fn.max_dynamic_shared_size_bytes == limit


def test_the_staged_blocks_columns_are_stageds():
    """cuda/staged.cuh's columns (read by attention.cu and persistent.cu) are swiftspec_core/staged.py's."""
    from swiftspec_core import staged

    defines = dict(re.findall(r"#define COL_(\w+) (\d+)", (build.CUDA_DIR / "staged.cuh").read_text()))
    assert defines and {k: int(v) for k, v in defines.items()} == {k: getattr(staged, k) for k in defines}
