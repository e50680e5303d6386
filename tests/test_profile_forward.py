"""paper_figures/profile_forward.py's labelling of a forward's kernels by place (no GPU needed)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paper_figures.profile_forward import label_kernels  # noqa: E402

EMBED = "vectorized_elementwise_kernel"


def test_sharded_bf16_layer():
    names = [EMBED, "add_rmsnorm_c1", "gemm_nt4", "append_kv", "tree_attention_hd128", "gemm_nt4",
             "add_rmsnorm_c1", "gemm_nt4", "swiglu", "gemm_nt4", "add_rmsnorm_c1", "gemm_nt4", "argmax"]
    assert label_kernels(names) == ["embed", "norm (attention)", "qkv", "append_kv", "attention", "o",
                                    "norm (mlp)", "gate_up", "gate_up", "down", "norm (final)", "lm_head",
                                    "after lm_head"]


def test_awq_layers_with_norms_in_epilogues():
    # one GPU, AWQ: o hands its output straight to the SwiGLU GEMM (no norm kernel between them)
    layer = ["awq_gemm_r8_g128_c1", "tree_attention_hd128", "awq_gemm_r8_g128_c1", "awq_swiglu_r8_g128_c1",
             "awq_gemm_r8_g128_c1"]
    names = [EMBED, "rmsnorm_c1", *layer, *layer, "rmsnorm_c1", "gemm_nt4"]
    one = ["qkv", "attention", "o", "gate_up", "down"]
    assert label_kernels(names) == ["embed", "norm (attention)", *one, *one, "norm (final)", "lm_head"]


def test_persistent_layers():
    # the tree's inputs (kernel_inputs' elementwise ops) run before the one launch of every layer; the
    # copy of the last layer's output out of its slices after it counts with the layers
    names = [EMBED, "copy_kernel", "scatter_reduce", "reduce_kernel", "persistent_layers", "copy_kernel",
             "rmsnorm_c1", "gemm_nt4", "topk"]
    assert label_kernels(names) == ["embed"] * 4 + ["layers (persistent)", "layers (persistent)", "norm (final)",
                                                     "lm_head", "after lm_head"]


def test_a_decodes_kernels_are_tabled_by_name_the_most_time_first():
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from paper_figures.profile_decode import kernel_table

    def event(name, us, device=DeviceType.CUDA):
        return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(elapsed_us=lambda: us))

    events = [event("persistent_layers", 900), event("gemm_nt4", 100), event("gemm_nt4", 140),
              event("persistent_layers", 1000), event("aten::mm", 50, DeviceType.CPU)]
    lines = kernel_table(events, wall_us=4000)
    assert lines[2] == "| persistent_layers | 2 | 950.00 | 1900 | 47.5% |"
    assert lines[3] == "| gemm_nt4 | 2 | 120.00 | 240 | 6.0% |"
    assert lines[-1] == "decode wall 4.0 ms; kernels' sum 2.1 ms; the rest (GPU idle between kernels) 1.9 ms"
