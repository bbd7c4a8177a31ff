"""The boxes of stats.snet (docs/tutorial.md, step 2)."""


def words(text):
    """Split a text into lower-case words, punctuation stripped."""
    found = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
    found = [w for w in found if w]
    return {"words": found, "<count>": len(found)}


def longest(words):
    """The longest word; the first of them on a tie."""
    return {"longest": max(words, key=len)}


def distinct(vocab):
    """How many different words there are."""
    return {"<distinct>": len(set(vocab))}
