"""The persistent chain of AWQ GEMMs (cuda/awq_chain.cu, swiftspec_core/kernels/awq_chain.py): its
checks and shared memory on CPU; on GPU, every phase bitwise awq_gemm's at (S, C) with its output
poisoned first (mixed shapes and parts, the 70B's qkv and o), a row's bits independent of M and of
the other rows, and graph replays alike (the barrier and the tickets reset for the next launch)."""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.kernels import awq_chain
from swiftspec_core.kernels.awq_chain import AWQChain, Phase, chain_reference, check_phase
from swiftspec_core.models import awq
from swiftspec_core.graphs import capture
from test_kernel_awq_gemm import activations, packed_layer

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
SHARED_PER_BLOCK = 227 * 1024  # H100 / H200: what one block may take


def test_shared_memory_fits_one_block_an_sm():
    for warps, stages in ((16, 8), (16, 4), (20, 4), (24, 4), (12, 8)):
        assert awq_chain.shared_bytes(warps, stages) + 5 * 1024 <= SHARED_PER_BLOCK  # + the static ~4.6 KB
    assert awq_chain.shared_bytes(20, 8) + 5 * 1024 > SHARED_PER_BLOCK


@pytest.mark.parametrize("case,pattern", [("rows", "M = 9"), ("group", "group 64"), ("parts", "3 parts"),
                                          ("too-many-parts", "2 parts of 16 warps on 16 groups")])
def test_bad_phases_raise(case, pattern, monkeypatch):
    # The operand checks want CUDA tensors: let CPU ones through to reach the chain's own checks.
    monkeypatch.setattr(awq_chain, "check_operands", lambda *a: None)
    m, k, group, parts = 8, 2048, 128, 1
    if case == "rows":
        m = 9
    elif case == "group":
        group = 64
    elif case == "parts":
        parts = 3
    elif case == "too-many-parts":
        parts = 2
    w = awq.tile(packed_layer(64, k, group, "cpu", seed=0))
    with pytest.raises(ValueError, match=pattern):
        check_phase(Phase(torch.zeros(m, k, dtype=torch.bfloat16), w, torch.zeros(m, 64, dtype=torch.bfloat16), parts))


def test_cpu_operands_raise():
    w = awq.tile(packed_layer(64, 2048, 128, "cpu", seed=0))
    with pytest.raises(ValueError, match="CUDA device"):
        AWQChain([Phase(torch.zeros(8, 2048, dtype=torch.bfloat16), w, torch.zeros(8, 64, dtype=torch.bfloat16))])


# --- GPU ------------------------------------------------------------------------------------

def chain_phases(m: int, layers: dict[str, tuple[int, int, int]], seed: int = 0) -> list[Phase]:
    """A phase per (N, K, parts), random weights and x, outputs poisoned."""
    phases = []
    for i, (n, k, parts) in enumerate(layers.values()):
        w = awq.tile(packed_layer(n, k, 128, "cuda", seed=seed + i))
        out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        phases.append(Phase(activations(m, k, "cuda", seed=seed + 100 + i), w, out, parts))
    return phases


def assert_bitwise(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    differ = int((got.view(torch.int16) != want.view(torch.int16)).sum())
    assert differ == 0, f"{what}: {differ} of {want.numel()} elements differ"


MIXED = {"a": (2048, 4096, 1), "b": (1000, 4096, 2), "c": (640, 8192, 4), "d": (4096, 2048, 1), "e": (136, 2048, 1)}


@needs_gpu
@pytest.mark.parametrize("m", [1, 5, 8])
def test_chain_is_bitwise_awq_gemm_at_its_shape(m):
    phases = chain_phases(m, MIXED)
    AWQChain(phases)()
    for (name, _), p, want in zip(MIXED.items(), phases, chain_reference(phases)):
        assert_bitwise(p.out, want, f"phase {name} at M = {m}")


@needs_gpu
@pytest.mark.parametrize("warps,stages", [(16, 4), (20, 4), (12, 8)])
def test_other_builds_are_bitwise_too(warps, stages):
    # each phase in the most parts (at most its MIXED ones) that give every warp a group; none
    # where even one part has fewer groups than warps (K = 2048 at 20 warps)
    fitted = {name: (n, k, max(c for c in (1, 2, 4) if c <= parts and c * warps <= k // 128))
              for name, (n, k, parts) in MIXED.items() if warps <= k // 128}
    phases = chain_phases(8, fitted)
    AWQChain(phases, warps, stages)()
    for p, want in zip(phases, chain_reference(phases, warps)):
        assert_bitwise(p.out, want, f"S = {warps}, {stages} stages")


@needs_gpu
def test_70b_qkv_and_o():
    shapes = {"qkv": (10240, 8192, 4), "o": (8192, 8192, 1)}
    phases = chain_phases(8, shapes)
    AWQChain(phases)()
    for name, p, want in zip(shapes, phases, chain_reference(phases)):
        assert_bitwise(p.out, want, name)


@needs_gpu
def test_rows_do_not_depend_on_m_or_the_other_rows():
    full = chain_phases(8, MIXED, seed=1)
    AWQChain(full)()
    alone = [p._replace(x=p.x[3:4].clone(), out=torch.full_like(p.out[:1], float("nan"))) for p in full]
    AWQChain(alone)()
    others = [p._replace(x=torch.randn_like(p.x), out=torch.full_like(p.out, float("nan"))) for p in full]
    for p, q in zip(others, full):
        p.x[6] = q.x[3]
    AWQChain(others)()
    for name, f, a, o in zip(MIXED, full, alone, others):
        assert_bitwise(a.out[0], f.out[3], f"phase {name}: row 3 alone")
        assert_bitwise(o.out[6], f.out[3], f"phase {name}: row 3 at row 6 among others")


@needs_gpu
def test_graph_replays_alike():
    phases = chain_phases(8, MIXED, seed=2)
    chain = AWQChain(phases)
    graph, _ = capture(chain, warmups=1)
    want = chain_reference(phases)
    for _ in range(3):
        for p in phases:
            p.out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for name, p, w in zip(MIXED, phases, want):
            assert_bitwise(p.out, w, f"phase {name} after a replay")
    assert int(chain.barrier.abs().sum()) == 0
    assert all(t is None or int(t.abs().sum()) == 0 for _, t in chain.scratch)


def test_probe_without_a_gpu_is_one_error(tmp_path, capsys, monkeypatch):
    from paper_figures import awq_chain_probe

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert awq_chain_probe.main(["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err


@needs_gpu
def test_without_barriers_and_stamped():
    """The probe's two variants: no barriers (phases independent here) and stamps, both bitwise."""
    phases = chain_phases(8, MIXED, seed=3)
    want = chain_reference(phases)
    for chain in (AWQChain(phases, barriers=False), AWQChain(phases, stamps=True)):
        for p in phases:
            p.out.fill_(float("nan"))
        chain()
        torch.cuda.synchronize()
        for name, p, w in zip(MIXED, phases, want):
            assert_bitwise(p.out, w, f"phase {name}, barriers {chain.barriers}")
    arrive, depart = chain.stamps[..., 0], chain.stamps[..., 1]
    assert (arrive > 0).all() and (depart >= arrive).all() and (arrive[1:] >= depart[:-1]).all()
    assert (arrive.max(1).values <= depart.min(1).values).all()  # no block leaves a barrier before all arrive
