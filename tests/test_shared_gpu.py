"""SWIFTSPEC_SHARED_GPU (runtime/gpus.py): a run's ranks may share fewer GPUs, their TP groups over
peer memory (runtime/peer_group.py; a correctness mode: their kernels take turns). CPU: which rank drives
which GPU, which runs are refused and with what line, the rows' gpus column and compare's note.
(GPU: the own-process kernel tests and PeerGroup's on one GPU, test_kernel_allreduce.py; runs of
--tp 2 and --split 1+1 on one GPU: paper_figures/lossless_gpu.sh with SHARED=1.)"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from swiftspec_bench import compare, placement, plot
from swiftspec_core.errors import UserError
from swiftspec_core.runtime import gpus


@pytest.fixture
def one_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    return monkeypatch


def test_a_gpu_a_rank_without_the_variable(one_gpu):
    one_gpu.delenv(gpus.SHARED_GPU_ENV, raising=False)
    assert [gpus.gpu_of(r) for r in range(3)] == [0, 1, 2]
    assert not gpus.shares_gpus(2)
    gpus.check_gpus(1, "--tp")
    with pytest.raises(UserError, match=r"^--split 1\+1 needs 2 GPUs, 1 visible$"):
        gpus.check_gpus(2, "--split 1+1")
    with pytest.raises(UserError, match="--tp needs 2 GPUs, 1 visible"):
        placement.check_processes("cuda", 2, None)


def test_shared_ranks(one_gpu):
    one_gpu.setenv(gpus.SHARED_GPU_ENV, "1")
    assert [gpus.gpu_of(r) for r in range(3)] == [0, 0, 0]
    assert gpus.shares_gpus(2) and not gpus.shares_gpus(1)
    placement.check_processes("cuda", 2, (1, 1))  # --tp 2 and --split 1+1 on the one GPU
    placement.check_processes("cuda", 1, (2, 1))
    placement.check_processes("cpu", 4, (2, 2))  # gloo ranks on the CPU: no GPUs asked for
    one_gpu.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(UserError, match="--split 1\\+1 needs 2 GPUs, 0 visible"):
        gpus.check_gpus(2, "--split 1+1")


def test_ranks_go_round_the_gpus(monkeypatch):
    monkeypatch.setenv(gpus.SHARED_GPU_ENV, "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert [gpus.gpu_of(r) for r in range(4)] == [0, 1, 2, 0]
    assert gpus.shares_gpus(4) and not gpus.shares_gpus(3)  # a GPU a rank: NCCL as usual


def test_rows_record_the_gpus_used(one_gpu):
    one_gpu.setenv(gpus.SHARED_GPU_ENV, "1")
    pair = SimpleNamespace(split=(1, 1), tp=1, device="cuda", kernels="torch", persistent_target=False,
                           spans_processes=lambda system: system.name == "swiftspec")
    assert placement.where(pair, "swiftspec")["gpus"] == 1  # two processes on the one GPU
    assert placement.where(pair, "ar")["gpus"] == 1
    pair.device = "cpu"
    assert placement.where(pair, "swiftspec")["gpus"] == 0


def test_compare_says_when_processes_shared_a_gpu():
    frame = pd.DataFrame({"system": ["ar:fused", "swiftspec@1+1:fused", "tree@tp2:fused", "tree:fused"],
                          "gpus": [1, 1, 1, 1]})
    note = compare.shared_gpu_note(frame)
    assert note is not None and "swiftspec@1+1:fused, tree@tp2:fused ran" in note and "times mean nothing" in note
    assert "ar:fused" not in note and "tree:fused," not in note
    assert compare.shared_gpu_note(frame.assign(gpus=[1, 2, 2, 1])) is None  # a GPU a process
    assert compare.shared_gpu_note(frame.assign(gpus=0)) is None  # gloo ranks on the CPU
    assert compare.shared_gpu_note(frame.drop(columns="gpus")) is None  # older rows
    assert [placement.label_processes(s) for s in ("swiftspec@2+1:d3:fused", "chain@tp4", "ar", "swiftspec")] == \
        [3, 4, 1, 1]


def test_figures_say_when_processes_shared_a_gpu():
    frame = pd.DataFrame({"system": ["ar", "swiftspec@1+1"], "gpus": [1, 1], "device": "cuda", "weights": "random",
                          "acceptance": "real"})
    assert plot.provenance(frame).splitlines() == ["device cuda, weights random, acceptance real",
                                                   "times void: swiftspec@1+1 shared a GPU"]
    assert plot.provenance(frame.assign(gpus=[1, 2])) == "device cuda, weights random, acceptance real"
    assert compare.notes(frame) == [compare.shared_gpu_note(frame)]
