"""The run settings a row records beside its key, and which systems use each: a run resumes into a
folder, and compare and plot put rows together, only where the settings they use agree."""
from __future__ import annotations

from swiftspec_core.errors import UserError

from .names import base_name

# Settings that change what a row measures and that its key does not name (the key names the
# target, the draft, and the system's placement and fixed d): a run may only resume into a DIR
# whose rows were made with the same.
RUN_SETTINGS = ("max_new_tokens", "dtype", "weights", "acceptance", "replay_source", "device", "tree_bs", "tree_w",
                "chain_k", "seed", "draft_noise", "quant", "graft_len", "graft_ngram")
# Run settings a run may not have used (None: --graft off's graft_len; "" where a CSV held None):
# checked only where both sides have one.
SETTINGS_IF_USED = ("graft_len", "graft_ngram")
# Run settings only some systems use (by a row's base name, names.base_name): a row of another
# system records the run's value and does not depend on it (ar decodes the same tokens the same
# way at any --tree-bs), so rows of other values stand beside it: an ar baseline resumed into by a tree
# sweep, or compared with it from another folder. tests/test_bench_settings.py holds this table to
# the systems (their drafts, grafting, verification widths).
DRAFTING = ("chain", "tree", "swiftspec", "hf-assisted")
TREES = ("tree", "swiftspec")
SETTING_USERS = {"tree_bs": TREES, "tree_w": TREES, "graft_len": TREES, "graft_ngram": TREES,
                 "chain_k": ("chain", "hf-assisted"), "draft_noise": DRAFTING, "acceptance": DRAFTING,
                 "replay_source": DRAFTING}
# --seed's bound: torch's generators take 64 bits, with the draft noise's offset added
SEED_BOUND = 2 ** 62


def check_seed(seed: int, flag: str = "--seed") -> None:
    """A UserError for a seed the random weights' generators cannot take (run, random_checkpoint)."""
    if abs(seed) >= SEED_BOUND:
        raise UserError(f"{flag} {seed}: must be within +-2^62")


# Run settings whose column came later, and the value every row written before it ran with
# (unquantized weights), so a run resumes into a folder of older rows.
SETTINGS_BEFORE_COLUMN = {"quant": "none"}


def unused_setting(name: str, value, system: str | None = None) -> bool:
    """Whether `value` says the run did not use setting `name` (SETTINGS_IF_USED's None or ""),
    or the row's `system` (a label) does not use it (SETTING_USERS)."""
    users = SETTING_USERS.get(name)
    return (name in SETTINGS_IF_USED and value in (None, "")) or (
        system is not None and users is not None and base_name(system) not in users)


def unused_flag_notes(given: list[str], systems: list[str]) -> list[str]:
    """A line for each setting given on the command line (run's parameter names: tree_bs) that none
    of the run's systems uses: it changes nothing (its rows record it all the same)."""
    notes = []
    for name in given:
        users = SETTING_USERS.get(name) or (TREES if name == "graft" else None)
        if users is not None and not any(base_name(s) in users for s in systems):
            flag, who = "--" + name.replace("_", "-"), ", ".join(users[:-1]) + " and " + users[-1]
            notes.append(f"note: {flag} is for {who}; --systems runs none of them, so it changes nothing")
    return notes
