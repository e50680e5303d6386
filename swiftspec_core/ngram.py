"""An n-gram index over one request's text (the prompt, then every token emitted so far): for the
last n tokens of a context, the tokens that followed their most recent earlier occurrence.

Prompt lookup decoding's idea, kept incremental: each n-gram maps to the position of the token that
followed its latest occurrence, so `extend` costs len(sizes) dict writes per token and
`continuation` at most len(sizes) dict reads, whatever the text's length. An n-gram at the very end
of the text has no follower yet, so it is indexed only once the next token arrives: a lookup never
answers with the context's own end.
"""
from __future__ import annotations


class NgramIndex:
    def __init__(self, sizes: tuple[int, ...] = (3, 2)):
        """sizes: the suffix lengths looked up, the longest that occurs wins."""
        if not sizes or min(sizes) < 1:
            raise ValueError(f"n-gram sizes must be at least 1: {sizes}")
        self.sizes = sorted(set(sizes), reverse=True)
        self.text: list[int] = []
        # (n tokens) -> position of the token after their latest occurrence. Keys of different
        # sizes are tuples of different lengths, so one dict holds every size.
        self.follower: dict[tuple[int, ...], int] = {}

    def extend(self, tokens: list[int]) -> None:
        text, follower = self.text, self.follower
        for tok in tokens:
            i = len(text)
            for n in self.sizes:
                if i >= n:
                    follower[tuple(text[i - n:i])] = i
            text.append(tok)

    def continuation(self, context: list[int], limit: int) -> list[int]:
        """Up to `limit` tokens that followed the latest occurrence in the text of the context's
        last n tokens, for the longest n in `sizes` that occurs; [] when none does."""
        for n in self.sizes:
            if len(context) >= n:
                at = self.follower.get(tuple(context[-n:]))
                if at is not None:
                    return self.text[at:at + limit]
        return []
