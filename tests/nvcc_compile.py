"""A CUDA source text through the runtime's nvcc command (build.nvcc_command), for the CPU tests
that check that a kernel source, or an instrumented or ablated copy of one, compiles."""
from __future__ import annotations

import subprocess
from pathlib import Path

from swiftspec_core.kernels import build


def compile_text(text: str, tmp_path: Path, name: str = "kernel", *extra: str) -> str:
    """nvcc (sm_90a, then `extra`) on `text` written to tmp_path/name.cu -> its report (stdout and
    stderr: ptxas's with -Xptxas -v); fails the test with nvcc's message if it does not compile."""
    source, cubin = tmp_path / f"{name}.cu", tmp_path / f"{name}.cubin"
    source.write_text(text)
    done = subprocess.run(build.nvcc_command(str(source), str(cubin), "sm_90a", *extra), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return done.stdout + done.stderr
