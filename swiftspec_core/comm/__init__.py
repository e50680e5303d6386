"""Communication: tensor-parallel groups and the draft<->target link."""
from .group import Group, SingleGroup

__all__ = ["Group", "SingleGroup"]
