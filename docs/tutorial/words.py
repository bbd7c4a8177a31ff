"""The box of words.snet (docs/tutorial.md, step 1)."""


def words(text):
    """Split a text into lower-case words, punctuation stripped."""
    found = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
    found = [w for w in found if w]
    return {"words": found, "<count>": len(found)}
