"""The trees a run sends and what their verifications emit, round by round: one `swiftspec-bench
run` (its arguments after the label) with Drafter.subtree, Verifier.verify and Replay.accept wrapped.

    PYTHONPATH=. python3 paper_figures/tree_shapes.py LABEL run --target ... [--acceptance replay:DIR] ...

Prints one line: rounds (the warm-up request's included), the sent tree's best (first-child) path
and deepest path in nodes (root included), the emitted length (accepted + bonus: the accepted
path's nodes, root included), how often it passed the best path (acceptance off the draft's best
path); and under a replay of drawn lengths (recordings without sent_paths) the mean drawn length
and how often the best path cut it. A real run beside a replayed one says whether replay's trees
and lengths look like the real ones (NOTES v81, v84, v85).
"""
from __future__ import annotations

import sys

import swiftspec_core.decoders.drafter as drafter
import swiftspec_core.decoders.verifier as verifier
import swiftspec_core.replay as replay
from swiftspec_bench.cli import app

rounds: list[dict] = []  # per sent tree: path, deepest, and once verified emitted (and drawn, replayed)
_subtree, _verify, _accept = drafter.Drafter.subtree, verifier.Verifier.verify, replay.Replay.accept


def subtree(self, bs: int):
    tokens, parents = _subtree(self, bs)
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    rounds.append(dict(path=len(replay.best_path(parents)), deepest=max(depth) + 1))
    return tokens, parents


def verify(self, tokens: list[int], parents: list[int], defer_cache: bool = False):
    out = _verify(self, tokens, parents, defer_cache)
    if rounds and "emitted" not in rounds[-1]:
        rounds[-1]["emitted"] = len(out[0])
    return out


def accept(self, parents: list[int]) -> list[int]:
    if not self.profile.accept_rates:  # a drawn length: the draw accept() is about to make
        state = self.rng.getstate()
        drawn = self.rng.choice(self.profile.emitted)
        self.rng.setstate(state)
        if rounds and "drawn" not in rounds[-1]:
            rounds[-1]["drawn"] = drawn
    return _accept(self, parents)


def main() -> None:
    label, args = sys.argv[1], sys.argv[2:]
    drafter.Drafter.subtree, verifier.Verifier.verify, replay.Replay.accept = subtree, verify, accept
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
    done = [r for r in rounds if "emitted" in r]
    n = len(done)
    if not n:
        print(f"{label}: no rounds")
        return
    mean = lambda key, rows=done: sum(r[key] for r in rows) / len(rows)  # noqa: E731
    line = (f"{label}: {n} rounds, best path {mean('path'):.2f} nodes, deepest {mean('deepest'):.2f}, emitted "
            f"{mean('emitted'):.2f}; emitted past the best path in "
            f"{100 * sum(r['emitted'] > r['path'] for r in done) / n:.0f}% of rounds")
    drawn = [r for r in done if "drawn" in r]
    if drawn:
        line += (f"; drawn {mean('drawn', drawn):.2f}, cut by the best path in "
                 f"{100 * sum(r['drawn'] > r['emitted'] for r in drawn) / len(drawn):.0f}% of rounds")
    print(line)


if __name__ == "__main__":
    main()
