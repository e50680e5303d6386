"""Every prompt must fit: the target's context with its answer and one verification tree or chain
(decoders.base.positions_needed, the rule the decoders hold their caches to), checked for every
query before the target's weights load, and for a later turn, whose prompt holds the earlier
answers, again as it runs, against the caches the engines were sized to before any answer existed."""
from __future__ import annotations

from swiftspec_core.decoders.base import positions_needed
from swiftspec_core.errors import UserError

from . import datasets as ds

TEMPLATE_SLACK = 64  # positions beyond the bound for a later turn's template tokens


def context_positions(tokenizer, max_context: int, queries, max_new_tokens: int, settings) -> int:
    """The most positions a query may use (the engines' caches are sized to it); a UserError where
    a prompt does not fit the context. A later turn is bounded by the earlier answers taking their
    whole budget as their text re-tokenizes (ds.retokenized_width)."""
    longest = 0
    for q in queries:
        turns = list(q.turns)
        n = len(ds.chat_prompt_ids(tokenizer, turns, [""] * (len(turns) - 1)))
        n += max_new_tokens * ds.retokenized_width(tokenizer) * (len(turns) - 1) if len(turns) > 1 else 0
        check_turn(n, max_new_tokens, settings, f"{q.dataset} question {q.question_id}", max_context=max_context)
        longest = max(longest, positions_needed(n, max_new_tokens, settings))
    return min(longest + TEMPLATE_SLACK, max_context)


def check_turn(prompt_tokens: int, max_new_tokens: int, settings, what: str, *, max_context: int,
               caches: int | None = None) -> None:
    """A UserError where a prompt and its answer do not fit the context, or (a later turn, whose
    earlier answers re-tokenized past their bound) the caches of `caches` positions (None: a system
    whose caches grow, transformers')."""
    need = positions_needed(prompt_tokens, max_new_tokens, settings)
    if need > max_context:
        raise UserError(f"{what}: prompt of {prompt_tokens} tokens + {max_new_tokens} new + one verification "
                        f"tree need {need} positions; that exceeds the context of {max_context}")
    if caches is not None and need > caches:
        raise UserError(f"{what}: prompt of {prompt_tokens} tokens + {max_new_tokens} new + one verification "
                        f"tree need {need} positions, beyond the {caches} the caches were sized to before the "
                        "earlier answers existed (they re-tokenized longer than bounded); a smaller "
                        "--max-new-tokens leaves them room")
