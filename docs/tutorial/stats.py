"""The boxes of stats.snet (docs/tutorial.md, step 2)."""

from words import words  # noqa: F401  (the same box as in step 1)


def longest(words):
    """The longest word; the first of them on a tie."""
    return {"longest": max(words, key=len)}


def distinct(vocab):
    """How many different words there are."""
    return {"<distinct>": len(set(vocab))}
