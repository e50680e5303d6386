"""paper_figures/profile_host.py: its stub stages what the real forward stages, and a run reports
the host time a draft step (CPU, tiny models, replayed acceptance)."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from paper_figures.profile_host import StagedStub
from swiftspec_core.graphs import PaddedForward

from engine_fixtures import engine, target_state

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12"


def test_the_stub_stages_the_block_as_the_padded_forward_does():
    model = engine(target_state())
    cache = model.new_cache(64)
    real, stub = PaddedForward(model, cache, 4, 6, graph=False), StagedStub(model, cache, 4, 6, "draft")
    call = ([5, 6, 7], [3, 4, 4], [3, 4, 5], 3, [[3], [3, 4], [3, 5]])
    real(*call)
    logits = stub(*call)
    assert torch.equal(stub.host, real.host) and torch.equal(logits, stub.logits[:3])


def test_a_run_reports_host_time_a_draft_step(tmp_path):
    out = tmp_path / "host.md"
    cmd = [sys.executable, "paper_figures/profile_host.py", str(out), "--functions", "5", "--", "run",
           "--target", "tiny-llama", "--draft", "tiny-llama", "--weights", "random", "--device", "cpu",
           "--dtype", "float32", "--systems", "tree", "--acceptance", f"replay:{REPLAY}", "--tree-bs", "12",
           "--datasets", "gsm8k", "--data-dir", "tests/fixtures", "--limit", "2", "--max-new-tokens", "32",
           "--out", str(tmp_path / "run")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                                                                                  "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    steps = int(text.split(" draft steps")[0].split()[-1])
    assert steps > 0 and "us a draft step**" in text
    table = text.split("|---|---|\n")[1].splitlines()  # the 5 costliest functions, a draft step each
    assert len(table) == 5 and all(float(row.split("|")[2]) > 0 for row in table)


@pytest.mark.skipif(torch.cuda.is_available(), reason="it measures where a GPU is")
def test_step_host_refuses_a_machine_without_a_gpu(tmp_path):
    done = subprocess.run([sys.executable, "paper_figures/step_host.py", str(tmp_path / "out.md")], cwd=ROOT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: step_host.py measures a GPU's draft step; this machine has none"]
