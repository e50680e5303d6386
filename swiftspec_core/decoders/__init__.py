"""Our decoders: each `decode(target, draft, prompt, *, max_new_tokens, eos_ids, settings)`."""
from . import ar, chain, swiftspec, tree
from .base import DecodeResult, SpecSettings

DECODERS = {"ar": ar.decode, "chain": chain.decode, "tree": tree.decode, "swiftspec": swiftspec.decode}
NEEDS_DRAFT = {"chain", "tree", "swiftspec"}
GRAFTING = {"tree", "swiftspec"}  # their draft trees take grafted chains (SpecSettings.graft)

__all__ = ["DECODERS", "GRAFTING", "NEEDS_DRAFT", "DecodeResult", "SpecSettings"]
