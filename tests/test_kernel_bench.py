"""`swiftspec-bench kernels`: options, the shape tables against the presets, the floors, and the
csv / markdown table written through a fake timer (no GPU); a GPU smoke run where there is one."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from swiftspec_bench import kernel_bench, kernel_ops, kernel_shapes, kernel_table
from swiftspec_bench.cli import app
from swiftspec_bench.kernel_shapes import PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.presets import PRESETS

SMALL = ["--models", "llama-3.2-1b", "--tp", "1,2", "--m", "1,8", "--context", "500"]


def invoke(args):
    return CliRunner().invoke(app, ["kernels"] + args)


def assert_user_error(args, contains: str, out: Path):
    res = invoke(args + ["--out", str(out)])
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert contains in lines[0], lines[0]
    assert not (out / kernel_table.CSV_NAME).exists()


@pytest.mark.parametrize("args, contains", [
    (["--models", "llama-3-8b,gpt-5"], "unknown preset 'gpt-5'"),
    (["--tp", "0"], "--tp 0: 0 is outside 1..8"),
    (["--tp", "1,two"], "'two' is not a whole number"),
    (["--m", "1,17"], "--m 1,17: 17 is outside 1..16"),
    (["--m", ""], "--m is empty"),
    (["--context", "0"], "--context 0"),
    (["--models", "llama-3-8b", "--context", "8180"], "llama-3-8b holds 8192 positions"),
    (["--ops", "gemm,conv"], "unknown op 'conv'"),
    (["--impl", "ours,triton"], "unknown impl 'triton'"),
    (["--tree-w", "16"], "--tree-w 16"),
    (["--tree-w", "0"], "--tree-w 0"),
])
def test_bad_options_are_one_error_line(tmp_path, args, contains):
    assert_user_error(args, contains, tmp_path / "out")


def test_out_that_is_a_file_is_an_error(tmp_path):
    file = tmp_path / "taken"
    file.write_text("x")
    res = invoke(SMALL + ["--out", str(file)])
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "is an existing file" in res.stderr


def test_no_gpu_is_an_error_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_user_error(SMALL, "no CUDA GPU", tmp_path / "out")


# ---- shapes and floors ----

# [N, K] per projection, written out from the models' cards (the GEMM brief's list).
EXPECTED = {
    ("llama-3-8b", 1): [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096)],
    ("llama-3-8b", 2): [(3072, 4096), (4096, 2048), (14336, 4096), (4096, 7168), (64128, 4096)],
    ("llama-3.2-1b", 1): [(3072, 2048), (2048, 2048), (16384, 2048), (2048, 8192), (128256, 2048)],
    ("llama-3.2-1b", 2): [(1536, 2048), (2048, 1024), (8192, 2048), (2048, 4096), (64128, 2048)],
    ("llama-3-70b", 2): [(5120, 8192), (8192, 4096), (28672, 8192), (8192, 14336), (64128, 8192)],
}


@pytest.mark.parametrize("model, tp", sorted(EXPECTED))
def test_gemm_shapes_are_the_shards_of_the_real_models(model, tp):
    assert [gemm_shape(shard_args(model, tp), p)[:2] for p in PROJECTIONS] == EXPECTED[(model, tp)]


@pytest.mark.parametrize("model", ["llama-3.2-1b", "llama-3.2-3b", "llama-3-8b", "llama-3-70b", "qwen2.5-coder-1.5b"])
@pytest.mark.parametrize("tp", [1, 2])
def test_gemm_shapes_cover_every_weight_of_the_preset(model, tp):
    """A layer's four projections times the layers, plus the lm_head, are the weights a forward
    reads (ModelArgs.weight_bytes of the shard); at tp 2 the shard is half the model (these shapes
    divide) and a preset's own numbers give the full layer."""
    a = shard_args(model, tp)
    layer = sum(n * k for n, k, _ in (gemm_shape(a, p) for p in PROJECTIONS[:4]))
    n, k, _ = gemm_shape(a, "lm_head")
    assert 2 * (a.n_layers * layer + n * k) == a.weight_bytes(2)
    cfg = PRESETS[model].config
    full = ModelArgs.from_hf_config(PRESETS[model].hf_config())
    hd = full.head_dim
    assert full.n_layers * sum(n * k for n, k, _ in (gemm_shape(full, p) for p in PROJECTIONS[:4])) == (
        cfg["num_hidden_layers"] * cfg["hidden_size"] * ((cfg["num_attention_heads"] * 2 + cfg["num_key_value_heads"] * 2)
                                                         * hd + 3 * cfg["intermediate_size"]))
    if tp == 2:
        assert a.weight_bytes(2) * 2 == shard_args(model, 1).weight_bytes(2)
    assert gemm_shape(a, "qkv")[2] == (PRESETS[model].model_type == "qwen2")


def test_floor_bytes_per_op():
    m = 8
    gemm = floor_bytes(Case("gemm_o", "llama-3-8b", 1, m, None, "ours"))
    assert gemm == 2 * (4096 * 4096 + m * 4096 + m * 4096)
    assert floor_bytes(Case("gemm_allreduce_down", "llama-3-8b", 2, m, None, "ours")) == \
        2 * (4096 * 7168 + m * 7168 + m * 4096)
    assert floor_bytes(Case("allreduce", "llama-3-8b", 2, m, None, "ours")) is None
    # 4-bit codes, and a 4-bit zero and an fp16 scale per 128 inputs of an output column
    assert floor_bytes(Case("awq_gemm_down", "llama-3-70b", 2, m, None, "ours")) == \
        8192 * 14336 // 2 + 112 * 8192 // 2 + 112 * 8192 * 2 + 2 * (m * 14336 + m * 8192)
    assert floor_bytes(Case("awq_gemm_allreduce_down", "llama-3-70b", 2, m, None, "ours")) == \
        floor_bytes(Case("awq_gemm_down", "llama-3-70b", 2, m, None, "ours"))  # the all-reduce not counted
    # 32 q heads in, out; 8 kv heads x 128 of keys and values at 1008 positions
    assert floor_bytes(Case("attention", "llama-3-8b", 1, m, 1000, "ours")) == 2 * (2 * m * 32 * 128) + 2 * 2 * 1008 * 8 * 128
    assert floor_bytes(Case("rmsnorm", "llama-3.2-1b", 1, m, None, "ours")) == 2 * (4 * m * 2048 + 2048)
    assert floor_bytes(Case("swiglu", "llama-3-8b", 2, m, None, "ours")) == 2 * 3 * m * 7168
    a = shard_args("llama-3.2-1b", 1)
    assert floor_bytes(Case("draft_step", "llama-3.2-1b", 1, 9, 1000, "ours")) == \
        a.weight_bytes(2) + 16 * 2 * 1009 * 8 * 64 * 2


def test_make_row_arithmetic():
    case = Case("gemm_o", "llama-3-8b", 1, 8, None, "ours")
    bytes_ = floor_bytes(case)
    row = kernel_table.make_row(case, us=10.0, bandwidth=4e12, device="gpu", commit="abc")
    assert row["floor_us"] == float(f"{bytes_ / 4e12 * 1e6:.4g}")  # 4 significant digits
    assert row["gbps"] == round(bytes_ / 10e-6 / 1e9, 1)
    ar = kernel_table.make_row(Case("allreduce", "llama-3-8b", 2, 8, None, "ours"), 2.0, 4e12, "gpu", "abc")
    assert ar["floor_us"] is None and ar["gbps"] == round(8 * 4096 * 2 / 2e-6 / 1e9, 1)


def test_a_draft_step_table_shows_each_kernel_set_over_the_floor():
    rows = [kernel_table.make_row(Case("draft_step", "llama-3.2-1b", 1, 9, 1000, impl), us, 4e12, "gpu", "abc")
            for impl, us in (("ours", 1000.0), ("torch", 1800.0), ("persistent", 900.0))]
    table = kernel_table.markdown(rows, [], dict(device="gpu", commit="abc", bandwidth=4e12, timing="t"))
    head = next(line for line in table.splitlines() if line.startswith("| op |"))
    assert head.endswith("| ours | torch | persistent | floor us | ours / floor | persistent / floor |")
    floor = rows[0]["floor_us"]
    line = next(line for line in table.splitlines() if line.startswith("| draft_step |"))
    assert line.endswith(f"| {1000 / floor:.2f}x | {900 / floor:.2f}x |")


def _opts(tmp_path, **over):
    base = dict(models="llama-3.2-1b,llama-3-8b", tp="1,2", m="1,8", context="500,1000", ops="all",
                impl="ours,cublas+nccl,sdpa,torch", tree_w=8, tree_bs=12, graft_len=0, out=str(tmp_path / "o"))
    return kernel_shapes.validate(**(base | over))


def test_plan_matrix(tmp_path):
    cases = kernel_shapes.plan(_opts(tmp_path))
    keys = {c.key for c in cases}
    assert len(keys) == len(cases)
    by = lambda g: [c for c in cases if c.group == g]  # noqa: E731
    assert {c.tp for c in by("allreduce") + by("gemm_allreduce") + by("awq_gemm_allreduce")} == {2}  # no all-reduce alone
    assert {c.projection for c in by("gemm_allreduce") + by("awq_gemm_allreduce")} == {"o", "down"}
    assert {(c.op, c.impl) for c in by("awq_gemm_allreduce")} == {("awq_gemm_allreduce_o", "ours"),
                                                                  ("awq_gemm_allreduce_down", "ours")}
    assert {c.processes for c in by("awq_gemm_allreduce")} == {2}
    assert len(by("gemm")) == 2 * 2 * 5 * 2 * 2  # models, tp, projections, m, impls
    assert len(by("awq_gemm")) == 2 * 2 * 4 * 2 and {c.impl for c in by("awq_gemm")} == {"ours"}  # no lm_head
    assert len(by("attention")) == 2 * 2 * 2 * 2 * 3  # models, tp, m, contexts, impls
    assert {(c.m, c.context) for c in by("draft_step")} == {(9, 1000)}
    assert {c.context for c in by("forward")} == {1000} and {c.m for c in by("forward")} == {1, 8}
    assert {c.impl for c in by("attention")} == {"ours", "sdpa", "torch"}
    assert {c.processes for c in by("forward") if c.tp == 2} == {2}
    assert {c.processes for c in by("gemm")} == {1}
    only = kernel_shapes.plan(_opts(tmp_path, ops="attention,gemm", impl="sdpa"))
    assert {(c.op, c.impl) for c in only} == {("attention", "sdpa")}


def test_chain_block_and_sdpa_baseline_match_the_engine():
    from swiftspec_core.staged import POSITION, PREFIX, ROW, VISIBLE
    from swiftspec_core.models.transformer import grouped_attention
    from swiftspec_core.tree import tree_mask

    block = kernel_ops.chain_block(5, 3, device="cpu")
    assert block[:, POSITION].tolist() == block[:, ROW].tolist() == [5, 6, 7]
    assert block[:, PREFIX].tolist() == [5, 5, 5]
    assert block[:, VISIBLE:].tolist() == [[5, 5, 5], [5, 6, 6], [5, 6, 7]]
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 8, 16), torch.randn(12, 2, 16), torch.randn(12, 2, 16)
    mask = tree_mask(5, 12, [[5], [5, 6], [5, 6, 7]])
    torch.testing.assert_close(kernel_ops.sdpa_masked(q, k, v, mask, 2), grouped_attention(q, k, v, mask, 2),
                               rtol=1e-5, atol=1e-5)


# ---- the table, through a fake timer ----

def fake_us(case: Case) -> float:
    return 1.0 + case.m + (0.5 if case.impl == "ours" else 3.0)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A GPU that is not there: every measurement is fake_us, bandwidth 4 TB/s; tp 2 cases say
    they need 2 GPUs; `measured` lists the cases timed."""
    import swiftspec_core.runtime.floor as floor

    measured = []

    def local(case):
        measured.append(case)
        return fake_us(case)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake H200")
    monkeypatch.setattr(floor, "copy_bandwidth", lambda *a, **k: 4e12)
    monkeypatch.setattr(kernel_bench, "measure_local", local)
    monkeypatch.setattr(kernel_bench, "measure_forwards", lambda cases, *a, **k: [(c, local(c)) for c in cases])
    monkeypatch.setattr(kernel_bench, "measure_group", lambda cases, tp, visible: [(c, "needs 2 GPUs, 1 visible") for c in cases])
    monkeypatch.setenv("SWIFTSPEC_COMMIT", "c0ffee")
    return measured


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_table_with_a_fake_timer(tmp_path, fake_gpu):
    out = tmp_path / "k"
    res = invoke(SMALL + ["--ops", "gemm,allreduce,attention,rmsnorm,forward", "--out", str(out)])
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    rows = read_csv(out / "kernels.csv")
    assert list(rows[0]) == list(kernel_table.COLUMNS)
    assert list(rows[0])[:9] == ["op", "model", "tp", "m", "context", "impl", "median_us", "gbps", "floor_us"]
    planned = kernel_shapes.plan(_opts(tmp_path, models="llama-3.2-1b", m="1,8", context="500",
                                       ops="gemm,allreduce,attention,rmsnorm,forward"))
    group_cases = [c for c in planned if c.processes > 1]
    assert len(rows) == len(planned) - len(group_cases) == len(fake_gpu)
    for r in rows:
        case = Case(r["op"], r["model"], int(r["tp"]), int(r["m"]), int(r["context"]) if r["context"] else None,
                    r["impl"])
        assert float(r["median_us"]) == fake_us(case)
        assert float(r["floor_us"]) == float(f"{floor_bytes(case) / 4e12 * 1e6:.4g}")
        assert (r["context"] != "") == (case.group in ("attention", "forward"))
        assert r["device"] == "Fake H200" and r["commit"] == "c0ffee" and r["dtype"] == "bfloat16"
    md = (out / "kernels.md").read_text()
    assert "copy bandwidth 4.00 TB/s" in md
    for section in ("## gemm", "## attention", "## rmsnorm", "## forward", "## Not measured"):
        assert section in md
    assert "| gemm_qkv | llama-3.2-1b | 1 | 8 | 9.50 (" in md  # ours 1 + 8 + 0.5 us, then cublas+nccl
    assert "allreduce ours" in md and "needs 2 GPUs" in md
    assert "not measured: allreduce" in res.stdout
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "temporary files left behind"


def test_interrupted_run_keeps_its_rows_and_resumes(tmp_path, fake_gpu, monkeypatch):
    out = tmp_path / "k"
    args = SMALL + ["--tp", "1", "--ops", "gemm,rmsnorm", "--impl", "ours", "--out", str(out)]
    real = kernel_bench.measure_local

    def stop_after_three(case):
        if len(fake_gpu) == 3:
            raise KeyboardInterrupt
        return real(case)

    monkeypatch.setattr(kernel_bench, "measure_local", stop_after_three)
    res = invoke(args)
    assert res.exit_code == 2 and res.stderr.strip() == "error: interrupted"
    assert len(read_csv(out / "kernels.csv")) == 3
    monkeypatch.setattr(kernel_bench, "measure_local", real)
    res = invoke(args)
    assert res.exit_code == 0, res.stderr
    assert len(fake_gpu) == 3 + 12 - 3  # the rest only: 5 projections x 2 m + 2 rmsnorm = 12
    assert len({tuple(r.values()) for r in read_csv(out / "kernels.csv")}) == 12
    assert "wrote 9 rows" in res.stdout


def test_rows_of_another_device_are_an_error(tmp_path, fake_gpu, monkeypatch):
    out = tmp_path / "k"
    args = SMALL + ["--tp", "1", "--ops", "rmsnorm", "--out", str(out)]
    assert invoke(args).exit_code == 0
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Other GPU")
    res = invoke(args)
    assert res.exit_code == 2 and "holds rows measured on Fake H200" in res.stderr


def test_writes_are_atomic(tmp_path, monkeypatch):
    out = tmp_path / "k"
    case = Case("rmsnorm", "llama-3.2-1b", 1, 1, None, "ours")
    meta = dict(device="d", commit="c", bandwidth=4e12, timing="t")
    kernel_table.write(out, [kernel_table.make_row(case, 2.0, 4e12, "d", "c")], [], meta)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*a):
        raise OSError("disk full")

    monkeypatch.setattr(kernel_table, "markdown", broken)
    row = kernel_table.make_row(Case("rmsnorm", "llama-3.2-1b", 1, 8, None, "ours"), 3.0, 4e12, "d", "c")
    with pytest.raises(OSError):
        kernel_table.write(out, [row], [], meta)
    assert (out / "kernels.md").read_bytes() == before["kernels.md"]  # the old table, whole
    assert sorted(p.name for p in out.iterdir()) == ["kernels.csv", "kernels.md"]  # no temporary left


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_smoke(tmp_path):
    """One model, m 1, two ops, every implementation: real timings land in the table."""
    out = tmp_path / "k"
    res = invoke(["--models", "llama-3.2-1b", "--tp", "1", "--m", "1", "--context", "500",
                  "--ops", "rmsnorm,attention", "--out", str(out)])
    print(res.stdout, res.stderr)
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    rows = read_csv(out / "kernels.csv")
    print((out / "kernels.md").read_text())
    assert {(r["op"], r["impl"]) for r in rows} >= {("rmsnorm", "torch"), ("attention", "sdpa"), ("attention", "torch")}
    for r in rows:
        assert 0 < float(r["median_us"]) < 1e4 and float(r["floor_us"]) > 0 and float(r["gbps"]) > 0
    measured_ours = {r["op"] for r in rows if r["impl"] == "ours"}
    md = (out / "kernels.md").read_text()
    for op in ("rmsnorm", "attention"):  # ours is measured, or the table says why not
        assert op in measured_ours or f"{op} ours" in md


def test_the_draft_step_is_staged_as_wide_as_the_drafters_block(tmp_path):
    # the run defaults (bs 12, w 8): the drafter's tree keeps 384 cache rows, a token's block row 385
    from swiftspec_core.decoders.base import SpecSettings, draft_tree_rows
    from swiftspec_core.decoders.drafter import staged_visible
    from swiftspec_core.errors import UserError

    assert kernel_shapes.draft_visible(_opts(tmp_path)) == 385
    assert kernel_shapes.draft_visible(_opts(tmp_path, tree_bs=2, tree_w=3)) == 4 * 2 * 3 + 1
    assert staged_visible(8, draft_tree_rows(SpecSettings(tree_bs=1, tree_w=1)), graft_len=6) == 8 + 1 + 6
    grafted = _opts(tmp_path, ops="draft_step", graft_len=6)  # the run's grafted step: 15 wide, 385 rows
    assert {c.m for c in kernel_shapes.plan(grafted)} == {15} and kernel_shapes.draft_visible(grafted) == 385
    with pytest.raises(UserError, match="--tree-bs 0"):
        _opts(tmp_path, tree_bs=0)
    with pytest.raises(UserError, match="--graft-len 8"):
        _opts(tmp_path, graft_len=8)


def test_awq_rows_run_x_in_the_dtype_the_engine_feeds():
    """The dtype column: fp16 for the AWQ projections the one-GPU AWQ forward feeds fp16
    (forward.AWQ_FP16_X, checked against that forward in test_awq_norms.py), bf16 elsewhere."""
    case = lambda op, tp=1: Case(op, "llama-3-70b", tp, 8, None, "ours")  # noqa: E731
    assert [kernel_shapes.x_dtype(case(f"awq_gemm_{p}")) for p in ("qkv", "o", "gate_up", "down")] == \
        ["float16", "bfloat16", "float16", "float16"]
    assert kernel_shapes.x_dtype(case("awq_gemm_down", tp=2)) == "bfloat16"  # TP: the norms stay kernels, bf16
    assert kernel_shapes.x_dtype(case("gemm_down")) == "bfloat16"
