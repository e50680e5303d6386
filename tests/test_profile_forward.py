"""paper_figures/profile_forward.py's labelling of a forward's kernels by place (no GPU needed)."""
from paper_figures.profile_forward import label_kernels

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
    # whatever runs before the one launch of every layer counts with the embedding (the tree's inputs
    # ran there as elementwise ops until the kernel read the staged block itself); the copy of the
    # last layer's output out of its slices after it counts with the layers
    names = [EMBED, "copy_kernel", "scatter_reduce", "reduce_kernel", "persistent_layers", "copy_kernel",
             "rmsnorm_c1", "gemm_nt4", "topk"]
    assert label_kernels(names) == ["embed"] * 4 + ["layers (persistent)", "layers (persistent)", "norm (final)",
                                                     "lm_head", "after lm_head"]
