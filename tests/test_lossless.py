"""compare's losslessness report: each divergence placed and classed by the reference's margin."""
from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from swiftspec_bench import compare, lossless, results
from swiftspec_bench.cli import app
from test_bench_units import frame_of, make_row

REF = [5, 6, 7, 8, 9]
MARGINS = [1.0, 2.0, 0.01, 3.0, 0.5]
RUNNER_UPS = [50, 60, 1, 80, 90]  # the reference's second choice at each position


def row(system, tokens=REF, margins=MARGINS, dtype="bfloat16", turn=1, runner_ups=None, **over):
    """A row; one that emits REF records REF's runner-ups unless told otherwise, others none."""
    runner_ups = (RUNNER_UPS if tokens is REF else []) if runner_ups is None else runner_ups
    return make_row(system, turn=turn, sha=results.output_sha(tokens), output_tokens=list(tokens),
                    margins=list(margins), runner_ups=list(runner_ups), dtype=dtype, **over)


def classes(frame):
    found, summary = lossless.check(frame)
    return found[["system", "turn", "position", "class"]].values.tolist(), summary


def test_first_difference():
    assert lossless.first_difference([1, 2, 3], [1, 2, 4]) == 2
    assert lossless.first_difference([1, 2], [1, 2, 3]) == 2
    assert lossless.first_difference([1, 2], [1, 2]) is None
    assert lossless.first_difference(None, [1]) is None


def test_divergences_are_placed_and_classed_against_ar():
    frame = frame_of(row("ar"), row("chain"),
                     row("tree", [5, 6, 1, 1, 1]),  # differs at 2, where ar's margin is 0.01: near-tie
                     row("swiftspec", [5, 6, 7, 1, 1]),  # at 3, margin 3.0: real
                     row("hf-ar", [5, 1, 1, 1, 1]))  # a peer in bf16: agreement length 1
    found, summary = classes(frame)
    assert found == [["tree", 1, 2, "near-tie"], ["swiftspec", 1, 3, "real"], ["hf-ar", 1, 1, "agreement"]]
    assert lossless.check(frame)[0]["ref_margin"].tolist() == [0.01, 3.0, 2.0]
    by_system = summary.set_index("system")
    assert by_system.loc["chain", "identical"] == 1 and by_system.loc["swiftspec", "real"] == 1
    assert by_system.loc["tree", "near-tie"] == 1 and by_system.loc["hf-ar", "agreement"] == 1
    passed, line = lossless.verdict(lossless.check(frame)[0])
    assert not passed and "1 real" in line
    passed, line = lossless.verdict(lossless.check(frame[frame.system != "swiftspec"])[0])
    assert passed and "1 near-tie" in line and "1 agreement" in line


def test_a_near_tie_is_a_choice_within_the_tie():
    # At position 2 the reference's margin (0.01) is below the bound and its runner-up is token 1.
    low = [1.0, 2.0, 0.02, 3.0, 0.5]  # the rows' own margins: a near-tie at 2 as well
    frame = frame_of(row("ar"),
                     row("tree", [5, 6, 2, 1, 1], margins=low),  # ranked by neither: a bug, real
                     row("chain", [5, 6, 3, 1, 1], margins=low, runner_ups=[50, 60, 4, 0, 0]),  # neither: real
                     row("swiftspec", [5, 6, 1, 1, 1], margins=low, runner_ups=[50, 60, 4, 0, 0]),  # ar's 2nd
                     row("swiftspec:d2", [5, 6, 4, 1, 1], margins=low, runner_ups=[50, 60, 7, 0, 0]),  # its 2nd is ar's
                     row("swiftspec:d3", [5, 6, 4, 1, 1], margins=low, runner_ups=[50, 60, 1, 0, 0]),  # both 2nds: 1
                     row("tree:graft", [5, 6, 1, 1, 1], margins=[1.0, 2.0, 0.5, 3.0, 0.5]))  # its own margin is wide
    found, _ = classes(frame)
    assert found == [["tree", 1, 2, "real"], ["chain", 1, 2, "real"], ["swiftspec", 1, 2, "near-tie"],
                     ["swiftspec:d2", 1, 2, "near-tie"], ["swiftspec:d3", 1, 2, "near-tie"], ["tree:graft", 1, 2, "real"]]


def test_tp_systems_are_held_against_ar_at_their_placement():
    frame = frame_of(row("ar"), row("ar@tp2", [5, 6, 7, 8, 1]),  # TP2 rounds apart at 4 (margin 0.5)
                     row("chain@tp2", [5, 6, 7, 8, 1]), row("tree@tp2", [5, 6, 7, 2, 2]),  # from ar@tp2 at 3
                     row("swiftspec@1+1"), row("swiftspec@2+1", [5, 6, 7, 8, 1]))
    found, _ = classes(frame)
    assert found == [["ar@tp2", 1, 4, "placement"], ["tree@tp2", 1, 3, "real"]]
    assert lossless.check(frame)[0]["differs_from"].tolist() == ["ar", "ar@tp2"]
    assert [lossless.target_tp(s) for s in ("ar", "chain@tp2:graft", "swiftspec@2+1:d3", "swiftspec:d2")] == [1, 2, 2, 1]
    fp32 = frame_of(row("ar", dtype="float32"), row("ar@tp2", [5, 6, 7, 8, 1], dtype="float32"))
    assert classes(fp32)[0] == [["ar@tp2", 1, 4, "real"]]  # in fp32 TP must equal one process


def test_fused_rows_are_held_against_fused_ar_only():
    # The fused kernels round apart from torch's: tree:fused must equal ar:fused, whatever ar emits.
    frame = frame_of(row("ar", [5, 6, 7, 8, 1]), row("tree"), row("ar:fused"), row("tree:fused"),
                     row("swiftspec:d3:graft:fused", [5, 6, 7, 1, 1]), row("ar@tp2:fused", [5, 6, 7, 8, 2]),
                     row("tree@tp2:fused", [5, 6, 7, 8, 2]))
    found, _ = classes(frame)
    assert found == [["tree", 1, 4, "real"], ["swiftspec:d3:graft:fused", 1, 3, "real"],
                     ["ar@tp2:fused", 1, 4, "placement"]]
    assert lossless.check(frame)[0]["differs_from"].tolist() == ["ar", "ar:fused", "ar:fused"]
    alone = frame_of(row("tree:fused"), row("chain:fused"), row("swiftspec:fused", [5, 1, 1, 1, 1]), row("ar"))
    assert classes(alone)[0] == [["swiftspec:fused", 1, 1, "real"]]  # the fused majority, not torch's ar


def test_persistent_draft_rows_are_held_against_fused_ar():
    # --kernels persistent: the draft on the persistent kernel, the target (and ar) fused
    frame = frame_of(row("ar", [5, 6, 7, 8, 1]), row("ar:fused"), row("tree:persistent"),
                     row("swiftspec@1+1:persistent", [5, 6, 7, 1, 1]))
    found, _ = classes(frame)
    assert found == [["swiftspec@1+1:persistent", 1, 3, "real"]]
    assert lossless.check(frame)[0]["differs_from"].tolist() == ["ar:fused"]
    assert [lossless.target_kernels(pd.Series({"system": s})) for s in ("ar", "ar:fused", "tree:graft:persistent")
            ] == ["torch", "fused", "fused"]  # rows before the target_kernels column: read off the label


def test_rows_are_held_against_ar_on_the_same_target_kernels():
    # --kernels fused,persistent with a target the persistent kernel takes: ar and the one-GPU
    # targets on it (rows say target_kernels persistent), tree@tp2's fused; each against ar there
    persistent = dict(target_kernels="persistent")
    frame = frame_of(row("ar:fused", [5, 6, 7, 8, 1], target_kernels="fused"), row("ar:persistent", **persistent),
                     row("tree:persistent", **persistent),
                     row("swiftspec@1+1:persistent", [5, 6, 7, 1, 1], **persistent),
                     row("ar@tp2:fused", [5, 6, 9, 9, 9], target_kernels="fused"),
                     row("tree@tp2:persistent", [5, 6, 9, 9, 9], target_kernels="fused"),
                     row("chain:fused", [5, 6, 7, 8, 1], target_kernels="fused"))
    found, _ = classes(frame)
    assert found == [["swiftspec@1+1:persistent", 1, 3, "real"], ["ar@tp2:fused", 1, 2, "placement"]]
    assert lossless.check(frame)[0]["differs_from"].tolist() == ["ar:persistent", "ar:fused"]
    assert lossless.target_kernels(pd.Series({"system": "ar", "target_kernels": "torch-compile"})) == "torch"


def test_fp32_has_no_near_ties_and_peers_can_fail():
    frame = frame_of(row("ar", dtype="float32"), row("tree", [5, 6, 1, 1, 1], dtype="float32"),
                     row("hf-ar", [5, 1, 1, 1, 1], dtype="float32"))
    found, _ = classes(frame)
    assert found == [["tree", 1, 2, "real"], ["hf-ar", 1, 1, "real"]]


def test_majority_reference_without_ar_and_unknown_tokens_are_real():
    frame = frame_of(row("chain"), row("tree"), row("swiftspec", [5, 6, 1, 1, 1]), row("hf-ar", [1, 1, 1, 1, 1]),
                     row("hf-assisted", [1, 1, 1, 1, 1]))
    found = lossless.check(frame)[0]
    assert set(found["differs_from"]) == {"majority"}  # ours outvote the peers
    assert found[["system", "class"]].values.tolist() == [["swiftspec", "near-tie"], ["hf-ar", "agreement"],
                                                          ["hf-assisted", "agreement"]]
    old = frame_of(make_row("ar"), make_row("tree", sha="b" * 64))  # rows from before output_tokens
    assert classes(old)[0] == [["tree", 1, None, "real"]]


def test_later_turns_follow_and_configs_stay_apart():
    frame = frame_of(row("ar"), row("tree", [5, 6, 1, 1, 1]), row("ar", [2, 2], turn=2),
                     row("tree", [3, 3], turn=2), row("ar", [5, 1, 1, 1, 1], draft="noisy"))
    found, summary = classes(frame)
    assert found == [["tree", 1, 2, "near-tie"], ["tree", 2, 0, "follows"]]
    assert lossless.verdict(lossless.check(frame)[0])[0]
    replayed = frame.assign(acceptance="replayed")
    assert lossless.check(replayed)[0].empty


def test_compare_cli_exit_code(tmp_path):
    for name, rows, code, text in [("near", [row("ar"), row("tree", [5, 6, 1, 1, 1])], 0, "lossless: yes to rounding"),
                                   ("real", [row("ar"), row("tree", [5, 6, 7, 1, 1])], 1, "lossless: NO (1 real"),
                                   ("same", [row("ar"), row("tree")], 0, "lossless: yes")]:
        table = results.ResultsTable(tmp_path / name)
        for r in rows:
            table.append(r)
        res = CliRunner().invoke(app, ["compare", str(tmp_path / name)])
        assert res.exit_code == code and text in res.stdout, res.stdout
        if name != "same":
            assert "near-tie" in res.stdout and "ref_margin" in res.stdout
    diverged = lossless.shown(lossless.check(frame_of(row("ar"), row("tree", [5, 6, 7, 1, 1])))[0])
    for fmt in compare.FORMATS:
        assert "tree" in compare.render(diverged, fmt) and "3.0000" in compare.render(diverged, fmt)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_one_bound_per_dtype(dtype):
    assert lossless.NEAR_TIE_MARGIN[dtype] == (0.0 if dtype == "float32" else lossless.NEAR_TIE_MARGIN_BF16)
