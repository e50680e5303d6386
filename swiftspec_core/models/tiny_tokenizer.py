"""A byte-level tokenizer for the tiny presets, built in memory (no files, no hub).

Ids 0..255 are the bytes themselves, so any text round-trips; the special tokens follow from 256.
It is a transformers PreTrainedTokenizerFast with a chat template, so the decoders and the CLI
treat the tiny models exactly like real ones.
"""
from __future__ import annotations

from functools import lru_cache

SPECIALS = ["<|bos|>", "<|eos|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
BOS_ID, EOS_ID, PAD_ID = 256, 257, 258
END_OF_TURN = "<|end|>"
VOCAB_SIZE = 256 + len(SPECIALS)

# One turn is <|role|>content<|end|>; the conversation opens with <|bos|>.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (what the ByteLevel pre-tokenizer emits)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return chars


@lru_cache(maxsize=1)
def _backend():
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {ch: b for b, ch in _bytes_to_unicode().items()}  # id == byte value
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))  # no merges: one token per byte
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    return tok


def tiny_tokenizer():
    """A fresh PreTrainedTokenizerFast over the byte vocabulary (callers may mutate theirs)."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=_backend(), bos_token="<|bos|>", eos_token="<|eos|>",
                                  pad_token="<|pad|>", chat_template=CHAT_TEMPLATE)
    return tok
