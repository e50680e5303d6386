"""Tree attention and the cache append (cuda/attention.cu, swiftspec_core/kernels/attention.py).

CPU: the torch references against float64 computations written independently (the tree mask
built from graphs.py's staged block as PaddedForward builds it). GPU: the kernels against the
references with the outputs poisoned first, bitwise row invariance, and CUDA graph replays."""
from __future__ import annotations

import random

import pytest
import torch

from swiftspec_core.staged import POSITION, PREFIX, ROW, VISIBLE, write
from swiftspec_core.kernels import attention as attn
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.rope import apply_rope, rope_tables

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
# bf16 output: one rounding (half an ulp, 2^-9 relative) plus fp32 reduction-order differences.
ATOL, RTOL = 1e-2, 1e-2


def tables(hd: int, max_len: int, device="cpu"):
    args = ModelArgs(dim=hd, n_layers=1, n_heads=1, n_kv_heads=1, head_dim=hd, ffn_dim=hd, vocab_size=8,
                     norm_eps=1e-5, rope_theta=500000.0, rope_scaling=None, qkv_bias=False,
                     tie_embeddings=False, max_position=max_len)
    return rope_tables(args, max_len, device=device)


def staged_tree(prefix: int, parents: list[int], rows: list[int], V: int, pad_to: int, scratch: int,
                device="cpu") -> torch.Tensor:
    """graphs.py's staged block for a tree after `prefix` verified rows: token i (parent
    parents[i] < i, or -1 for a root) at cache row rows[i] sees its ancestors' rows and its own in
    position order; unused visible slots repeat its own row; padding tokens to `pad_to`."""
    block = torch.zeros(pad_to, VISIBLE + V, dtype=torch.long)
    visible = []
    for i in range(len(parents)):
        chain = [i]
        while parents[chain[-1]] >= 0:
            chain.append(parents[chain[-1]])
        visible.append([int(rows[k]) for k in reversed(chain)])
    positions = [prefix + len(seen) - 1 for seen in visible]
    write(block.numpy(), [0] * len(parents), positions, [seen[-1] for seen in visible], prefix, visible, scratch)
    return block.to(device)


def random_tree(T: int, rng: random.Random) -> list[int]:
    return [-1] + [rng.randrange(-1, i) for i in range(1, T)]


def naive_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV):
    """float64, per query and head, over the cache rows graphs.py's mask lets it see."""
    T, hd, G = qkv.shape[0], k_cache.shape[-1], H // KV
    cols = torch.arange(span)
    mask = cols[None, :] < block[:, PREFIX, None]  # as PaddedForward._run
    mask.scatter_(1, block[:, VISIBLE:], True)
    out = torch.zeros(T, H, hd, dtype=torch.float64)
    half = hd // 2
    for t in range(T):
        p = int(block[t, POSITION])
        c, s = cos[p].double(), sin[p].double()
        seen = mask[t].nonzero()[:, 0]
        for h in range(H):
            x = qkv[t, h * hd:(h + 1) * hd].double()
            q = torch.cat([x[:half] * c[:half] - x[half:] * s[:half], x[half:] * c[half:] + x[:half] * s[half:]])
            k, v = k_cache[seen, h // G].double(), v_cache[seen, h // G].double()
            out[t, h] = torch.softmax(k @ q / hd ** 0.5, dim=0) @ v
    return out.reshape(T, H * hd)


def report(name: str, got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float) -> bool:
    """Print the max error and the first mismatch (a GPU log must be enough to fix a failure)."""
    got, want = got.float().cpu(), want.float().cpu()
    err = (got - want).abs().nan_to_num(float("inf"))
    bad = (err > atol + rtol * want.abs()).flatten().nonzero()
    first = f", first mismatch at flat index {int(bad[0])}: {got.flatten()[bad[0]].item()} vs " \
            f"{want.flatten()[bad[0]].item()}" if len(bad) else ""
    print(f"{name}: max abs error {err.max().item():.3g}, {len(bad)} of {err.numel()} outside tolerance{first}")
    return not len(bad)


# --- CPU: the references ---------------------------------------------------------------------------

@pytest.mark.parametrize("hd", [64, 128])
def test_append_kv_reference_writes_rope_in_fp32(hd):
    torch.manual_seed(0)
    H, KV, T, R = 4, 2, 5, 40
    cos, sin = tables(hd, 64)
    qkv = torch.randn(T, (H + 2 * KV) * hd).to(torch.bfloat16)
    positions, rows = torch.tensor([3, 9, 17, 17, 60]), torch.tensor([7, 2, 30, 31, 39])
    k_cache = torch.full((R, KV, hd), 5.0, dtype=torch.bfloat16)
    v_cache = k_cache.clone()
    attn.append_kv_reference(qkv, positions, rows, cos, sin, k_cache, v_cache, H, KV)
    k = qkv[:, H * hd:(H + KV) * hd].view(T, KV, hd)
    v = qkv[:, (H + KV) * hd:].view(T, KV, hd)
    want = apply_rope(k.float(), cos[positions], sin[positions]).to(torch.bfloat16)  # rope.py in fp32
    assert torch.equal(k_cache[rows], want)
    assert torch.equal(v_cache[rows], v)
    untouched = torch.ones(R, dtype=torch.bool)
    untouched[rows] = False
    assert (k_cache[untouched] == 5).all() and (v_cache[untouched] == 5).all()
    # and the rotation itself, pair by pair in float64: within the one bf16 rounding
    half, x = hd // 2, k.double()
    c, s = cos[positions].double()[:, None], sin[positions].double()[:, None]
    naive = torch.cat([x[..., :half] * c[..., :half] - x[..., half:] * s[..., :half],
                       x[..., half:] * c[..., half:] + x[..., :half] * s[..., half:]], dim=-1)
    assert torch.allclose(k_cache[rows].double(), naive, atol=1e-6, rtol=2 ** -8)


def test_append_kv_reference_skips_rows_outside_the_cache():
    """As the kernel (and tree_attention_reference's append, which calls it): a row outside [0, R)
    writes nothing, and the others are written as ever."""
    torch.manual_seed(1)
    H, KV, hd, R = 2, 1, 64, 8
    cos, sin = tables(hd, 16)
    qkv = torch.randn(3, (H + 2 * KV) * hd)
    k_cache, v_cache = torch.zeros(R, KV, hd), torch.zeros(R, KV, hd)
    attn.append_kv_reference(qkv, torch.tensor([1, 2, 3]), torch.tensor([-1, 5, R]), cos, sin, k_cache, v_cache,
                             H, KV)
    written = (k_cache.abs().sum((1, 2)) > 0).nonzero().flatten().tolist()
    assert written == [5] and torch.equal(v_cache[5, 0], qkv[1, (H + KV) * hd:])


@pytest.mark.parametrize("H,KV,hd", [(6, 2, 64), (8, 8, 128), (7, 1, 64)])
def test_tree_attention_reference_against_float64_tree_mask(H, KV, hd):
    """Tree rows scattered in the cache, GQA, RoPE on q at each position, padding tokens."""
    torch.manual_seed(1)
    rng = random.Random(1)
    prefix, T, pad_to, R = 37, 9, 12, 90
    span = R - 1
    rows = rng.sample(range(prefix, span), T)  # tree rows in no particular order
    block = staged_tree(prefix, random_tree(T, rng), rows, V=T, pad_to=pad_to, scratch=R - 1)
    cos, sin = tables(hd, 128)
    qkv = torch.randn(pad_to, (H + 2 * KV) * hd).to(torch.bfloat16)
    k_cache = torch.randn(R, KV, hd).to(torch.bfloat16)
    v_cache = torch.randn(R, KV, hd).to(torch.bfloat16)
    got = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    want = naive_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    assert got.dtype == torch.bfloat16 and got.shape == (pad_to, H * hd)
    assert report("reference vs float64", got, want, ATOL, RTOL)
    out = torch.full_like(got, float("nan"))
    assert attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out=out) is out
    assert torch.equal(out, got)


def test_kernel_entries_refuse_bad_layouts_before_launching():
    cos, sin = tables(96, 16)
    qkv = torch.zeros(2, 6 * 96, dtype=torch.bfloat16)
    cache = torch.zeros(8, 1, 96, dtype=torch.bfloat16)
    block = torch.zeros(2, VISIBLE + 1, dtype=torch.long)
    with pytest.raises(ValueError, match="head_dim 96"):
        attn.tree_attention(qkv, block, cos, sin, cache, cache, 8, 4, 1)
    cos, sin = tables(64, 16)
    qkv, cache = torch.zeros(2, 6 * 64, dtype=torch.bfloat16), torch.zeros(8, 1, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="span 9"):
        attn.tree_attention(qkv, block, cos, sin, cache, cache, 9, 4, 1)
    with pytest.raises(ValueError, match="qkv"):
        attn.tree_attention(qkv.float(), block, cos, sin, cache, cache, 8, 4, 1)
    with pytest.raises(ValueError, match="positions, rows"):
        attn.append_kv(qkv, torch.zeros(2, dtype=torch.int32), torch.zeros(2, dtype=torch.long), cos, sin,
                       cache, cache, 4, 1)


@pytest.mark.parametrize("T,blocks_per_group,resident", [(1, 128, 264), (8, 128, 264), (16, 128, 264),
                                                         (8, 512, 264), (200, 16, 264), (16, 16, 10**6)])
def test_query_groups_fill_one_wave_and_cover_every_query(T, blocks_per_group, resident):
    TQ, groups = attn.query_groups(T, blocks_per_group, resident)
    assert 1 <= TQ <= attn.TQMAX and (groups - 1) * TQ < T <= groups * TQ  # every query, no empty group
    # one wave when it fits (one group at least; TQMAX may force more groups than fit)
    assert groups * blocks_per_group <= max(resident, blocks_per_group) or TQ == attn.TQMAX
    # no fewer groups than fit: no block does more queries than a one-wave split needs
    assert TQ == min(attn.TQMAX, -(-T // max(1, min(T, resident // blocks_per_group))))


# --- GPU: the kernels ------------------------------------------------------------------------------

SHAPES = [(32, 8, 128), (64, 8, 128), (24, 8, 128), (14, 2, 64), (12, 2, 64)]  # 8B, 70B, 3B, Qwen 0.5B/1.5B


def tree_case(H, KV, hd, T, context, seed, pad=0, scattered=True):
    """Random caches and a random tree of T tokens after `context` prefix rows, at scattered rows
    (or the T rows after the prefix, as a verification's)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    span = 512
    while span < context + 2 * T:
        span *= 2
    R = span + 1
    rows = rng.sample(range(context, span), T) if scattered else list(range(context, context + T))
    block = staged_tree(context, random_tree(T, rng), rows, V=T, pad_to=T + pad, scratch=R - 1, device="cuda")
    cos, sin = tables(hd, span + 16, device="cuda")
    qkv = torch.randn(T + pad, (H + 2 * KV) * hd, device="cuda").to(torch.bfloat16)
    k_cache = torch.randn(R, KV, hd, device="cuda").to(torch.bfloat16)
    v_cache = torch.randn(R, KV, hd, device="cuda").to(torch.bfloat16)
    return qkv, block, cos, sin, k_cache, v_cache, span


@gpu
@pytest.mark.parametrize("H,KV,hd", SHAPES)
@pytest.mark.parametrize("T,context", [(1, 500), (8, 1000), (16, 4000), (5, 130)])
def test_kernels_match_references(H, KV, hd, T, context):
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, context, seed=T + context, pad=2)
    positions, rows = block[:, POSITION].contiguous(), block[:, ROW].contiguous()
    k_ref, v_ref = k_cache.clone(), v_cache.clone()
    attn.append_kv_reference(qkv, positions, rows, cos, sin, k_ref, v_ref, H, KV)
    attn.append_kv(qkv, positions, rows, cos, sin, k_cache, v_cache, H, KV)
    # Same fp32 math: bitwise. Not the scratch row (the last), which both padding tokens write.
    assert report(f"append_kv k H{H} KV{KV} hd{hd} T{T}", k_cache[:-1], k_ref[:-1], 0, 0)
    assert report(f"append_kv v H{H} KV{KV} hd{hd} T{T}", v_cache[:-1], v_ref[:-1], 0, 0)
    want = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    out = torch.full_like(want, float("nan"))
    got = attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out=out)
    torch.cuda.synchronize()
    assert got is out
    assert report(f"tree_attention H{H} KV{KV} hd{hd} T{T} context {context} span {span}", got, want, ATOL, RTOL)


@gpu
@pytest.mark.parametrize("H,KV,hd", [(32, 8, 128), (14, 2, 64)])
@pytest.mark.parametrize("T,context,scattered", [(8, 1000, False), (8, 1000, True), (8, 1020, False),
                                                 (16, 4000, True), (5, 130, False), (40, 700, True)])
def test_append_inside_equals_append_then_attention(H, KV, hd, T, context, scattered):
    """tree_attention(append=True) against append_kv then tree_attention: the same caches and the
    same output, bitwise; rows after the prefix (context 1020: the tree across a chunk boundary)
    or scattered (new rows outside a query's chunks, read from shared memory); two padding tokens
    on the scratch row; T = 40 > APPEND_MAX appends with append_kv first."""
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, context, seed=T + context, pad=2,
                                                             scattered=scattered)
    k2, v2 = k_cache.clone(), v_cache.clone()
    attn.append_kv(qkv, block[:, POSITION].contiguous(), block[:, ROW].contiguous(), cos, sin, k_cache, v_cache,
                   H, KV)
    want = attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    out = torch.full_like(want, float("nan"))
    got = attn.tree_attention(qkv, block, cos, sin, k2, v2, span, H, KV, out=out, append=True)
    torch.cuda.synchronize()
    name = f"H{H} KV{KV} hd{hd} T{T} context {context} scattered {scattered}"
    # Not the scratch row (the last), which both padding tokens write.
    assert report(f"append inside: k {name}", k2[:-1], k_cache[:-1], 0, 0)
    assert report(f"append inside: v {name}", v2[:-1], v_cache[:-1], 0, 0)
    assert report(f"append inside: output {name}", got, want, 0, 0)
    ref = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    assert report(f"append inside vs the reference {name}", got, ref, ATOL, RTOL)


@gpu
@pytest.mark.parametrize("H,KV,hd", [(32, 8, 128), (14, 2, 64)])
@pytest.mark.parametrize("p,depth", [(450, 3), (130, 4), (63, 1), (1000, 6)])
def test_query_bits_do_not_depend_on_the_forward_around_it(H, KV, hd, p, depth):
    """The same query alone (ar-style: prefix p, visible [p], span 1024 or less) and inside a
    T = 8 forward at index 5, its `depth` ancestors and itself at other cache rows (the same keys
    and values copied there), other queries beside it, and a larger span: bitwise equal."""
    torch.manual_seed(p)
    width = (H + 2 * KV) * hd
    span1 = 512 if p < 500 else 1024
    cos, sin = tables(hd, 4096, device="cuda")
    k1 = torch.randn(span1 + 1, KV, hd, device="cuda").to(torch.bfloat16)
    v1 = torch.randn(span1 + 1, KV, hd, device="cuda").to(torch.bfloat16)
    q = torch.randn(1, width, device="cuda").to(torch.bfloat16)
    alone = torch.tensor([[0, p, p, p, p]], device="cuda")
    out1 = torch.full((1, H * hd), float("nan"), dtype=torch.bfloat16, device="cuda")
    attn.tree_attention(q, alone, cos, sin, k1, v1, span1, H, KV, out=out1)

    span2, T, t, n = 4096, 8, 5, p - depth
    k2 = torch.randn(span2 + 1, KV, hd, device="cuda").to(torch.bfloat16)
    v2 = torch.randn(span2 + 1, KV, hd, device="cuda").to(torch.bfloat16)
    k2[:n], v2[:n] = k1[:n], v1[:n]
    tree_rows = torch.randperm(span2 - n - 16, device="cuda")[:depth + 1] + n + 16  # scattered, ascending not
    k2[tree_rows], v2[tree_rows] = k1[n:p + 1], v1[n:p + 1]
    qkv = torch.randn(T, width, device="cuda").to(torch.bfloat16)
    qkv[t] = q[0]
    block = torch.zeros(T, VISIBLE + 8, dtype=torch.long, device="cuda")
    for i in range(T):  # the others: random positions in the same prefix, their own visible rows
        pi = int(torch.randint(n, n + 8, ()))
        block[i, :VISIBLE] = torch.tensor([0, pi, n + i, n])
        block[i, VISIBLE:] = torch.randint(0, span2, (8,))
    block[t, :VISIBLE] = torch.tensor([0, p, int(tree_rows[-1]), n])
    block[t, VISIBLE:VISIBLE + depth + 1] = tree_rows
    block[t, VISIBLE + depth + 1:] = tree_rows[-1]
    out2 = torch.full((T, H * hd), float("nan"), dtype=torch.bfloat16, device="cuda")
    attn.tree_attention(qkv, block, cos, sin, k2, v2, span2, H, KV, out=out2)
    torch.cuda.synchronize()
    assert report(f"alone vs in a tree (p {p}, depth {depth})", out2[t:t + 1], out1, 0, 0)
    assert not out2.isnan().any()


@gpu
@pytest.mark.parametrize("H,KV,hd", [(32, 8, 128), (14, 2, 64)])
def test_query_split_does_not_change_bits(H, KV, hd, monkeypatch):
    """The same call with its queries split into one group of TQMAX queries (many rows a warp,
    their inputs loaded a row ahead) and into groups of one query: bitwise equal, and as the
    reference."""
    T = attn.TQMAX
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, 700, seed=7)
    want = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    outs = []
    for sms, split in ((1, (T, 1)), (10**6, (1, T))):  # SM counts that force each split
        monkeypatch.setattr(attn, "_sm_count", lambda device, sms=sms: sms)
        assert attn.query_groups(T, -(-span // attn.CHUNK) * KV, attn.MIN_BLOCKS * sms) == split
        out = torch.full_like(want, float("nan"))
        attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out=out)
        torch.cuda.synchronize()
        assert report(f"split {split} H{H} KV{KV} hd{hd}", out, want, ATOL, RTOL)
        outs.append(out)
    assert report(f"one group vs one query a group H{H} KV{KV} hd{hd}", outs[0], outs[1], 0, 0)


def test_two_blocks_merge_only_merges_of_two_rounds_in_one_wave():
    assert attn.mergers(32, 128, 16, 256, 264) == 2  # the 70B's M = 8 (TQ 4 x G 8): 512 items
    assert attn.mergers(24, 128, 16, 256, 264) == 2  # the 8B's M = 12 (TQ 6 x G 4): 384
    assert attn.mergers(16, 128, 16, 256, 264) == 1  # the 8B's M = 8 (TQ 4 x G 4): 256, one round (v65)
    assert attn.mergers(32, 64, 16, 256, 264) == 1  # the 1B's M = 16 (TQ 8 x G 4, hd 64): 256
    assert attn.mergers(64, 128, 1, 8, 264) == 1  # one chunk: no second block
    assert attn.mergers(64, 128, 63, 504, 264) == 1  # two waves: the first merger would wait on a later one


def launch_merged(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out, parts, by_position):
    kernel, grid, args, partials = attn.tree_attention_launch(qkv, block.contiguous(), cos, sin, k_cache, v_cache,
                                                              span, H, KV, out, merge_parts=parts,
                                                              by_position=by_position)
    attn.launch("attention", kernel, grid, (attn.THREADS,), args, attn.shared_bytes(k_cache.shape[-1]))
    torch.cuda.synchronize()
    del partials


@gpu
@pytest.mark.parametrize("H,KV,hd,T,context,pad", [(64, 8, 128, 8, 1000, 0), (32, 8, 128, 16, 1000, 0),
                                                   (14, 2, 64, 16, 700, 0), (64, 8, 128, 3, 130, 0),
                                                   (32, 8, 128, 8, 1020, 2), (32, 8, 64, 9, 60, 3)])
def test_mergers_do_not_change_bits(H, KV, hd, T, context, pad):
    """Who merges does not change a bit: the last block to draw a ticket, the last two, or the last
    chunk's block (by position), as the reference, again and again (the counter reset by every
    protocol; queries in the last chunk, across a chunk boundary, padding queries at position 0)."""
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, context, seed=T + context, pad=pad)
    want = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    first = None
    for parts, by_position in ((1, False), (1, True), (2, False), (2, False), (1, True), (1, False), (1, True)):
        out = torch.full_like(want, float("nan"))
        launch_merged(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out, parts, by_position)
        name = f"{parts} merging{' by position' if by_position else ''} H{H} KV{KV} hd{hd} T{T} context {context}"
        assert report(name, out, want, ATOL, RTOL)
        first = out if first is None else first
        assert report(f"{name}, against the first", out, first, 0, 0)


@gpu
@pytest.mark.parametrize("hd", [64, 128])
def test_a_merger_by_position_waits_for_later_blocks(hd):
    """The last chunk's block has no query (a chain at positions 993..1024 in a span of 2048) while
    chunks 15 and 16 hold them all, so it waits for their counts before it merges."""
    H, KV, T, context = 32, 8, 32, 993
    qkv, _, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, context, seed=5)
    rows = list(range(context, context + T))
    block = staged_tree(context, [i - 1 for i in range(T)], rows, V=T, pad_to=T, scratch=span, device="cuda")
    want = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
    ticket = torch.full_like(want, float("nan"))
    launch_merged(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, ticket, 1, False)
    for _ in range(3):
        out = torch.full_like(want, float("nan"))
        launch_merged(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out, 1, True)
        assert report("by position, waiting", out, want, ATOL, RTOL)
        assert report("by position against the ticket", out, ticket, 0, 0)


@pytest.mark.parametrize("sms,parts", [(1, 1), (1000, 2)])
def test_merging_by_position_needs_one_merger_in_one_wave(monkeypatch, sms, parts):
    """Forced by position beyond one wave (its merger would wait on blocks that cannot become
    resident) or with two mergers (their counter's reset needs the ticket): refused before a launch."""
    monkeypatch.setattr(attn, "_sm_count", lambda device: sms)  # 1: 2 resident blocks for a grid of 16 x 2
    H, KV, hd, T, span = 4, 2, 64, 2, 1024
    qkv = torch.zeros(T, (H + 2 * KV) * hd, dtype=torch.bfloat16)
    block = torch.zeros(T, VISIBLE + 1, dtype=torch.long)
    cache = torch.zeros(span, KV, hd, dtype=torch.bfloat16)
    cos = sin = torch.zeros(span, hd)
    with pytest.raises(ValueError, match="cannot run"):
        attn.tree_attention_launch(qkv, block, cos, sin, cache, cache, span, H, KV, torch.empty(T, H * hd),
                                   merge_parts=parts, by_position=True)


@gpu
@pytest.mark.parametrize("H,KV,hd,T", [(32, 8, 128, 8), (64, 8, 128, 8)])  # one merging block; two (the rule)
def test_graph_replays_with_changed_blocks(H, KV, hd, T):
    """Captured once, replayed with new trees and queries: the combine counters reset."""
    qkv, block, cos, sin, k_cache, v_cache, span = tree_case(H, KV, hd, T, 900, seed=3)
    out = torch.empty(T, H * hd, dtype=torch.bfloat16, device="cuda")
    run = lambda: attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV, out=out)  # noqa: E731
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run()  # compiles outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    for replay in range(4):
        q2, b2, *_ = tree_case(H, KV, hd, T, 700 + 97 * replay, seed=10 + replay)
        qkv.copy_(q2)
        block.copy_(b2)
        out.fill_(float("nan"))
        graph.replay()
        want = attn.tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
        eager = attn.tree_attention(qkv, block, cos, sin, k_cache, v_cache, span, H, KV)
        torch.cuda.synchronize()
        assert report(f"graph replay {replay}", out, want, ATOL, RTOL)
        assert report(f"graph replay {replay} vs eager", out, eager, 0, 0)
