"""The instruction mix of our kernels' loops, from their SASS, on a machine without a GPU (NOTES v96):

    python3 paper_figures/sass_mix.py SOURCE [KERNEL ...]      (SOURCE: a cuda/ file's name, e.g. awq_gemm)

Builds cuda/SOURCE.cu as the runtime would (build.source: headers inlined) with nvcc for sm_90a,
disassembles it with cuobjdump (NVIDIA's nvidia-cuda-cuobjdump wheel carries one where the toolkit
does not: put its bin/ on PATH or set CUOBJDUMP), and prints for each kernel (all, or those named)
every loop's body (a backward branch and its target) with its instruction count by opcode and by
the pipe it issues to on Hopper, as NOTES v91 found them to matter: FMA-heavy (IMAD, its half-rate
integer multiply-adds), FMA (fp32 and fp16 arithmetic), ALU (logic, shifts, compares, permutes),
tensor (HMMA), memory (loads, stores, copies, barriers of the async copies) and other. A static
count: how often each loop runs, and which loop is hot, is for a profiler to say (ncu's source page).
Not the device's NVRTC build: the same ptxas version gives the same code, a different one may not.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

from swiftspec_core.kernels.build import nvcc_command, source

PIPES = (  # (pipe, opcode prefixes), first match wins
    ("fma-heavy", ("IMAD",)),
    ("fma", ("FFMA", "FADD", "FMUL", "FMNMX", "HADD2", "HFMA2", "HMUL2", "F2F", "I2F", "F2I", "FSETP", "FSEL")),
    ("alu", ("LOP3", "SHF", "IADD3", "ISETP", "LEA", "PRMT", "SEL", "IABS", "IMNMX", "VIADD", "FLO", "POPC", "MOV")),
    ("tensor", ("HMMA", "IMMA", "HGMMA")),
    ("memory", ("LD", "ST", "LDS", "STS", "LDSM", "LDG", "STG", "LDGSTS", "LDGDEPBAR", "DEPBAR", "ATOM", "RED",
                "UBLKCP", "SYNCS")),
)
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
TARGET = re.compile(r"\b(0x[0-9a-f]+)\b")


def pipe_of(opcode: str) -> str:
    base = opcode.split(".")[0]
    for pipe, prefixes in PIPES:
        if any(base == p or base.startswith(p) for p in prefixes):
            return pipe
    return "other"


def disassemble(name: str) -> str:
    """cuobjdump -sass of cuda/NAME.cu built for sm_90a."""
    tool = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if tool is None:
        sys.exit("error: no cuobjdump on PATH (pip download nvidia-cuda-cuobjdump; its bin/ has one), or set CUOBJDUMP")
    with tempfile.TemporaryDirectory() as folder:
        cu, cubin = os.path.join(folder, f"{name}.cu"), os.path.join(folder, f"{name}.cubin")
        with open(cu, "w") as f:
            f.write(source(name))
        subprocess.run(nvcc_command(cu, cubin), check=True)
        return subprocess.run([tool, "-sass", cubin], check=True, capture_output=True, text=True).stdout


def kernels(sass: str) -> dict[str, list[tuple[int, str, str]]]:
    """Kernel name -> its instructions (address, opcode, operands)."""
    out, current = {}, None
    for line in sass.splitlines():
        if "Function :" in line:
            current = out.setdefault(line.split("Function :")[1].strip(), [])
        elif current is not None and (m := LINE.search(line)):
            current.append((int(m.group(1), 16), m.group(3), m.group(4)))
    return out


def loops(code: list[tuple[int, str, str]]) -> list[tuple[int, int]]:
    """(first, last) instruction indices of every loop body: a branch back to an earlier address."""
    index = {address: i for i, (address, _, _) in enumerate(code)}
    found = []
    for i, (address, opcode, operands) in enumerate(code):
        if opcode.startswith("BRA") and (t := TARGET.search(operands)) and int(t.group(1), 16) < address:
            if int(t.group(1), 16) in index:
                found.append((index[int(t.group(1), 16)], i))
    return found


def report(name: str, wanted: list[str]) -> None:
    for kernel, code in kernels(disassemble(name)).items():
        if wanted and kernel not in wanted:
            continue
        print(f"## {kernel}: {len(code)} instructions")
        for first, last in sorted(loops(code), key=lambda fl: fl[1] - fl[0], reverse=True):
            body = code[first:last + 1]
            by_pipe = collections.Counter(pipe_of(op) for _, op, _ in body)
            by_op = collections.Counter(op.split(".")[0] + ("." + op.split(".")[1] if op.startswith("IMAD.") else "")
                                        for _, op, _ in body)
            print(f"- loop {code[first][0]:#x}..{code[last][0]:#x}: {len(body)} instructions; by pipe "
                  + ", ".join(f"{p} {n}" for p, n in by_pipe.most_common()))
            print("  by opcode " + ", ".join(f"{op} {n}" for op, n in by_op.most_common(14)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("error: usage: sass_mix.py SOURCE [KERNEL ...]")
    report(sys.argv[1], sys.argv[2:])
