"""The AWQ dequantize kernel (cuda/awq_dequantize.cu, swiftspec_core/kernels/awq_dequantize.py): its
operand checks on CPU, that the runtime hands it to models/awq.py for --kernels fused, and that
dequantize() then takes it only for a tiled weight on CUDA in bf16; on GPU, the kernel's output
bitwise equal to the torch path of dequantize() on the hub layout (which the kernel never takes) over
odd N, K % 64 == 32, groups 32/64/128, fp16 scales of every magnitude and a Llama-3-70B down
projection, with its output poisoned and nothing written past it."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch

from swiftspec_core.kernels import awq_dequantize as kernel
from swiftspec_core.models import awq
from test_kernel_awq_gemm import packed_layer
from test_kernel_gemm import check_bitwise

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def operands(w: awq.TiledAWQWeight) -> tuple:
    return w.qweight, w.qzeros, w.scales, w.n


# --- CPU: the checks, and which weights dequantize() sends to the kernel --------------------------

@pytest.mark.parametrize("case,pattern", [
    ("2-d", "3-D"), ("n-tiles", "ceil"), ("n-odd", "multiple of 8"), ("group-16", "power of two"),
    ("group-48", "power of two"), ("zeros-shape", "are not"), ("scales-shape", "are not"),
    ("tiles", "grid"), ("out-shape", "out must be"), ("qweight-dtype", "int32"), ("scales-dtype", "float16"),
    ("out-dtype", "bfloat16"), ("strided", "contiguous"), ("misaligned", "16-byte aligned"), ("cpu", "CUDA device"),
])
def test_bad_operands_raise(case, pattern):
    """Each bad operand raises ValueError naming it, before any CUDA call (so on CPU); good operands on
    CPU get as far as the device check."""
    w = awq.tile(packed_layer(136, 128, 32, "cpu", seed=0))
    qweight, qzeros, scales, n = operands(w)
    out = None
    if case == "2-d":
        qweight = qweight[0]
    elif case == "n-tiles":
        n = 256  # 4 tiles, qweight holds 3
    elif case == "n-odd":
        n = 132
    elif case == "group-16":
        qweight, qzeros, scales, n = operands(awq.tile(packed_layer(136, 128, 16, "cpu", seed=0)))
    elif case == "group-48":
        qweight, qzeros, scales, n = operands(awq.tile(packed_layer(136, 96, 48, "cpu", seed=0)))
    elif case == "zeros-shape":
        qzeros = qzeros[..., :4].contiguous()
    elif case == "scales-shape":
        scales = scales[..., :32].contiguous()
    elif case == "tiles":
        tiles = kernel.MAX_TILES + 1  # past gridDim.y (expanded views: the shape check comes first)
        qweight = torch.empty(1, 32, 8, dtype=torch.int32).expand(tiles, 32, 8)
        qzeros = torch.empty(1, 1, 8, dtype=torch.int32).expand(tiles, 1, 8)
        scales = torch.empty(1, 1, 64, dtype=torch.float16).expand(tiles, 1, 64)
        n = 64 * tiles
    elif case == "out-shape":
        out = torch.empty(128, 136, dtype=torch.bfloat16)
    elif case == "qweight-dtype":
        qweight = qweight.to(torch.int64)
    elif case == "scales-dtype":
        scales = scales.float()
    elif case == "out-dtype":
        out = torch.empty(136, 128, dtype=torch.float16)
    elif case == "strided":
        qweight = qweight.transpose(1, 2).contiguous().transpose(1, 2)  # same shape, not contiguous
    elif case == "misaligned":
        out = torch.empty(136 * 128 + 1, dtype=torch.bfloat16)[1:].view(136, 128)
    with pytest.raises(ValueError, match=pattern) as raised:
        kernel.awq_dequantize(qweight, qzeros, scales, n, out=out)
    assert str(raised.value).startswith("awq_dequantize: ")


def test_torch_path_where_the_kernel_does_not_apply(monkeypatch):
    """With the kernel handed in, dequantize() still stays in torch on CPU (any dtype) and for the hub
    layout: the kernel is never called, and a tiled weight gives the hub layout's bits."""
    calls = hand_in_counted_kernel(monkeypatch)
    hub = packed_layer(200, 96, 32, "cpu", seed=1)
    tiled = awq.tile(hub)
    for dtype in (torch.bfloat16, torch.float32):
        assert torch.equal(awq.dequantize(tiled, dtype), awq.dequantize(hub, dtype))
    assert calls == []


def hand_in_counted_kernel(monkeypatch) -> list:
    """awq.use_dequantize_kernel(the kernel entry, counting its calls: the n of each); -> the calls.
    The module's previous kernel (normally none) comes back after the test."""
    monkeypatch.setattr(awq, "_tiled_kernel", awq._tiled_kernel)
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[3])
        return kernel.awq_dequantize(*args, **kwargs)

    awq.use_dequantize_kernel(counted)
    return calls


def test_fused_runtime_hands_the_kernel_in(monkeypatch):
    """The runtime's engine setup for --kernels fused hands awq_dequantize to models/awq.py (so the
    target's prefills take it); for --kernels torch it hands in nothing."""
    from swiftspec_core.models import loading
    from swiftspec_core.runtime import service

    monkeypatch.setattr(awq, "_tiled_kernel", None)
    monkeypatch.setattr(loading, "load_engine", lambda spec, **kwargs: spec)
    ctx = SimpleNamespace(group=SimpleNamespace(size=1), device="cpu", role="target",
                          placement=SimpleNamespace(draft_ranks=[1]))
    plan = SimpleNamespace(vocab_bound=0, dtype="bfloat16", kernels="torch", weights="random", seed=0, max_seq_len=64,
                           target="target", draft="draft", quant="awq", system="ar", draft_noise=0.0,
                           persistent_target=False)
    assert service._engines(plan, ctx) == ("target", None)
    assert awq._tiled_kernel is None
    service._engines(SimpleNamespace(**{**vars(plan), "kernels": "fused"}), ctx)
    assert awq._tiled_kernel is kernel.awq_dequantize


@pytest.mark.parametrize("kernels", ["torch", "fused"])
def test_single_process_engines_hand_the_kernel_in_too(monkeypatch, kernels):
    """ar and the lockstep decoders build their engines in the bench's own process (systems.py):
    their prefills take the kernel under --kernels fused as the runtime workers' do."""
    from swiftspec_bench import systems
    from swiftspec_core.models import loading

    monkeypatch.setattr(awq, "_tiled_kernel", None)
    monkeypatch.setattr(loading, "engine_of", lambda loaded, **kwargs: loaded)
    engines = systems.LoadedPair(LOADED, None, dtype=torch.bfloat16, device="cpu", kernels=kernels)
    assert engines._build("target", "awq") == "target"
    assert awq._tiled_kernel is (kernel.awq_dequantize if kernels == "fused" else None)


LOADED = SimpleNamespace(config=SimpleNamespace(vocab_size=8))  # a loaded model's stand-in (LoadedPair.vocab_bound)


def test_a_later_torch_engine_leaves_the_kernel_handed_in(monkeypatch):
    """--kernels fused,torch builds both sets' engines in one process: the torch engine built after
    the fused one must not take the fused engine's prefills off the kernel."""
    from swiftspec_bench import systems
    from swiftspec_core.models import loading

    monkeypatch.setattr(awq, "_tiled_kernel", None)
    monkeypatch.setattr(loading, "engine_of", lambda loaded, **kwargs: loaded)
    for kernels in ("fused", "torch"):
        systems.LoadedPair(LOADED, None, dtype=torch.bfloat16, device="cpu", kernels=kernels)._build("target", "awq")
    assert awq._tiled_kernel is kernel.awq_dequantize


# --- GPU: bitwise the torch path -----------------------------------------------------------------

def check_against_torch_path(hub: awq.AWQWeight, label: str) -> None:
    """The kernel on tile(hub) into a NaN-poisoned buffer one tile of rows longer than [N, K]: its
    [N, K] equals the torch path on the hub layout bit for bit, and the rows past N stay NaN."""
    tiled = awq.tile(hub)
    n, k = tiled.shape
    buffer = torch.full(((n + 64) * k,), float("nan"), dtype=torch.bfloat16, device="cuda")
    out = buffer[: n * k].view(n, k)
    got = kernel.awq_dequantize(*operands(tiled), out=out)
    want = awq.dequantize(hub, torch.bfloat16)  # the hub layout: the torch path
    torch.cuda.synchronize()
    assert got.data_ptr() == out.data_ptr()
    check_bitwise(got, want, f"{label}: kernel vs torch path")
    assert buffer[n * k:].isnan().all(), f"{label}: the kernel wrote past out (columns >= N)"


@needs_gpu
@pytest.mark.parametrize("n,k,group", [
    (200, 64, 32), (200, 96, 32), (136, 128, 64), (1000, 256, 128), (72, 96, 32), (2080, 384, 128),
    (8, 32, 32), (264, 160, 32), (4096, 1024, 128), (1152, 896, 128),
])
def test_kernel_matches_torch_path_bitwise(n, k, group):
    """N % 64 in {8, 32, 40, 56, 0}, K % 64 == 32 (a last 32-row piece), one group per piece and two."""
    check_against_torch_path(packed_layer(n, k, group, "cuda", seed=n + k), f"[{n}, {k}] G {group}")


@needs_gpu
@pytest.mark.parametrize("n,k,group", [(200, 96, 32), (1000, 512, 128)])
def test_every_fp16_scale_magnitude(n, k, group):
    """Scales of random positive finite fp16 bit patterns (subnormals up to 65504): every rounding
    case of the fp32 product to bf16, ties to even included."""
    hub = packed_layer(n, k, group, "cuda", seed=7)
    gen = torch.Generator(device="cuda").manual_seed(8)
    bits = torch.randint(1, 0x7C00, hub.scales.shape, generator=gen, device="cuda", dtype=torch.int32)
    check_against_torch_path(hub._replace(scales=bits.to(torch.int16).view(torch.float16)), "fp16 bit patterns")


@needs_gpu
def test_llama_70b_down_projection():
    """[8192, 28672] at group 128 (Llama-3-70B's down projection: the largest K), out allocated;
    prints the kernel's time next to the torch path's on the tiled weight (what it replaces)."""
    hub = packed_layer(8192, 28672, 128, "cuda", seed=70)
    check_against_torch_path(hub, "70b-down")
    tiled = awq.tile(hub)
    torch_path = lambda: awq.dequantize(awq.untile(tiled), torch.bfloat16)  # noqa: E731
    for name, run in (("kernel", lambda: kernel.awq_dequantize(*operands(tiled))), ("torch path", torch_path)):
        run()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) / 3 * 1e3
        moved = 8192 * 28672 * 2.5 + tiled.scales.numel() * 2.5  # bf16 out, 4-bit codes, scales and zeros
        print(f"70b-down dequantize, {name}: {ms:.3f} ms ({moved / ms / 1e6:.0f} GB/s for the bytes the kernel moves)")


@needs_gpu
def test_dequantize_and_linear_take_the_kernel(monkeypatch):
    """Once handed in, dequantize(tiled, bf16) and linear() on CUDA go through the kernel (same bits
    as the hub layout's torch path); dequantize(tiled, fp32), the hub layout, and a tiled weight
    with no kernel handed in do not."""
    monkeypatch.setattr(awq, "_tiled_kernel", None)
    hub = packed_layer(200, 96, 32, "cuda", seed=2)
    tiled = awq.tile(hub)
    want = awq.dequantize(hub, torch.bfloat16)
    check_bitwise(awq.dequantize(tiled, torch.bfloat16), want, "dequantize(tiled, bf16), torch path")
    calls = hand_in_counted_kernel(monkeypatch)
    assert torch.equal(awq.dequantize(hub, torch.bfloat16), want) and calls == []
    check_bitwise(awq.dequantize(tiled, torch.bfloat16), want, "dequantize(tiled, bf16)")
    assert calls == [200]
    assert torch.equal(awq.dequantize(tiled, torch.float32), awq.dequantize(hub, torch.float32))
    assert calls == [200]
    x = torch.randn(5, 96, device="cuda").to(torch.bfloat16)
    check_bitwise(awq.linear(x, tiled), torch.nn.functional.linear(x, want), "linear(x, tiled)")
    assert calls == [200, 200]
