"""paper_figures/plan_in_forward.py: its plan() answers the asked shape for one weight only, its
`p` shapes launch clusters with PDL and the others as the runtime does, and it refuses a cluster
where the forward launches that weight without clusters (CPU)."""

import pytest

import plan_in_forward
from script_checks import assert_main_fails
from swiftspec_core.kernels import awq_gemm


def test_planned_as_moves_one_weight_and_stacks_on_plans_own(monkeypatch):
    monkeypatch.setattr(awq_gemm, "plan", awq_gemm.plan)  # restored after the test
    gate_up, o = plan_in_forward.weight_nk("llama-3-70b", "gate_up"), plan_in_forward.weight_nk("llama-3-70b", "o")
    assert gate_up == (57344, 8192) and o == (8192, 8192)
    own_o = awq_gemm.plan(*o, 128, 132)
    plan_in_forward.planned_as(gate_up, (1, 2))
    plan_in_forward.planned_as(gate_up, (2, 1))  # a second shape replaces the first, not wraps it
    assert awq_gemm.plan(*gate_up, 128, 132) == (2, 1) and awq_gemm.plan(*o, 128, 132) == own_o
    assert awq_gemm.fuses_swiglu(*gate_up, 128, 132)  # awq_swiglu reads the module's plan
    plan_in_forward.planned_as(o, (4, 2))
    with pytest.raises(ValueError, match="without clusters"):
        awq_gemm.plan(*o, 128, 132, clusters=False)


@pytest.mark.parametrize("op", ["o", "down"])
def test_a_cluster_for_a_weight_without_clusters_is_refused_before_anything_runs(op, monkeypatch, capsys):
    """One `error:` line, exit 2, from the arguments alone (no GPU here: nothing was built)."""
    line = assert_main_fails(plan_in_forward.main, ["plan_in_forward.py", "--op", op, "--shapes", "16x1,8x2"],
                             monkeypatch, capsys)
    assert line == (f"error: --shapes: {op} runs without clusters in the forward (its GEMM carries the residual and "
                    "the next norm): C must be 1")


@pytest.mark.parametrize("shapes", ["3x1,2", "3xa", "0x1", "3x3", "3x1p", "8x2pp", "p"])
def test_a_malformed_shape_is_one_error_line(shapes, monkeypatch, capsys):
    line = assert_main_fails(plan_in_forward.main, ["plan_in_forward.py", "--op", "gate_up", "--shapes", shapes],
                             monkeypatch, capsys)
    assert line.startswith("error: --shapes: S x C with S in 1..") and line.endswith(f"(got {shapes})")


def test_a_p_shape_launches_clusters_with_pdl_and_the_next_as_the_runtime(monkeypatch):
    launches = []
    monkeypatch.setattr(plan_in_forward, "LAUNCH", lambda *args, pdl=True, **kwargs: launches.append(pdl))
    monkeypatch.setattr(awq_gemm, "launch", awq_gemm.launch)  # restored after the test
    assert plan_in_forward.parse_shape("8x2p") == (8, 2, True) and plan_in_forward.parse_shape("11x1") == (11, 1, False)
    for on in (True, False):
        plan_in_forward.clusters_with_pdl(on)
        awq_gemm.launch("awq_gemm", "kernel", (1,), (32,), (), pdl=False)  # launch_shape's cluster launch
        awq_gemm.launch("awq_gemm", "kernel", (1,), (32,), ())
    assert launches == [True, True, False, True]
    assert awq_gemm.launch is plan_in_forward.LAUNCH  # off: the runtime's own launch back


def test_a_shape_named_twice_is_refused(monkeypatch, capsys):
    line = assert_main_fails(plan_in_forward.main, ["plan_in_forward.py", "--op", "qkv", "--shapes", "11x1,8x2p,8x2p"],
                             monkeypatch, capsys)
    assert line == "error: --shapes: a shape named twice (got 11x1,8x2p,8x2p)"
