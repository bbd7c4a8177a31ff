"""Differential tests: random well-typed networks on FRONT and on the reference engine.

Networks are built from filters and boxes over integer tags, combined with
every combinator (serial, parallel, deterministic parallel, stars and
deterministic stars with counters, splits incl. range and deterministic
splits, feedback loops with counters, initialisers, and a synchro-cell at
the entrance).  For each, FRONT must give the reference engine's output
multiset at several worker counts; a network with no non-deterministic
combinator must give the same order; under a deterministic combinator at
the top, the outputs caused by each input (traced by an inherited ``id``
field) must leave in input order.
"""

from __future__ import annotations

import collections
import os
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from front_graphs import B, C, T, box, feedback, filt, graph, ident, init, out, par, pat, serial, split, star, sync
from snet.errors import SNetRuntimeError
from snet.backends import RunOptions, start


def inc(a):
    return {"<a>": a + 1}


def dup(a):
    return [{"<a>": a}, {"<a>": a + 1000}]


def dropodd(a):
    return None if a % 2 else {"<a>": a}


def nap(a):
    time.sleep(0.0002)  # releases the GIL: lets workers overlap
    return {"<a>": a * 2}


def seed():
    return [{"<a>": 7, "<k>": 1, "<k2>": 2}, {"<a>": 8, "<k>": 0, "<k2>": 0}]


BOXES = {"inc": inc, "dup": dup, "dropodd": dropodd, "nap": nap, "seed": seed}

LEAVES = [
    lambda: box("inc", ["<a>"], ["<a>"]),
    lambda: box("dup", ["<a>"], ["<a>"]),
    lambda: box("dropodd", ["<a>"], ["<a>"]),
    lambda: box("nap", ["<a>"], ["<a>"]),
    lambda: filt(["<a>"], (None, [out(("<a>", B("+", T("<a>"), C(3))))])),
    lambda: filt(["<a>"], (B("==", B("%", T("<a>"), C(3)), C(0)), []),
                 (None, [out("<a>"), out(("<a>", B("-", T("<a>"), C(1))))])),
    lambda: filt(["<a>"], (None, [out("<a>", ("<b>", B("%", T("<a>"), C(2))))])),
    lambda: ident(),
]


# Inside loops (star and feedback operands) records must not multiply, or
# nested loops grow exponentially; initialiser outputs there would lack the
# loop counter and never leave.
LOOP_LEAVES = [leaf for i, leaf in enumerate(LEAVES) if i != 1]


@st.composite
def network(draw, depth=0, counter=None, in_loop=False):
    counter = counter if counter is not None else [0]
    if depth >= 3 or draw(st.integers(0, 9)) < 3:
        return draw(st.sampled_from(LOOP_LEAVES if in_loop else LEAVES))()
    kinds = ["serial", "par", "pardet", "star", "stardet", "split", "splitdet", "range", "feedback"]
    kind = draw(st.sampled_from(kinds if in_loop else kinds + ["init"]))
    loop = in_loop or kind in ("star", "stardet", "feedback")
    sub = lambda: draw(network(depth + 1, counter, loop))  # noqa: E731
    if kind == "serial":
        return serial(*(sub() for _ in range(draw(st.integers(2, 3)))))
    if kind in ("par", "pardet"):
        # A branch for records with <b> (more specific) and a catch-all.
        specific = serial(filt(["<a>", "<b>"], (None, [out("<a>")])), sub())
        return par(specific, sub(), det=kind == "pardet")
    counter[0] += 1
    c = f"<c{counter[0]}>"
    if kind in ("star", "stardet"):
        limit = draw(st.integers(0, 3))
        step = filt([c], (None, [out((c, B("+", T(c), C(1))))]))
        return serial(filt([], (None, [out((c, C(0)))])),
                      star(serial(step, sub()), pat(c, guard=B(">=", T(c), C(limit))), det=kind == "stardet"),
                      filt([c], (None, [out()])))
    if kind in ("split", "splitdet"):
        return split(sub(), "<k>", det=kind == "splitdet")
    if kind == "range":
        return split(sub(), "<k>", hi="<k2>", det=draw(st.booleans()))
    if kind == "feedback":
        limit = draw(st.integers(1, 3))
        step = filt([c], (None, [out((c, B("+", T(c), C(1))))]))
        return serial(filt([], (None, [out((c, C(0)))])),
                      feedback(serial(step, sub()), pat(c, guard=B("<", T(c), C(limit)))),
                      filt([c], (None, [out()])))
    return par(init("seed", ["<a>", "<k>", "<k2>"]), sub(), det=draw(st.booleans()))


def deterministic_only(spec) -> bool:
    """No non-deterministic combinator anywhere (so the order is reproducible)."""
    kind = spec[0]
    if kind == "par":
        return spec[2] and all(deterministic_only(b) for b in spec[1])
    if kind == "star":
        return spec[3] and deterministic_only(spec[1])
    if kind == "split":
        return spec[4] and deterministic_only(spec[1])
    if kind == "feedback":
        return False
    if kind == "serial":
        return all(deterministic_only(s) for s in spec[1])
    return True


def top_is_det(spec) -> bool:
    kind = spec[0]
    return (kind == "par" and spec[2]) or (kind == "star" and spec[3]) or (kind == "split" and spec[4])


def inputs(n: int, with_b: bool):
    recs = []
    for i in range(n):
        r = {"<a>": i, "<k>": i % 3, "<k2>": i % 3 + i % 2, "id": i}
        if with_b and i % 2:
            r["<b>"] = 1
        recs.append(r)
    return recs


def run(engine, g, recs, **options):
    execution = start(engine, g, BOXES, recs, RunOptions(**options))
    try:
        outputs = list(execution)
    except SNetRuntimeError as e:
        return "error", type(e).__name__
    finally:
        execution.close()
    return outputs, sorted(execution.warnings)


def key(record):
    return json.dumps(record, sort_keys=True)


@settings(max_examples=int(os.environ.get("SNET_FRONT_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=network(), n=st.integers(0, 12), with_b=st.booleans(),
       entrance=st.sampled_from(["none", "sync", "syncstar", "syncstardet"]), steal=st.booleans(),
       seed=st.integers(0, 3))
@pytest.mark.slow
def test_random_networks_match_the_reference(spec, n, with_b, entrance, steal, seed):
    whole = spec
    recs = inputs(n, with_b)
    if entrance == "sync":
        whole = serial(sync(pat("<a>", "<b>"), pat("<k>")), spec)
    elif entrance.startswith("syncstar"):
        # Pair the k-th {<a>} with the k-th {<z>} in replica k (language.md §6.9).
        cells = star(sync(pat("<a>"), pat("<z>")), pat("<a>", "<z>"), det=entrance == "syncstardet")
        whole = serial(cells, spec)
        recs = [r for i, r in enumerate(recs) for r in ([r, {"<z>": i}] if i % 3 else [r])]
    g = graph(whole)
    expected, expected_warnings = run("reference", g, recs)
    if expected == "error":
        for workers in (1, 2):
            for fuse in (True, False):
                assert run("front", g, recs, workers=workers, fuse=fuse) == (expected, expected_warnings)
        return
    ordered = deterministic_only(whole)
    for workers in (1, 2, 4):
        for fuse in (True, False):  # chains of boxes and filters as one entity, and each stage alone
            got, warnings = run("front", g, recs, workers=workers, steal=steal, seed=seed, fuse=fuse)
            assert collections.Counter(map(key, got)) == collections.Counter(map(key, expected)), (workers, fuse, whole)
            assert warnings == expected_warnings
            if ordered:
                assert got == expected, (workers, fuse, whole)
            elif top_is_det(whole):
                ids = [r["id"] for r in got if "id" in r]
                assert ids == sorted(ids), (workers, fuse, whole)
