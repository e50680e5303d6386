"""The persistent probe's attention operands (persistent_mlp.py --attention): a draft step's tree of
M new tokens over a cached prefix and the tree rows drafted before it, as the engine stages it (the
block, staged.py), which cuda/persistent.cu reads (positions, cache rows and tree masks: its torch
twin swiftspec_core.kernels.persistent.kernel_inputs is checked against the tree's parents).
tests/test_persistent_mlp.py checks them on the CPU."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from swiftspec_bench.kernel_shapes import shard_args
from swiftspec_core import staged
from swiftspec_core.kernels.attention import tree_attention, tree_attention_reference
from swiftspec_core.models.rope import rope_tables

from swiftspec_core.kernels.persistent import CHUNK, HEAD_DIM, KV_HEADS, MASK_WORDS, Q_HEADS


@dataclass
class TreeStep:
    """Nodes 0 .. tree_rows - 1 drafted before this step, then the step's M new tokens; node k sits
    at cache row prefix + k and position prefix + its depth, parents[k] is -1 (a child of the
    prefix's last token: depth 0) or an earlier node."""
    prefix: int
    tree_rows: int
    parents: list[int]

    @staticmethod
    def random(prefix: int, tree_rows: int, m: int, generator: torch.Generator | None = None) -> "TreeStep":
        """tree_rows = 0: the M tokens a chain; else every node's parent drawn from -1 and the nodes
        before it (a new token may hang under an earlier new one, as a grafted chain's do)."""
        if tree_rows == 0:
            return TreeStep(prefix, 0, list(range(-1, m - 1)))
        parents = [int(torch.randint(-1, k, (1,), generator=generator)) for k in range(tree_rows + m)]
        return TreeStep(prefix, tree_rows, parents)

    @property
    def m(self) -> int:
        return len(self.parents) - self.tree_rows

    def path(self, k: int) -> list[int]:
        """Node k's ancestors and itself, root first (so in position order)."""
        nodes = [k]
        while self.parents[nodes[-1]] >= 0:
            nodes.append(self.parents[nodes[-1]])
        return nodes[::-1]

    def positions(self) -> list[int]:
        return [self.prefix + len(self.path(self.tree_rows + t)) - 1 for t in range(self.m)]

    def rows(self) -> list[int]:
        return [self.prefix + self.tree_rows + t for t in range(self.m)]

    def block(self, width: int = 0) -> torch.Tensor:
        """The engine's staged block [M, 4 + V] of the new tokens (token ids 0); V = the longest
        path, or `width` where wider (a drafter's: its tree's rows + 1, drafter.staged_visible)."""
        visible = [[self.prefix + k for k in self.path(self.tree_rows + t)] for t in range(self.m)]
        block = torch.zeros(self.m, staged.VISIBLE + max(width, *map(len, visible)), dtype=torch.long)
        staged.write(block.numpy(), [0] * self.m, self.positions(), self.rows(), self.prefix, visible, scratch_row=0)
        return block

    def masks(self) -> torch.Tensor:
        """[M, MASK_WORDS] int32 (bits as uint32): bit j of token t's words set when it sees cache row
        prefix + j (its ancestors' and its own)."""
        if len(self.parents) > 32 * MASK_WORDS:
            raise ValueError(f"{len(self.parents)} tree rows: a mask holds {32 * MASK_WORDS}")
        words = np.zeros((self.m, MASK_WORDS), dtype=np.uint32)
        for t in range(self.m):
            for k in self.path(self.tree_rows + t):
                words[t, k // 32] |= np.uint32(1 << (k % 32))
        return torch.from_numpy(words.view(np.int32))


@dataclass
class Attention:
    """A draft step's tree (TreeStep) on the device: the RoPE tables [rows, 64] fp32, each layer's
    caches in the engine's layout [L, rows, KV, 64] (random, the new tokens' rows and any after them
    zero until appended), rows = the rows in use or a given span, rounded up to a chunk, and the
    staged block the kernel reads."""
    step: TreeStep
    cos: torch.Tensor
    sin: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    block: torch.Tensor

    @staticmethod
    def random(layers: int, prefix: int, m: int, device, tree_rows: int = 0, visible: int = 0,
               span: int = 0) -> "Attention":
        step = TreeStep.random(prefix, tree_rows, m, torch.Generator().manual_seed(prefix + 7 * tree_rows + m))
        rows = -(-max(prefix + tree_rows + m, span) // CHUNK) * CHUNK  # span: a decoder's graph bucket
        cos, sin = rope_tables(shard_args("llama-3.2-1b", 1), rows, device)  # the engine's tables
        k, v = (torch.randn(layers, rows, KV_HEADS, HEAD_DIM, device=device).to(torch.bfloat16) for _ in range(2))
        k[:, prefix + tree_rows:], v[:, prefix + tree_rows:] = 0, 0
        block = step.block(visible).to(device)
        return Attention(step, cos, sin, k, v, block)

    @property
    def prefix(self) -> int:
        return self.step.prefix

    @property
    def first_new(self) -> int:
        """The first cache row this step writes (chunks from its on are written in phase Q)."""
        return self.step.prefix + self.step.tree_rows

    @property
    def span(self) -> int:
        return self.first_new + self.step.m

    @property
    def chunks(self) -> int:
        return self.k.shape[1] // CHUNK

    def run(self, qkv, i: int, out, k=None, v=None, reference: bool = False) -> torch.Tensor:
        """The attention of layer i (ours: tree_attention with the append; reference: its torch twin
        on copies of the caches) from qkv [M, 3072] into out [M, H]."""
        k = self.k[i] if k is None else k
        v = self.v[i] if v is None else v
        run = tree_attention_reference if reference else tree_attention
        return run(qkv, self.block, self.cos, self.sin, k, v, self.span, Q_HEADS, KV_HEADS, out=out, append=True)
