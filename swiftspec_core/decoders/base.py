"""What every decoder returns, and the settings the speculative ones share."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..stopwatch import Stopwatch
from .drafter import Drafter
from .verifier import Verifier


@dataclass(frozen=True)
class SpecSettings:
    tree_bs: int = 8  # nodes the target verifies per round, root included
    tree_w: int = 8  # leaves the draft expands per step (and children kept per expanded node)
    draft_steps: int | None = None  # swiftspec's d; None: measured once (measure_draft_steps)
    chain_k: int = 7  # draft tokens per chain round
    graft: str = "off"  # tree decoders: off | ngram (chains from the request's own text, graft.py)
    graft_len: int = 6  # the most tokens one graft adds under the best leaf
    graft_ngram: tuple[int, ...] = (3, 2)  # suffix lengths looked up, the longest that occurs wins


@dataclass
class DecodeResult:
    tokens: list[int]  # generated token ids (the prompt excluded)
    # Per token: the target's top-1 minus top-2 logit where it chose that token (finish()).
    margins: list[float] = field(default_factory=list)
    runner_ups: list[int] = field(default_factory=list)  # per token: the target's second choice there
    prefill_s: float | None = None  # the target's prompt forward (None where it is not timed)
    # One entry per target verification forward after the prefill (which emits the first token):
    accepted: list[int] = field(default_factory=list)  # tokens that forward emitted, bonus included
    target_s: list[float] = field(default_factory=list)  # its wall time
    draft_s: list[float] = field(default_factory=list)  # draft time on the critical path before it
    bonus_in_tree: list[bool] = field(default_factory=list)  # tree decoders: bonus token was a draft node
    draft_steps: int = 0  # expansions per round (swiftspec's d; 0 where it does not apply)
    # swiftspec: the time of the draft's d expansions that overlap each verification (in lockstep
    # they run after it); across processes, how long the target waited on the link for each tree.
    draft_parallel_s: list[float] = field(default_factory=list)
    link_wait_s: list[float] = field(default_factory=list)
    # Tree decoders: mean over expansions of the sorted top-w draft log-probs of a node's children.
    draft_topk_logprobs: list[float] = field(default_factory=list)
    # Tree decoders that graft (lockstep; split rows leave them unset): the draft steps that looked
    # a chain up, and per step whose lookup fired, the chain nodes kept (0 included).
    graft_steps: int | None = None
    graft_kept: list[int] = field(default_factory=list)
    # Tree decoders, lockstep: per sent tree, its best (first-child) path in nodes, root included
    # (replay accepts along it node by node at the recorded rates).
    sent_paths: list[int] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return len(self.accepted)

    @property
    def mean_accepted(self) -> float:
        """Tokens per target verification forward (the prefill's first token is not counted)."""
        return sum(self.accepted) / len(self.accepted) if self.accepted else 0.0


class Output:
    """Generated tokens so far; stops at an EOS token or the token budget."""

    def __init__(self, first: int, max_new_tokens: int, eos_ids: set[int]):
        self.tokens, self.max_new_tokens, self.eos_ids = [], max_new_tokens, eos_ids
        self.done = False
        self.add([first])

    def add(self, emitted: list[int]) -> int:
        """Append what one forward emitted, cut at EOS or the budget; returns how many were kept."""
        kept = emitted[: self.max_new_tokens - len(self.tokens)]
        for i, tok in enumerate(kept):
            if tok in self.eos_ids:
                kept = kept[: i + 1]
                break
        self.tokens += kept
        self.done = len(self.tokens) >= self.max_new_tokens or bool(kept and kept[-1] in self.eos_ids)
        return len(kept)

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - len(self.tokens)


OVERRUN = 0.1  # how far past a verification d steps may run (a fraction of it): see draft_steps_for


def draft_steps_for(verify_s: float, step_s: float) -> int:
    """SwiftSpec's d: the most draft steps that end within OVERRUN of one verification.

    A step more deepens the tree by a level, which at d = 3-4 accepts about 10% more a round (the
    real pair's recordings replayed on 2xH200: 2.82 -> 3.12 tokens a round at bs 8), so it pays
    while it makes the round less than ~10% longer. Rounding down instead left d = 2 where 3 steps
    fit but for a few percent (NOTES v7: d = 3 was 1.22x faster; v29: a split pool fitted d = 2
    on 19 of 28 queries and ran 0.93x d = 3's tokens a ms); rounding to the nearest let 4 steps
    overrun by 23% (v24, v29: the target waited 1.2-1.6 ms a round)."""
    return max(1, int(verify_s * (1 + OVERRUN) / max(step_s, 1e-9)))


# The warm-up request that measures d (and captures the graphs) before a run's first timed query.
WARMUP_PROMPT = list(range(1, 33))
WARMUP_TOKENS = 24


def measure_draft_steps(warmup: DecodeResult) -> int:
    """SwiftSpec's d for a run, lockstep and split alike: from one warm-up request decoded with a
    given d (draft_steps), the median verification against the median draft step."""
    step_s = statistics.median(warmup.draft_parallel_s) / warmup.draft_steps
    return draft_steps_for(statistics.median(warmup.target_s), step_s)


MIN_FIT_ROUNDS = 5  # a request with fewer rounds says too little about its steps


def fitting_draft_steps(result: DecodeResult) -> int | None:
    """draft_steps_for a split request's own rounds: its median verification against its median
    draft step (its d expansions' time, the deferred cache move included, over d); None for a
    request of too few rounds. The warm-up's short prompt never grafts, so its steps run faster
    than a request's (NOTES v24): the requests' own steps correct the d it measured."""
    parallel = [p for p in result.draft_parallel_s if p > 0]
    if len(result.target_s) < MIN_FIT_ROUNDS or len(parallel) < MIN_FIT_ROUNDS or not result.draft_steps:
        return None
    return draft_steps_for(statistics.median(result.target_s), statistics.median(parallel) / result.draft_steps)


def finish(result: DecodeResult, verifier) -> DecodeResult:
    """Attach the target's margins for the tokens the request kept."""
    result.margins = verifier.margins[: len(result.tokens)]
    result.runner_ups = verifier.runner_ups[: len(result.tokens)]
    return result


def record_draft(result: DecodeResult, drafter) -> None:
    """What a request's draft side measured, for the row (and a replay profile built from it)."""
    result.draft_topk_logprobs = drafter.mean_topk_logprobs()
    result.sent_paths = list(drafter.sent_paths)
    if drafter.grafter:
        result.graft_steps, result.graft_kept = drafter.grafter.steps, list(drafter.grafter.kept_lengths)


def draft_tree_rows(settings: SpecSettings) -> int:
    """Cache rows the draft tree may use beyond the prefix: room for several rounds of growth."""
    return 4 * settings.tree_bs * settings.tree_w


def verification_width(system: str, settings: SpecSettings) -> int:
    """The target forward's width a decoder verifies with: ar 1 token, chain --chain-k + 1, the
    trees (tree, swiftspec) --tree-bs. The bench holds the persistent target to it."""
    return {"ar": 1, "chain": settings.chain_k + 1}.get(system, settings.tree_bs)


def positions_needed(prompt_tokens: int, max_new_tokens: int, settings: SpecSettings) -> int:
    """Cache positions one request may use: the prompt, the answer, one verification tree or chain
    beyond the last emitted token, and the token pending after it. The CLI checks prompts against
    the model's context with this, and `start` checks the engine's cache with it: one rule."""
    return prompt_tokens + max_new_tokens + max(settings.tree_bs, settings.chain_k + 1) + 1


def drafter_args(settings: SpecSettings, width: int, graft: bool = False) -> tuple:
    """Drafter(model, *these): w leaves a step, the tree's cache rows, and grafting where the
    decoder grafts (tree decoders) and the settings turn it on."""
    if graft and settings.graft == "ngram":
        return width, draft_tree_rows(settings), settings.graft_len, settings.graft_ngram
    return width, draft_tree_rows(settings)


def start(target, draft, prompt: list[int], max_new_tokens: int, eos_ids: set[int], settings: SpecSettings,
          *, verify_width: int, draft_width: int = 0, graft: bool = False, early_steps: int = 0, replay=None):
    """Prefill both sides for a request. Returns (verifier, drafter or None, output holding the
    first token). The sides (caches, CUDA graphs) are built once per model and width, then reused.
    graft: the decoder grafts chains when the settings ask for it (tree decoders). early_steps:
    draft steps grown from the prompt's last token before the first token is known (SwiftSpec's
    draft runs them while the target prefills; the split runtime does the same)."""
    need = positions_needed(len(prompt), max_new_tokens, settings)
    if need > target.max_seq_len:
        raise ValueError(f"{len(prompt)} prompt tokens + {max_new_tokens} new ones (+ one tree) need "
                         f"{need} positions; the engine holds {target.max_seq_len}")
    verifier = reuse(target, Verifier, verify_width)
    out = Output(verifier.prefill(prompt, replay), max_new_tokens, eos_ids)
    drafter = None
    if draft is not None:
        drafter = reuse(draft, Drafter, *drafter_args(settings, draft_width, graft))
        drafter.prefill(prompt, replay)
        for _ in range(early_steps):
            drafter.step(draft_width, draft_width)
        out.tokens[-1], _ = drafter.first(out.tokens[-1], verifier.first_hint() if early_steps else None)
    return verifier, drafter, out


def reuse(model, side, *args):
    """One `side(model, *args)` per model and arguments, kept on the model."""
    memo = model.__dict__.setdefault("_sides", {})
    key = (side.__name__, *args)
    if key not in memo:
        memo[key] = side(model, *args)
    return memo[key]


def serial_round(verifier, drafter, subtree: tuple[list[int], list[int]], out: Output, result: DecodeResult,
                 draft_s: float) -> bool:
    """The end of a serial round: verify the drafted subtree, re-root the draft on what the target
    emitted, record the round. Returns whether the bonus token was a draft node."""
    with Stopwatch(verifier.model.device) as t:
        emitted, _ = verifier.verify(*subtree)
    emitted, reused = drafter.advance(emitted, verifier.bonus_hint)
    result.accepted.append(out.add(emitted))
    result.target_s.append(t.seconds)
    result.draft_s.append(draft_s)
    return reused
