"""paper_figures/forward_timeline.py's instrumentation, without a GPU: every kernel of every cuda/
source gets its scope at its body's opening brace, the GEMM sources their stamps, and an
instrumented source compiles (nvcc, where it is on PATH) without moving the GEMMs' registers."""
import re
import shutil
from pathlib import Path

import pytest

from paper_figures.forward_timeline import MARK_SETS, MARKED, MARKS, PRELUDE, _KERNEL, instrument
from swiftspec_core.kernels import build
from nvcc_compile import compile_text

SCOPE = "SwiftspecTimeline swiftspec_tl_scope("


@pytest.mark.parametrize("name", sorted(p.stem for p in build.CUDA_DIR.glob("*.cu")))
def test_every_kernel_body_opens_with_the_scope(name):
    plain = build.source(name)
    text, sites = instrument(plain)
    marked = any(f'#include "{header}"' in (build.CUDA_DIR / f"{name}.cu").read_text() for header in MARK_SETS)
    head = (MARKED if marked else "") + PRELUDE
    assert text.startswith(head) and sites == len(_KERNEL.findall(plain)) >= 1
    body = text[len(head):]
    stamps = [body.count(f"SWIFTSPEC_MARK({k});") + body.count(f"SWIFTSPEC_MARK_AFTER({k},") for k in range(len(MARKS))]
    assert stamps == [1 if marked else 0] * len(MARKS), name
    assert body.count(SCOPE) == sites
    for k in range(sites):
        at = body.index(f"{SCOPE}{k}, ")
        before = body[:at].rstrip()
        assert before.endswith("__shared__ SwiftspecShared swiftspec_tl_b;"), name
        assert before[: -len("__shared__ SwiftspecShared swiftspec_tl_b;")].rstrip().endswith("{"), name


def test_a_toy_kernel_in_a_macro_stays_one_line_a_macro():
    src = ('#define K(N) \\\n  extern "C" __global__ void __launch_bounds__(32) k##N(int* x) { \\\n'
           '    x[N] = N; \\\n  }\nK(1)\nK(2)\n')
    text, sites = instrument(src)
    assert sites == 1
    assert all(line.endswith("\\") for line in text[len(PRELUDE):].splitlines()[:3])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_an_instrumented_source_compiles(tmp_path):
    compile_text(instrument(build.source("norm"))[0], tmp_path, "norm")


def _registers(source: str, tmp_path: Path, tag: str) -> dict[str, int]:
    report = compile_text(source, tmp_path, tag, "-Xptxas", "-v")
    names = re.findall(r"Compiling entry function '(\w+)'", report)
    return dict(zip(names, map(int, re.findall(r"Used (\d+) registers", report))))


def _g128_c1_only(source: str) -> str:
    """awq_gemm.cu's source with its kernels at group 128 without clusters only (the macros'
    lines for clusters 2, 4, 8 and groups 32, 64 emptied)."""
    source, clusters = re.subn(r"^  AWQ_GEMM_KERNEL\(NAME, SWIGLU, F16, ROWS, TWO, G, [248], .*?(\\?)$",
                               lambda line: line[1], source, flags=re.MULTILINE)  # keeps a continuation
    source, groups = re.subn(r"^AWQ_GEMM_OPS\((32|64)\)$", "", source, flags=re.MULTILINE)
    assert (clusters, groups) == (3, 2), (clusters, groups)
    return source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["gemm", "gemm_swiglu", "gemm_allreduce", "awq_gemm"])
def test_the_stamps_leave_the_gemms_registers_nearly_as_they_were(name, tmp_path):
    # A stamp inside the main loop moved them by +16 / -48 (another schedule, other occupancy). The
    # AWQ kernels are capped at 80 by their launch bounds (awq_gemm_block.cuh's AWQ_THREADS); their
    # phases are read at group 128 without clusters (plan()'s 70B shapes: awq_phases.py), where the
    # stamps move them by 2 (measured: up to +8 / -10 in the clusters and groups of 32).
    # Only the AWQ kernels checked are compiled (8 of 96: the rest made this CI's longest test, ~50 s).
    source = _g128_c1_only(build.source(name)) if name.startswith("awq") else build.source(name)
    plain, marked = (_registers(src, tmp_path, tag) for src, tag in
                     ((source, "plain"), (instrument(source)[0], "marked")))
    assert plain.keys() == marked.keys() and plain
    cap = 80 if name.startswith("awq") else 128
    assert not name.startswith("awq") or all(k.endswith("_g128_c1") for k in plain) and len(plain) == 8
    for kernel in plain:
        assert abs(marked[kernel] - plain[kernel]) <= 8 and marked[kernel] <= cap, (kernel, plain[kernel], marked[kernel])


def test_phases_split_a_gemm_block_at_its_stamps():
    from paper_figures.forward_timeline import PHASES, launches, phases
    import numpy as np

    # An attention launch ends at 10 us; a GEMM's two blocks (resident from 8 us) reach their wait at
    # 8.5 (early) / 10.3 (after that end), return from it at 10.5 / 10.7, get x at 11.5 / 11.9, end
    # their loops at 20 / 21, pass the barrier at 20.5 / 21.2 and exit at 21 / 22. The attention
    # has no stamps (zeros): no phases for it.
    rec = [[1, 0, 9_000, 0, 0, 0, 0, 0, 0, 0], [1, 0, 10_000, 1, 1, 0, 0, 0, 0, 0]]
    rec += [[2, 8_000, 21_000, 0, 0, 8_500, 10_500, 11_500, 20_000, 20_500],
            [2, 8_000, 22_000, 1, 1, 10_300, 10_700, 11_900, 21_000, 21_200]]
    got = phases(["attention", "o"], launches(np.array(rec, dtype=np.uint64)))
    assert list(got) == ["o"] and list(got["o"]) == list(PHASES)
    # reach: -1.5 / 0.3 -> -0.6; in wait: 0.5 (after the end) / 0.4 (after its arrival) -> 0.45.
    assert got["o"] == pytest.approx({"reach": -0.6, "in wait": 0.45, "release": 0.6, "x": 1.1, "loop": 8.8,
                                      "combine": 0.35, "epilogue": 0.65})


def test_launches_and_their_times_by_place():
    from paper_figures.forward_timeline import launches, layer_blocks, summarize
    import numpy as np

    def launch(grid, starts, ends, sm0=0):  # records: gridid, start ns, end ns, site << 32 | smid, block
        return [[grid, s, e, (3 << 32) | (sm0 + i), i] for i, (s, e) in enumerate(zip(starts, ends))]

    # Two layers of (qkv, attention): qkv ends 10 us after the start; the attention's blocks become
    # resident 2 us before that (PDL) and end 4, 5 and 9 us after it.
    rec = []
    for layer, t in enumerate((0, 100_000)):
        rec += launch(10 + 2 * layer, [t, t + 500], [t + 9_000, t + 10_000])
        rec += launch(11 + 2 * layer, [t + 8_000] * 3, [t + 14_000, t + 15_000, t + 19_000], sm0=5)
    order = launches(np.array(rec, dtype=np.uint64)[::-1])  # record order does not matter
    assert [len(a) for a in order] == [2, 3, 2, 3]
    rows = summarize(["qkv", "attention", "qkv", "attention"], order, {"qkv": 4_000_000}, 4e12)
    assert [r["place"] for r in rows] == ["qkv", "attention"]
    qkv, attention = rows
    assert attention["adds_us"] == 9.0 and attention["lead_us"] == -2.0 and attention["tail_us"] == 4.0
    assert attention["ends_us"] == 5.0 and attention["block_us"] == 7.0 and attention["sms"] == 3
    assert attention["most_an_sm"] == 1 and attention["sm_gap_us"] == pytest.approx(3.0)  # 19 after the mean 16
    assert qkv["launches"] == 2 and qkv["adds_us"] == 100_000 / 1e3 - 19.0 + 10.0 and qkv["floor_us"] == 1.0
    blocks = layer_blocks(["qkv", "attention", "qkv", "attention"], order, 1)  # layer 1, after layer 0's attention
    assert [(b["place"], b["block"], b["start_us"], b["end_us"]) for b in blocks] == [
        ("qkv", 0, 100.0 - 19.0, 109.0 - 19.0), ("qkv", 1, 100.5 - 19.0, 110.0 - 19.0),
        ("attention", 0, -2.0, 4.0), ("attention", 1, -2.0, 5.0), ("attention", 2, -2.0, 9.0)]
    assert [b["sm"] for b in blocks] == [0, 1, 5, 6, 7]


def test_exit_lag_is_a_launchs_last_thread_after_its_last_thread_0():
    from paper_figures.forward_timeline import FIELDS, LAST, launches, summarize
    import numpy as np

    # Two launches of full records (marks zero): the first's threads 0 leave at 9 and 10 us and its
    # last threads at 9.2 and 10.3; the second's at 14 / 15.1. A record without the field: no lag.
    def record(grid, block, end, last):
        r = [0] * FIELDS
        r[0], r[1], r[2], r[3], r[4], r[LAST] = grid, 0, end, block, block, last
        return r

    rec = [record(1, 0, 9_000, 9_200), record(1, 1, 10_000, 10_300), record(2, 0, 14_000, 15_100)]
    rows = summarize(["o", "gate_up"], launches(np.array(rec, dtype=np.uint64)), {}, 4e12)
    assert [r["lag_us"] for r in rows] == [pytest.approx(0.3), pytest.approx(1.1)]
    short = [[1, 0, 9_000, 0, 0]]
    assert np.isnan(summarize(["o"], launches(np.array(short, dtype=np.uint64)), {}, 4e12)[0]["lag_us"])


def test_placement_counts_sms_and_the_most_blocks_on_one():
    from paper_figures.forward_timeline import placement
    import numpy as np

    sm = [4, 9, 4, 4, 7]  # three blocks on SM 4; the site in the high bits is not part of the SM
    rec = np.array([[1, 0, 1, (2 << 32) | s, i] for i, s in enumerate(sm)], dtype=np.uint64)
    assert placement(rec) == dict(sms=3, most_an_sm=3)


def test_sm_gap_is_the_last_end_after_the_mean_sm():
    from paper_figures.forward_timeline import sm_gap
    import numpy as np

    # SM 4 runs three blocks (last end 9 us), SM 9 one (5), SM 7 one (10): the mean SM ends at 8.
    rec = [[1, 0, e, (2 << 32) | s, i] for i, (s, e) in enumerate(zip([4, 9, 4, 4, 7], [3000, 5000, 9000, 6000, 10000]))]
    assert sm_gap(np.array(rec, dtype=np.uint64)) == pytest.approx(2.0)


def test_place_bytes_counts_each_projection_bf16_or_awq():
    from types import SimpleNamespace

    import torch

    from paper_figures.forward_timeline import place_bytes
    from swiftspec_core.models import awq

    bf16 = torch.zeros(192, 128, dtype=torch.bfloat16)
    tiled = awq.tile(awq.quantize(torch.randn(128, 256), 128))  # 4-bit codes, zeros and fp16 scales
    layer = SimpleNamespace(wqkv=bf16, wo=tiled, w_gate_up=bf16, w_down=tiled)
    got = place_bytes(SimpleNamespace(layers=[layer]))
    awq_bytes = sum(t.numel() * t.element_size() for t in tiled[:3])
    assert got == {"qkv": 192 * 128 * 2, "o": awq_bytes, "gate_up": 192 * 128 * 2, "down": awq_bytes}
    assert 128 * 256 // 2 < awq_bytes < 128 * 256 // 2 + 128 * 256 // 16  # codes plus a little meta
