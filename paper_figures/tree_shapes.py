"""The trees a run sends and what their verifications emit, round by round: one `swiftspec-bench
run` (its arguments after the label) with Drafter.subtree and Verifier.verify wrapped.

    PYTHONPATH=. python3 paper_figures/tree_shapes.py LABEL run --target ... [--acceptance replay:DIR] ...

Prints one line: rounds (the warm-up request's included), the sent tree's first-child path (the
draft's best path, root included) and deepest path in nodes, the emitted length (accepted + bonus,
which equals the accepted path's nodes, root included), and how often the emitted length passed the
first-child path (acceptance off the draft's best path). A real run against a replayed one says
whether replay's trees and lengths look like the real ones (NOTES v84).
"""
from __future__ import annotations

import sys

import swiftspec_core.decoders.drafter as drafter
import swiftspec_core.decoders.verifier as verifier
from swiftspec_bench.cli import app
from swiftspec_core.replay import best_path

rounds: list[list] = []  # [first-child path nodes, deepest path nodes, emitted or None]
_subtree, _verify = drafter.Drafter.subtree, verifier.Verifier.verify


def paths(parents: list[int]) -> tuple[int, int]:
    """(first-child path, deepest path) of a tree given by parent indices, in nodes, root included."""
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return len(best_path(parents)), max(depth) + 1


def subtree(self, bs: int):
    tokens, parents = _subtree(self, bs)
    rounds.append([*paths(parents), None])
    return tokens, parents


def verify(self, tokens: list[int], parents: list[int], defer_cache: bool = False):
    out = _verify(self, tokens, parents, defer_cache)
    if rounds and rounds[-1][2] is None:
        rounds[-1][2] = len(out[0])
    return out


def main() -> None:
    label, args = sys.argv[1], sys.argv[2:]
    drafter.Drafter.subtree, verifier.Verifier.verify = subtree, verify
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
    done = [r for r in rounds if r[2] is not None]
    n = len(done)
    if not n:
        print(f"{label}: no rounds")
        return
    mean = lambda i: sum(r[i] for r in done) / n  # noqa: E731
    print(f"{label}: {n} rounds, first-child path {mean(0):.2f} nodes, deepest {mean(1):.2f}, emitted {mean(2):.2f}; "
          f"emitted past the first-child path in {100 * sum(r[2] > r[0] for r in done) / n:.0f}% of rounds")


if __name__ == "__main__":
    main()
