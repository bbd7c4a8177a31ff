"""Boxes of the image-filter pipeline (boxes/imaging.snet), written with NumPy.

An image arrives as a nested list ``[row][column][r, g, b]`` of 0-255 values
(that is what a JSON record file can hold); ``prepare`` turns it into three
float planes, the colour boxes filter one plane each, ``check`` measures how
much the last round changed the image, and ``finish`` turns the planes back
into a list image.  NumPy releases the GIL inside its kernels, so with the
FRONT engine the three colour boxes of different images run in parallel.

Boxes are stateless: they never modify their arguments (a plane may be
shared by several records) and keep nothing between calls.
"""

import numpy as np

MAX_ROUNDS = 8
SETTLED = 0.5  # mean absolute change, in grey levels, below which an image is done


def _smooth(plane):
    """3x3 mean filter with edge replication."""
    p = np.pad(plane, 1, mode="edge")
    h, w = plane.shape
    return sum(p[i:i + h, j:j + w] for i in range(3) for j in range(3)) / 9.0


def prepare(img):
    a = np.asarray(img, dtype=np.float64)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"an image is rows x columns x [r, g, b]; got shape {a.shape}")
    return {"r": a[:, :, 0], "g": a[:, :, 1], "b": a[:, :, 2], "<round>": 0}


def red(r):
    """Denoise: a mean filter."""
    return {"r": _smooth(r)}


def green(g):
    """Denoise and lift the mid-tones a little (gamma 0.9)."""
    s = _smooth(g)
    return {"g": 255.0 * (s / 255.0) ** 0.9}


def blue(b):
    """Denoise and pull towards the plane's mean (a contrast reduction)."""
    s = _smooth(b)
    return {"b": s + 0.1 * (s.mean() - s)}


def check(r, g, b, round):  # noqa: A002 - named after the tag <round>, so the values bind by name
    """Done when a round changes the image by less than SETTLED on average, or after MAX_ROUNDS."""
    stacked = np.stack([r, g, b])
    change = float(np.abs(stacked - _smooth_all(stacked)).mean())
    if change < SETTLED or round + 1 >= MAX_ROUNDS:
        return {"r": r, "g": g, "b": b, "<done>": round + 1}
    return {"r": r, "g": g, "b": b, "<round>": round + 1}


def _smooth_all(stacked):
    return np.stack([_smooth(p) for p in stacked])


def finish(r, g, b, done):
    img = np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255).astype(np.int64)
    return {"img": img.tolist(), "<rounds>": done}
