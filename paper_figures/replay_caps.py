"""How often replayed acceptance is cut by the replayed tree: one `swiftspec-bench run` (its
arguments after the label) with swiftspec_core.replay.Replay.accept wrapped, so that each round's
drawn length (from the recording), emitted length (taken along the sent tree's best path) and the
best path's length are counted:

    PYTHONPATH=. python3 paper_figures/replay_caps.py LABEL run --acceptance replay:DIR ... [--out DIR]

Prints one line: rounds, mean drawn, mean emitted, the share of rounds the path cut, the best
path's mean length (root included) and the sent tree's mean size. A replay is faithful where
emitted equals drawn; the recording's own rounds emitted what was drawn by definition.
"""
from __future__ import annotations

import sys

import swiftspec_core.replay as replay
from swiftspec_bench.cli import app

rounds: list[tuple[int, int, int, int]] = []  # (drawn, emitted, best path's nodes, tree nodes)
_accept = replay.Replay.accept


def counted_accept(self, parents: list[int]) -> list[int]:
    state = self.rng.getstate()
    drawn = self.rng.choice(self.profile.emitted)  # the draw accept() is about to make
    self.rng.setstate(state)
    path = _accept(self, parents)
    if self.profile.accept_rates:  # accepted node by node: no drawn length to cut
        drawn = len(path)
    rounds.append((drawn, len(path), len(replay.best_path(parents)), len(parents)))
    return path


def main() -> None:
    label, args = sys.argv[1], sys.argv[2:]
    replay.Replay.accept = counted_accept
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
    n = len(rounds)
    if not n:
        print(f"{label}: no replayed rounds")
        return
    mean = lambda i: sum(r[i] for r in rounds) / n  # noqa: E731
    print(f"{label}: {n} rounds, drawn {mean(0):.2f}, emitted {mean(1):.2f} a round, cut in "
          f"{100 * sum(r[0] > r[1] for r in rounds) / n:.0f}% of rounds; best path {mean(2):.2f} nodes of "
          f"{mean(3):.1f}")


if __name__ == "__main__":
    main()
