"""Replayed acceptance, for random-weight runs at scales whose real weights are not at hand.

Random weights accept almost nothing, so a `--weights random` run replays what a real-weight run
of the same system and tree settings measured (README, `--acceptance`): each verification still runs its
full forward over the real tree, and emits along the draft's best path (each node's first child)
either node by node at the recorded rate for each position of that path (recordings that hold each
sent tree's best path: a real draft's acceptance runs down its tree, so the tree decides how far
it can go), or, from older recordings, as many nodes as a length drawn from the recorded
per-round distribution. Two more recorded quantities keep the tree's shape and reuse honest:
- the draft's scores use the recorded mean top-w child log-probs (random weights would give a
  flat, bushy tree), ranked as the random draft ranks its own children;
- whether the bonus token was a node of the draft's tree (then the evolving tree keeps the
  subtree under it), drawn from the recorded per-round flags; SwiftSpec's first token (the draft
  grew candidates for it during the prefill) is drawn the same way;
- with grafting, whether a draft step's lookup fires and how many chain nodes it keeps, drawn
  from the recorded grafts (random text never repeats, so the lookup itself would never fire, the
  tree would deepen one level a step and long drawn lengths would be cut at its depth).
A drawn length ignores the replayed tree, where the real pair emits ~91-93% of its sent best
path: with grafting its best path cut ~15% of swiftspec's drawn tokens a round and ~3% of tree's
(NOTES v81, v84), so replayed swiftspec-against-tree numbers from older recordings understate
swiftspec. Rates a node (NOTES v85) took the replayed swiftspec from 86% to 90% of the real
pair's tokens a round on the same queries.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class ReplayProfile:
    emitted: tuple[int, ...]  # tokens each recorded verification emitted (accepted + bonus)
    bonus_in_tree: tuple[bool, ...] = ()  # per recorded round (tree decoders)
    topk_logprobs: tuple[float, ...] = ()  # mean sorted child log-probs of a draft expansion
    graft_fire: float | None = None  # grafting rows: the share of draft steps that fired (None: none recorded)
    graft_kept: tuple[int, ...] = ()  # ... and per firing, the chain nodes kept (0 included)
    # Rows that recorded each sent tree's best path: per position k = 1, 2, .. of it, the share of
    # rounds that accepted node k where the tree had it (the last rate holds for deeper positions).
    accept_rates: tuple[float, ...] = ()


class Replay:
    """Draws per-round outcomes from a profile; seeded, so a replayed run repeats exactly."""

    def __init__(self, profile: ReplayProfile, seed: int = 0):
        if not profile.emitted:
            raise ValueError("a replay profile needs at least one recorded round")
        if profile.graft_fire and not profile.graft_kept:
            raise ValueError("a replay profile whose grafts fired needs their kept lengths")
        self.profile = profile
        self.rng = random.Random(seed)
        # Its own stream: the draft side draws grafts, the target side acceptance, so a split run
        # (each side holding its own Replay) draws what lockstep draws.
        self.graft_rng = random.Random(f"graft/{seed}")
        self.bonus_hint: bool | None = None

    def accept(self, parents: list[int]) -> list[int]:
        """The accepted node indices (root first) of a sent tree, along the draft's best path:
        node k of it accepted at the recorded rate for position k where the profile has rates (a
        real draft's acceptance runs down its tree, so the tree decides how far it can go), else
        as many nodes as a drawn recorded length."""
        path, rates = best_path(parents), self.profile.accept_rates
        if rates:
            n_emitted = 1
            while n_emitted < len(path) and self.rng.random() < rates[min(n_emitted, len(rates)) - 1]:
                n_emitted += 1
        else:
            n_emitted = self.rng.choice(self.profile.emitted)
        self.draw_bonus_hint()
        return path[:n_emitted]

    def draw_bonus_hint(self) -> bool:
        """Whether the next bonus token was a node of the draft's tree, drawn from the recorded flags."""
        flags = self.profile.bonus_in_tree
        self.bonus_hint = self.rng.choice(flags) if flags else False
        return self.bonus_hint

    def scores(self, k: int) -> list[float] | None:
        """Child log-probs for a draft expansion keeping k children, best first."""
        lp = list(self.profile.topk_logprobs)
        if not lp:
            return None
        return (lp + [lp[-1]] * k)[:k]

    def graft(self) -> int | None:
        """For a draft step that grafts (the profile recorded grafts: graft_fire is set): None where
        its lookup does not fire, else how many chain nodes it keeps."""
        p = self.profile
        if self.graft_rng.random() >= p.graft_fire:
            return None
        return self.graft_rng.choice(p.graft_kept)


def best_path(parents: list[int]) -> list[int]:
    """A sent tree's best path (node indices, root first): each node's first child, the draft's
    best (siblings are created best first)."""
    first_child: dict[int, int] = {}
    for i in range(1, len(parents)):
        first_child.setdefault(parents[i], i)
    path = [0]
    while path[-1] in first_child:
        path.append(first_child[path[-1]])
    return path
