"""Comma lists of names from the command line (--systems, --datasets), and a row's system label's
base name."""
from __future__ import annotations

from swiftspec_core.errors import UserError


def parse_names(text: str, flag: str, kind: str, known, also: str = "") -> list[str]:
    """The names in `text`, in the order given, without repeats; each must be in `known`."""
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UserError(f"{flag} is empty")
    for n in names:
        if n not in known:
            raise UserError(f"unknown {kind} {n!r} (known: {', '.join(known)}{also})")
    return names


def base_name(system_label: str) -> str:
    """swiftspec@1+1:d3:graft -> swiftspec."""
    return system_label.split("@")[0].split(":")[0]
