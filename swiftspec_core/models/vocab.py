"""What a loaded model's tokens mean: whether a draft's mean the same to its target, and which
end a generation."""
from __future__ import annotations

from ..errors import UserError

from .loading import LoadedModel

# Tokens that end an assistant turn in the chat templates we meet (Qwen, Llama-3, tiny).
_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>")


def check_pair(target: LoadedModel, draft: LoadedModel, systems=()) -> None:
    """UserError unless the draft's tokens mean the same thing to the target (same vocabulary). Their
    tables may differ in padded rows (our engines take each other's ids: accept_tokens_below), but
    not for hf-assisted: transformers' assisted generation needs one table size."""
    a, b = draft.tokenizer.get_vocab(), target.tokenizer.get_vocab()
    if len(a) != len(b) or a != b:
        raise UserError(f"draft {draft.name} and target {target.name} have different vocabularies "
                        f"({len(a)} vs {len(b)})")
    rows = draft.config.vocab_size, target.config.vocab_size
    if "hf-assisted" in systems and rows[0] != rows[1]:
        raise UserError(f"hf-assisted needs the draft's and the target's embedding tables alike (transformers' "
                        f"assisted generation): {draft.name} has {rows[0]} rows, {target.name} {rows[1]}")


def eos_ids(loaded: LoadedModel) -> set[int]:
    """Token ids that end a generation: the config's and generation config's eos, the tokenizer's,
    and the chat template's end-of-turn token where the tokenizer has one."""
    ids: set[int] = set()
    gen = getattr(loaded.hf, "generation_config", None)
    for value in (loaded.config.eos_token_id, getattr(gen, "eos_token_id", None),
                  loaded.tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(value)
    added = loaded.tokenizer.get_added_vocab()  # special tokens live here; cheap on 150k vocabularies
    ids.update(added[t] for t in _END_OF_TURN if t in added)
    return ids
