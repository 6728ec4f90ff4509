"""{{name}}'s transform, pure Python (no Warden import: run it with any Python to try it).

A word-piece-free tokenizer with the hashing trick: the text is lower-cased (unless told not
to), split into words and single punctuation marks, and each token becomes
`1 + fnv1a32(token) % (vocab_size - 1)`; id 0 is left for padding. Every text maps to the same
ids on every machine, with no vocabulary file to ship.
"""

import re

TOKEN = re.compile(r"\w+|[^\w\s]")
FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193


def fnv1a32(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFF
    return h


def tokenize(text: str, vocab_size: int, lowercase: bool = True) -> list[int]:
    """Token ids of `text`, in order; `vocab_size` >= 2."""
    if lowercase:
        text = text.lower()
    return [1 + fnv1a32(t.encode("utf-8")) % (vocab_size - 1) for t in TOKEN.findall(text)]


if __name__ == "__main__":
    import sys

    print(tokenize(" ".join(sys.argv[1:]) or "Hello, sandboxed world!", 30522))
