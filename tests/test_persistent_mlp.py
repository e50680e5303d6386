"""The persistent kernel's host side (swiftspec_core/kernels/persistent.py) and its probe
(paper_figures/persistent_mlp.py), on the CPU: the page images and x slices the kernel
reads with one bulk copy each hold the rows it computes with, its shared-memory size is the
kernel's own (checked by nvcc where it is at hand), and bad arguments end in one error line, exit 2.
The kernel's results are checked on a GPU by the probe itself (poisoned outputs against torch)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import torch

from swiftspec_core.kernels import persistent as layouts

from paper_figures import persistent_mlp as probe
from paper_figures import persistent_tree as tree
from nvcc_compile import compile_text
from script_checks import assert_main_fails


@pytest.mark.parametrize("page_k", [512, 1024])
def test_gate_up_pages_hold_gate_rows_then_up_rows(page_k):
    layers, f, k = 2, 32, 2048
    w = torch.randn(layers, 2 * f, k)
    pages = layouts.paged(w, "gate_up", page_k)  # [L, F / 8, K / page_k, 16, page_k + 8]
    assert pages.shape == (layers, f // 8, k // page_k, 16, page_k + 8) and pages.is_contiguous()
    for layer, item, page, row in [(0, 0, 0, 0), (1, 3, 1, 7), (1, 2, 0, 8), (0, 3, k // page_k - 1, 15)]:
        source = 8 * item + row if row < 8 else f + 8 * item + row - 8
        assert torch.equal(pages[layer, item, page, row, :page_k], w[layer, source, page * page_k:(page + 1) * page_k])
    assert not pages[..., page_k:].any()  # the 16 bytes of padding a row


def test_down_pages_hold_sixteen_consecutive_rows():
    layers, n, k, page_k = 2, 64, 4096, 1024
    w = torch.randn(layers, n, k)
    pages = layouts.paged(w, "down", page_k)
    assert pages.shape == (layers, n // 16, k // page_k, 16, page_k + 8)
    for layer, item, page, row in [(0, 0, 0, 0), (1, 3, 2, 15), (0, 1, 3, 9)]:
        assert torch.equal(pages[layer, item, page, row, :page_k], w[layer, 16 * item + row, page * page_k:(page + 1) * page_k])


def test_slices_round_trip_and_hold_a_pages_k():
    x = torch.randn(3, 5, 2048)
    s = layouts.sliced(x, 1024)  # [3, 2, 8, 1032]: rows to 8, a slice 8 x 2064 bytes = 129 x 128
    assert s.shape == (3, 2, 8, 1032) and torch.equal(layouts.unsliced(s, 5), x)
    assert torch.equal(s[1, 1, 4, :1024], x[1, 4, 1024:]) and not s[..., 1024:].any() and not s[:, :, 5:].any()
    assert s[0, 0].numel() * 2 % 128 == 0 and layouts.slice_rows(9) == 16 and layouts.slice_rows(8) == 8


def test_activation_slices_are_sliced_layout_and_the_attention_scratch_the_kernels():
    x = torch.randn(3, 5, 2048)
    zeros = layouts.activation_slices(3, k=2048, m=5, page_k=1024, device="cpu")
    assert zeros.shape == layouts.sliced(x, 1024).shape and zeros.dtype == torch.bfloat16 and not zeros.any()
    qbuf, part_ml, part_o = layouts.attention_scratch(9, 16, "cpu")  # 9 tokens x 4 q heads: 48 rows, 3 tiles
    assert qbuf.shape == (8, 48, 72) and qbuf.dtype == torch.bfloat16
    assert part_ml.shape == (8, 16, 48, 2) and part_o.shape == (8, 16, 48, 64) and part_o.dtype == torch.float32


@pytest.mark.parametrize("page_k,depth,rows,shape,target", [
    (1024, 3, 8, layouts.LLAMA_1B, False), (1024, 5, 1, layouts.LLAMA_1B, False), (512, 4, 2, layouts.LLAMA_1B, False),
    (1024, 3, 16, layouts.LLAMA_1B, False), (1024, 3, 9, layouts.LLAMA_1B, False), (1024, 4, 16, layouts.LLAMA_1B, False),
    (1024, 4, 8, layouts.LLAMA_8B, False), (512, 4, 16, layouts.LLAMA_8B, False),
    (1024, 4, 1, layouts.LLAMA_8B, True), (1024, 4, 8, layouts.LLAMA_8B, True), (1024, 3, 12, layouts.LLAMA_8B, True),
    (1024, 2, 16, layouts.LLAMA_8B, True)])
def test_shared_bytes_is_the_kernels(page_k, depth, rows, shape, target, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    check = (f"\nstatic_assert(SMEM_BYTES == {layouts.shared_bytes(page_k, depth, rows, shape, target)}, \"shared_bytes\");\n"
             f"static_assert(MASK_WORDS == {layouts.MASK_WORDS}, \"MASK_WORDS\");\n"
             f"static_assert(HID == {shape.hidden} && FFN == {shape.ffn} && QKV == {shape.qkv}, \"shape\");\n")
    report = compile_text(layouts.kernel_source(page_k, depth, rows, shape, target) + check, tmp_path, "persistent",
                          "-Xptxas", "-v")
    spills = re.search(r"(\d+) bytes spill stores", report)
    # The draft's builds spill nothing; the target build's GEMM phases beside its attention call a
    # few words at 168 registers (9 warps' cap).
    assert spills and int(spills[1]) <= (64 if target else 0), report


def test_kernel_source_has_its_defines_first_and_every_header_once():
    source = layouts.kernel_source(1024, 3, 9)
    assert source.startswith("#define PAGE_K 1024\n#define DEPTH 3\n#define MAX_M 9\n//") and "#define HID 2048" in source
    assert layouts.kernel_source(1024, 4, 8, layouts.LLAMA_8B).startswith(
        "#define PAGE_K 1024\n#define DEPTH 4\n#define MAX_M 8\n#define HID 4096\n#define FFN 14336\n#define QKV 6144\n")
    assert "PLAIN_IO 1" not in source and layouts.kernel_source(1024, 4, 8, layouts.LLAMA_8B, True).startswith(
        "#define PAGE_K 1024\n#define DEPTH 4\n#define MAX_M 8\n#define HID 4096\n#define FFN 14336\n#define QKV 6144\n"
        f"#define PLAIN_IO 1\n#define TARGET 1\n#define TARGET_BYTES {layouts.target_bytes(8)}\n")
    assert '#include "persistent_' not in source
    for name in ("struct PageSequence", "__device__ __forceinline__ void merge_phase", "#define SMEM_BYTES",
                 "__device__ __forceinline__ void grid_barrier"):
        assert source.count(name) == 1, name


@pytest.mark.parametrize("argv", [["--rows", "17"], ["--rows", "0", "--attention"], ["--layers", "0"],
                                  ["--rings", "1024"], ["--rings", "2048x3"], ["--rings", "1024x1"],
                                  ["--rings", "1024x9"], ["--rows", "16", "--rings", "1024x5"],
                                  ["--rows", "9", "--build-rows", "8"], ["--build-rows", "17"],
                                  ["--attention", "--rows", "9", "--tree-rows", "376"], ["--tree-rows", "-1"],
                                  ["--span", "-1"], ["--visible", "-1"], ["--model", "llama-3-70b"],
                                  ["--model", "llama-3-8b", "--attention"],
                                  ["--model", "llama-3-8b", "--rows", "16", "--rings", "1024x4"]])
def test_bad_arguments_end_in_one_error_line(argv, monkeypatch, capsys):
    assert_main_fails(probe.main, ["persistent_mlp.py", *argv], monkeypatch, capsys)
    # found before anything looks for a GPU: the options' own error (a CPU machine's would say GPU)
    monkeypatch.setattr(probe.torch.cuda, "is_available", lambda: True)
    assert_main_fails(probe.main, ["persistent_mlp.py", *argv], monkeypatch, capsys)


def test_layer_error_checks_each_output_on_its_own_inputs():
    """layer_error compares qkv, mid, y and out with torch's from the inputs given (h; mid and y as
    the side produced them): torch's own outputs score 0, and a wrong element in any one shows."""
    from swiftspec_core.kernels.gemm import gemm_reference
    from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu_reference

    torch.manual_seed(0)
    m, h, f, layers = 2, 32, 16, 1
    bf = torch.bfloat16
    w = probe.Weights(torch.randn(layers, 2 * f, h).to(bf), torch.randn(layers, h, f).to(bf),
                      norm=((1 + 0.1 * torch.randn(layers, h)).to(bf), 1e-5), attn=torch.randn(layers, m, h).to(bf),
                      o=torch.randn(layers, h, h).to(bf), qkv=torch.randn(layers, 48, h).to(bf),
                      g_qkv=(1 + 0.1 * torch.randn(layers, h)).to(bf))
    x = torch.randn(m, h).to(bf)
    qkv = gemm_reference(x, w.qkv[0], norm=w.qkv_norm(0))
    mid = gemm_reference(w.attn[0], w.o[0], residual=x)
    y = gemm_swiglu_reference(mid, w.gate_up[0], norm=w.layer_norm(0))
    out = gemm_reference(y, w.down[0], residual=mid)
    assert probe.layer_error(w, 0, x, qkv, w.attn[0], mid, y, out) == 0
    for i, t in enumerate((qkv, mid, y, out)):
        wrong = [qkv, mid, y, out]
        wrong[i] = t.clone()
        wrong[i][0, 0] += 1
        assert probe.layer_error(w, 0, x, wrong[0], w.attn[0], *wrong[1:]) > 0, i


def test_qkv_rope_tiles_hold_rope_pairs_and_cover_every_row():
    rows = layouts.qkv_rope_rows()  # [192, 16]
    assert sorted(rows.flatten().tolist()) == list(range(layouts.QKV))
    head, d0 = 5 // 4, 8 * (5 % 4)  # tile 5: q head 1, dims 8..15 and 40..47
    assert rows[5].tolist() == [64 * head + d0 + r for r in range(8)] + [64 * head + d0 + 32 + r for r in range(8)]
    assert rows[4 * 32].tolist()[:1] == [2048] and rows[160].tolist() == list(range(2560, 2576))  # k head 0; v
    w = torch.randn(1, layouts.QKV, 2048)
    pages = layouts.paged(w, "qkv_rope", 1024)
    assert torch.equal(pages[0, 5, 1, 9, :1024], w[0, rows[5, 9], 1024:])


def test_the_chain_attention_sees_its_prefix_and_earlier_tokens_only():
    """The chain's block and its reference (tree_attention_reference on the staged chain): a token's
    output does not change when the tokens after it do, and does when one before it does."""
    torch.manual_seed(0)
    a = tree.Attention.random(1, 70, 4, "cpu")  # prefix 70: the chain crosses a chunk boundary
    qkv = torch.randn(4, layouts.QKV).to(torch.bfloat16)
    base = a.run(qkv, 0, None, k=a.k[0].clone(), v=a.v[0].clone(), reference=True)
    later = qkv.clone()
    later[3] = torch.randn(layouts.QKV).to(torch.bfloat16)
    changed = a.run(later, 0, None, k=a.k[0].clone(), v=a.v[0].clone(), reference=True)
    assert torch.equal(changed[:3], base[:3]) and not torch.equal(changed[3], base[3])
    earlier = qkv.clone()
    earlier[0, 2048 + 512:] = torch.randn(512).to(torch.bfloat16)  # token 0's v (q 2048, k 512, v 512)
    assert not torch.equal(a.run(earlier, 0, None, k=a.k[0].clone(), v=a.v[0].clone(), reference=True)[1], base[1])


def test_a_chain_step_is_the_engines_chain_block_and_its_masks_its_rows():
    from swiftspec_bench.kernel_ops import chain_block

    step = tree.TreeStep.random(70, 0, 5)
    assert torch.equal(step.block(), chain_block(70, 5, device="cpu"))
    masks = step.masks().numpy().view(np.uint32)  # [5, 8]: token t sees tree rows 0 .. t
    assert [int(masks[t, 0]) for t in range(5)] == [(1 << (t + 1)) - 1 for t in range(5)] and not masks[:, 1:].any()


def test_a_tree_steps_positions_rows_and_masks_follow_its_parents():
    """Nodes 0..2 drafted before the step, new tokens 3..5: 3 under 1 (under the prefix), 4 under 3,
    5 under the prefix; rows prefix + node, positions prefix + depth, masks the paths' rows."""
    step = tree.TreeStep(100, 3, [-1, -1, 0, 1, 3, -1])
    assert step.m == 3 and step.rows() == [103, 104, 105] and step.positions() == [101, 102, 100]
    block = step.block()  # [3, 4 + 3]
    assert block[:, 1].tolist() == [101, 102, 100] and block[:, 2].tolist() == [103, 104, 105]
    assert block[:, 3].tolist() == [100] * 3 and block[1, 4:].tolist() == [101, 103, 104]
    assert block[2, 4:].tolist() == [105, 105, 105]  # its own row, repeated
    words = step.masks().numpy().view(np.uint32)
    assert [int(w) for w in words[:, 0]] == [0b1010, 0b11010, 0b100000]


@pytest.mark.parametrize("tree_rows,m,width", [(0, 9, 0), (40, 9, 0), (200, 16, 0), (240, 16, 0), (360, 15, 385)])
def test_the_kernels_inputs_from_the_staged_block_are_the_trees(tree_rows, m, width):
    """kernel_inputs (the kernel prologue's torch twin) gives the positions, rows and masks TreeStep
    derives from the parents, also from a block as wide as a drafter's (width: its unused visible
    slots repeat each token's own row)."""
    step = tree.TreeStep.random(1000, tree_rows, m, torch.Generator().manual_seed(tree_rows + m))
    block = step.block(width)
    assert not width or block.shape[1] == 4 + width
    positions, rows, masks, tree_at = layouts.kernel_inputs(block)
    assert positions.tolist() == step.positions() and rows.tolist() == step.rows()
    assert tree_at.tolist() == [1000, 1000 + tree_rows] and tree_at.dtype == torch.int32
    assert positions.dtype == rows.dtype == masks.dtype == torch.int32 and torch.equal(masks, step.masks())


def test_a_trees_masks_cover_every_bit_and_refuse_a_tree_too_large():
    rows = 32 * layouts.MASK_WORDS
    step = tree.TreeStep(0, rows - 6, list(range(-1, rows - 1)))  # a chain of every row: the last sees all
    assert (step.masks().numpy().view(np.uint32)[-1] == 0xFFFFFFFF).all()
    with pytest.raises(ValueError):
        tree.TreeStep(0, rows - 6, list(range(-1, rows))).masks()


def test_a_span_past_the_rows_in_use_is_zero_rows_of_whole_chunks():
    a = tree.Attention.random(1, 40, 6, "cpu", tree_rows=20, span=1000)  # a decoder's graph bucket
    assert a.chunks == 16 and a.span == 66 and not a.k[:, 60:].any() and a.k[:, :60].any()


def test_the_tree_attention_reads_ancestors_only():
    """A random tree step's reference attention: a new token's output changes when an ancestor's
    values do and not when another token's do."""
    torch.manual_seed(1)
    a = tree.Attention.random(1, 40, 6, "cpu", tree_rows=20)
    qkv = torch.randn(6, layouts.QKV).to(torch.bfloat16)
    run = lambda q: a.run(q, 0, None, k=a.k[0].clone(), v=a.v[0].clone(), reference=True)  # noqa: E731
    base = run(qkv)
    step = a.step
    for t in range(step.m):
        other = qkv.clone()
        other[t, 2048 + 512:] = torch.randn(512).to(torch.bfloat16)  # token t's v
        changed = run(other)
        for u in range(step.m):
            sees = step.tree_rows + t in step.path(step.tree_rows + u)
            assert torch.equal(changed[u], base[u]) != sees, (t, u)


def test_launch_args_follow_the_kernels_parameters():
    """persistent.launch_args (the engine's forward and the probe launch through it) gives one
    argument of the right kind for each of persistent_layers' parameters, in their order."""
    import re

    import numpy as np

    from swiftspec_core.kernels import build, tensor_map

    source = (build.CUDA_DIR / "persistent.cu").read_text()
    params = re.search(r"persistent_layers\((.*?)\)\s*\{", source, re.S).group(1).split(",")
    kind = [np.uint64 if "*" in p else tensor_map.TensorMap if "TensorMap" in p else np.int32 if "int " in p
            else np.float32 for p in params]
    args = layouts.launch_args(x0=None, gate_up=None, down=None, y=None, out=None, counters=None, layers=16, m=9,
                               deep=True)
    assert [type(a) for a in args] == kind
    assert args[6:9] == (16, 9, 1) and not any(a for a in args if isinstance(a, np.uint64))


@pytest.mark.parametrize("shape,page_k,sms,ok", [
    (layouts.LLAMA_1B, 1024, 132, True),  # o's and down's 128 tiles, a block each
    (layouts.LLAMA_1B, 1024, 114, False),  # more tiles than SMs, and x's 2 slices < 3 y slots: no room for their sums
    (layouts.LLAMA_1B, 512, 114, True),  # 4 slices of 512: a block takes several tiles
    (layouts.LLAMA_8B, 1024, 132, True)])  # 256 tiles, two a block
def test_grid_blocks_takes_more_tiles_than_sms_where_their_sums_have_room(shape, page_k, sms, ok, monkeypatch):
    monkeypatch.setattr(layouts.torch.cuda, "get_device_properties", lambda device: type("P", (), {"multi_processor_count": sms}))
    if ok:
        assert layouts.grid_blocks("cuda", shape, page_k) == sms
    else:
        with pytest.raises(ValueError, match="tiles a block each"):
            layouts.grid_blocks("cuda", shape, page_k)
