"""Token tree selection and the KV caches' invariant: after any re-root they equal a fresh prefill."""
from __future__ import annotations

import random

import pytest
import torch

from engine_fixtures import VOCAB, engine, perturbed, prompt, target_state
from swiftspec_core.decoders.drafter import Drafter
from swiftspec_core.decoders.verifier import Verifier
from swiftspec_core.tree import TokenTree


def random_tree(seed: int, steps: int = 6, w: int = 3, k: int = 3) -> TokenTree:
    gen = torch.Generator().manual_seed(seed)
    tree = TokenTree(0)
    for _ in range(steps):
        leaves = tree.best_leaves(w)
        top = torch.log_softmax(3 * torch.randn(len(leaves), 50, generator=gen), -1).topk(k)
        tree.expand(leaves, top.values.tolist(), top.indices.tolist())
    return tree


def test_best_subtree_is_ancestor_closed_and_best():
    for seed in range(20):
        tree = random_tree(seed)
        for bs in (1, 2, 5, 8, 13):
            nodes = tree.best_subtree(bs)
            assert nodes[0] == 0 and len(nodes) == min(bs, len(tree))
            assert all(tree.parent[n] in nodes for n in nodes[1:])  # ancestor-closed
            outside = [tree.score[n] for n in range(len(tree)) if n not in nodes]
            assert not outside or min(tree.score[n] for n in nodes) >= max(outside)
            assert nodes == sorted(nodes)


def test_reroot_keeps_subtree_and_rebases():
    tree = random_tree(3, steps=8)
    best = max(range(1, len(tree)), key=lambda n: (tree.depth[n], tree.score[n]))
    path = tree.ancestors(best)[1:] + [best]  # below the root
    emitted = [tree.token[n] for n in path]
    new, r = tree.reroot(emitted)
    assert r.reused and new.token[0] == tree.token[best] and new.depth[0] == 0 and new.score[0] == 0.0
    assert r.verified_rows == len(path)  # the root and every path node above `best` were expanded
    sub = [n for n in range(len(tree)) if n == best or best in tree.ancestors(n)]
    assert len(new) == len(sub)
    assert sorted(new.token) == sorted(tree.token[n] for n in sub)
    assert all(new.parent[i] < i for i in range(1, len(new)))
    fresh, r2 = tree.reroot(emitted[:-1] + [VOCAB + 1])  # a bonus token the draft never proposed
    assert not r2.reused and len(fresh) == 1


def fresh_kv(model, tokens: list[int]):
    cache = model.new_cache(len(tokens) + 1)
    n = len(tokens)
    model(torch.tensor(tokens), torch.arange(n), torch.arange(n), torch.ones(n, n, dtype=torch.bool).tril(), cache)
    return cache.k[:, :n], cache.v[:, :n]


@pytest.mark.parametrize("defer", [False, True])
def test_caches_equal_fresh_prefill_after_every_reroot(defer):
    """defer: the split runtime's re-root, whose cache move waits for the next step (settle), and
    its verification, whose keep of the accepted rows waits until the verdict is sent."""
    base = target_state()
    target, draft = engine(base), engine(perturbed(base, 0.3))
    p = prompt()
    verifier, drafter = Verifier(target, 8), Drafter(draft, 4, 128)
    verified = p + [verifier.prefill(p)]
    drafter.prefill(p)
    rng = random.Random(0)
    for _ in range(2):  # SwiftSpec's draft grows from the prompt's last token during the prefill
        drafter.step(4, 4)
    reused = drafter.first(verified[-1])[1]
    for _ in range(12):
        subtree = drafter.propose(8, 4)
        length = verifier.cache.length
        emitted, _ = verifier.verify(*subtree, defer_cache=defer)
        if defer:
            assert verifier.cache.length == length and verifier.cache.deferred is not None  # nothing kept yet
            verifier.settle()
        for _ in range(rng.randrange(3)):  # the parallel draft keeps expanding meanwhile
            drafter.step(4, 4)
        length = drafter.cache.length
        reused += drafter.advance(emitted, defer_cache=defer)[1]
        if defer:
            assert drafter.cache.length == length and drafter.cache.deferred is not None  # nothing moved yet
            drafter.settle()
        verified += emitted
        # The target holds every verified token but the newest (the next root).
        assert verifier.cache.length == len(verified) - 1
        k, v = fresh_kv(target, verified[:-1])
        torch.testing.assert_close(verifier.cache.k[:, : len(verified) - 1], k)
        torch.testing.assert_close(verifier.cache.v[:, : len(verified) - 1], v)
        # The draft holds a prefix of them: all but the root and any pending tokens.
        n = drafter.cache.length
        assert n == len(verified) - 1 - len(drafter.pending)
        assert verified[n:-1] == drafter.pending and drafter.tree.token[0] == verified[-1]
        k, v = fresh_kv(draft, verified[:n])
        torch.testing.assert_close(drafter.cache.k[:, :n], k)
        torch.testing.assert_close(drafter.cache.v[:, :n], v)
        # Each surviving expanded node's row holds what a fresh forward of its path would.
        tree = drafter.tree
        for node in range(len(tree)):
            if tree.expanded(node):
                path = verified + [tree.token[a] for a in tree.ancestors(node)[1:]] + [tree.token[node]]
                path = path if node else verified
                k, _ = fresh_kv(draft, path)
                torch.testing.assert_close(drafter.cache.k[:, n + tree.row[node]], k[:, -1])
    assert reused > 0  # the evolving tree was reused, not only rebuilt


def test_draft_equals_target_accepts_to_a_leaf():
    """With draft = target, the accepted path always ends at a leaf of the verified subtree."""
    m = engine(target_state(confidence=20.0))
    p = prompt(seed=4)
    verifier, drafter = Verifier(m, 8), Drafter(m, 8, 128)
    drafter.prefill(p)
    drafter.first(verifier.prefill(p))
    for _ in range(8):
        drafter.propose(8, 8)  # grown to 8 nodes; the subtree is picked after 3 more steps
        for _ in range(3):
            drafter.step(8, 8)
        tokens, parents = drafter.subtree(8)
        emitted, path = verifier.verify(tokens, parents)
        assert path[-1] not in parents  # no child of the last accepted node was sent
        drafter.advance(emitted)


def test_cache_truncate_and_keep_bounds():
    cache = engine(target_state()).new_cache(16)
    cache.length = 10
    cache.truncate(4)
    assert cache.length == 4
    with pytest.raises(ValueError):
        cache.truncate(5)  # past the verified rows
    with pytest.raises(ValueError):
        cache.keep([3, 6], verified=1)  # row 3 is verified already: not a tree row
    cache.keep([6, 9], verified=2)
    assert cache.length == 6


def test_the_first_token_reuses_the_tree_grown_during_the_prefill():
    """SwiftSpec's draft grows from the prompt's last token while the target prefills; with draft =
    target its best child is the target's first token, so the first re-root keeps that subtree,
    its KV rows, and the prompt's last token joins the prefix."""
    m = engine(target_state(confidence=20.0))
    p = prompt(seed=4)
    verifier, drafter = Verifier(m, 8), Drafter(m, 8, 128)
    drafter.prefill(p)
    assert drafter.cache.length == len(p) - 1 and drafter.tree.token[0] == p[-1]
    for _ in range(3):
        drafter.step(8, 8)
    first = verifier.prefill(p)
    token, reused = drafter.first(first)
    assert (token, reused) == (first, True)
    assert drafter.cache.length == len(p) and drafter.pending == []
    assert drafter.tree.token[0] == first and drafter.tree.expanded(0) and len(drafter.tree) > 8


def test_best_leaves_are_the_best_unexpanded_nodes_after_expansions_and_reroots():
    """The frontier heap gives what a scan of every node gives (ties: shallower, then older)."""
    rng = random.Random(3)
    tree = TokenTree(1)
    for _ in range(40):
        deep = rng.choice([None, 2, 4])
        brute = sorted((i for i in range(len(tree)) if not tree.expanded(i) and (deep is None or tree.depth[i] <= deep)),
                       key=lambda i: (-tree.score[i], tree.depth[i], i))[:4]
        leaves = tree.best_leaves(4, deep)
        assert leaves == brute
        if rng.random() < 0.2 and len(tree) > 1:
            child = rng.choice(list(tree.children[0].values()))
            tree, _ = tree.reroot([tree.token[child]])
            continue
        toks = [[rng.randrange(50) for _ in range(3)] for _ in leaves]
        toks = [list(dict.fromkeys(t)) for t in toks]  # distinct children
        tree.expand(leaves, [sorted((-rng.choice([0.5, 1.0, 2.0]) for _ in t), reverse=True) for t in toks], toks)  # best first, ties too
        if leaves and rng.random() < 0.3:  # as a graft does: a leaf's best child expanded before it is picked
            child = len(tree) - len(toks[-1])
            tree.expand([child], [[-1.0, -1.5]], [[7, 8]])


def test_subtree_closed_is_what_a_scan_of_the_best_subtree_says():
    """subtree_closed (the frontier's best against the expanded nodes' keys) answers as checking
    every node of best_subtree, after expansions (tied scores included) and reroots."""
    rng = random.Random(5)
    tree = TokenTree(1)
    for _ in range(60):
        for bs in (1, 2, 5, 12):
            assert tree.subtree_closed(bs) == all(tree.expanded(i) for i in tree.best_subtree(bs))
        if rng.random() < 0.15 and len(tree) > 1 and tree.children[0]:
            child = rng.choice(list(tree.children[0].values()))
            tree, _ = tree.reroot([tree.token[child]])
            continue
        leaves = tree.best_leaves(rng.choice([1, 3]), rng.choice([None, 3]))
        if not leaves:
            break
        toks = [list(dict.fromkeys(rng.randrange(50) for _ in range(3))) for _ in leaves]
        tree.expand(leaves, [sorted((-rng.choice([0.5, 1.0, 2.0]) for _ in t), reverse=True) for t in toks], toks)  # best first, ties too
        if rng.random() < 0.3:  # as a graft does: a leaf's best child expanded before it is picked
            tree.expand([len(tree) - len(toks[-1])], [[-1.0, -1.5]], [[7, 8]])


def test_a_verification_keeps_a_deferred_keep_first():
    """A verifier whose keep was deferred and never settled settles it before its next forward:
    the same tokens and the same cache as one that kept at once."""
    base = target_state()
    target, draft = engine(base), engine(perturbed(base, 0.3))
    p = prompt()
    runs = []
    for defer in (False, True):
        verifier, drafter = Verifier(target, 8), Drafter(draft, 4, 128)
        first = verifier.prefill(p)
        drafter.prefill(p)
        drafter.first(first)
        emitted_all = []
        for _ in range(4):
            emitted, _ = verifier.verify(*drafter.propose(8, 4), defer_cache=defer)
            drafter.advance(emitted)
            emitted_all += emitted
        verifier.settle()
        n = verifier.cache.length
        runs.append((emitted_all, n, verifier.cache.k[:, :n].clone()))
    (e0, n0, k0), (e1, n1, k1) = runs
    assert e0 == e1 and n0 == n1
    torch.testing.assert_close(k0, k1, rtol=0, atol=0)


def test_an_expansion_without_children_keeps_the_frontier_aligned():
    """A node expanded with no children adds no node: the later nodes still come up in order."""
    tree = TokenTree(1)
    tree.expand([0], [[-1.0, -2.0]], [[5, 6]])
    tree.expand([1], [[]], [[]])
    tree.expand([2], [[-0.5, -0.7]], [[9, 8]])
    assert len(tree.in_frontier) == len(tree) == 5
    assert tree.best_leaves(3) == [3, 4] and not tree.subtree_closed(4) and tree.subtree_closed(3)
