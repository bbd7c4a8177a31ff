"""Boxes of boxes/textstats.snet: parameters named after the labels, so they bind by name."""

import re

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def clean(text):
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, not {type(text).__name__}")
    return {"text": " ".join(text.lower().split())}


def split(text):
    return {"words": _WORD.findall(text)}


def measure(words):
    return {"words": words, "longest": max(words, key=len, default=""), "<count>": len(words)}
