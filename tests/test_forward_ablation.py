"""paper_figures/forward_ablation.py's parts that need no GPU: which launches each op skips, and that
the skipping wrapper restores every module's launch."""

import numpy as np

from engine_fixtures import engine, target_state
from paper_figures.forward_ablation import LAUNCHERS, ops_of, skipping
from swiftspec_core.kernels import attention, build, gemm


def test_each_op_names_its_own_launches():
    e = engine(target_state())
    ops = ops_of(e)
    layer = e.layers[1]
    w = lambda t: (np.uint64(0), np.uint64(t.data_ptr()))  # a launch's (x, w, ...) arguments
    assert ops["o"][0]("gemm", "gemm_nt4", w(layer.wo))
    assert not ops["down"][0]("gemm", "gemm_nt4", w(layer.wo))
    assert ops["down"][0]("gemm", "gemm_nt4", w(layer.w_down))
    assert ops["gate_up"][0]("gemm_swiglu", "gemm_swiglu_nt4", w(layer.w_gate_up))
    assert ops["attention"][0]("attention", "tree_attention_hd64", ())
    assert not ops["attention"][0]("append_kv", "append_kv", ())
    assert ops["norms"][0]("norm", "add_rmsnorm_c1", ())
    assert ops["o"][1] == sum(l.wo.numel() * l.wo.element_size() for l in e.layers)


def test_skipping_skips_and_restores(monkeypatch):
    calls = []
    monkeypatch.setattr(build, "launch", lambda name, kernel, *a, **k: calls.append(kernel))
    saved = {m: m.launch for m in LAUNCHERS}
    with skipping(lambda name, kernel, args: kernel == "append_kv") as s:
        attention.launch("append_kv", "append_kv", (1,), (1,), ())
        gemm.launch("gemm", "gemm_nt4", (1,), (1,), ())
    assert calls == ["gemm_nt4"] and s.skipped == 1
    assert {m: m.launch for m in LAUNCHERS} == saved
