"""Guards in synchro-cells, a synchro-cell star, a star and a feedback loop, on FRONT and the reference engine.

FRONT's sync-star tests a record against every cell pattern once and the
cell takes the slots from that answer; the sync-star, star and feedback
entities translate guard errors themselves.
Each case must give the reference engine's outputs or its error, word for
word and at the same position.
"""

from __future__ import annotations

import collections
import json

import pytest

import snet
from snet.errors import SNetRuntimeError

CASES = {
    "exit guard reads an absent tag":
        ("[| {<a>}, {<b>} |] * {<a>, <b>} if <z == 1>", [{"<a>": 1}, {"<b>": 2}]),
    "exit guard divides by zero":
        ("[| {<a>}, {<b>} |] * {<a>, <b>} if <a / (b - b) == 1>", [{"<a>": 1}, {"<b>": 2}]),
    "cell guard reads an absent tag":
        ("[| {<a>} if <x == 1>, {<b>} |] * {<a>, <b>}", [{"<b>": 2}, {"<a>": 1}]),
    "cell guard divides by zero":
        ("[| {<a>} if <a / (a - a) == 1>, {<b>} |] * {<a>, <b>}", [{"<b>": 2}, {"<a>": 1}]),
    "cell guard chooses the slot":
        ("[| {<a>} if <a > 0>, {<b>} |] * {<a>, <b>}",
         [{"<a>": 1, "i": 0}, {"<b>": 2}, {"<a>": 3, "i": 1}, {"<b>": 4}, {"<b>": 5}, {"<a>": 6, "i": 2}]),
    "a record matching two patterns fills both slots":
        ("[| {<a>}, {<a>, <b>} |] * {<a>, <b>}", [{"<a>": 1, "<b>": 2}, {"<a>": 3}, {"<a>": 4, "<b>": 5}]),
    "three patterns":
        ("[| {<a>}, {<b>}, {<c>} |] * {<a>, <b>, <c>}",
         [{"<a>": 1}, {"<c>": 3}, {"<b>": 2}, {"<b>": 20}, {"<a>": 10}, {"<c>": 30}]),
    "plain cell guard reads an absent tag":
        ("[| {<a>} if <x == 1>, {<b>} |]", [{"<b>": 2}, {"<a>": 1}]),
    "plain cell: a filled slot's guard is not tested again":
        ("[| {<a>} if <x == 1>, {<b>} |]", [{"<a>": 1, "<x>": 1}, {"<a>": 5}, {"<b>": 2}, {"<b>": 3}]),
    "plain cells in a split":
        ("([| {<a>} if <a > 0>, {<b>} |] .. [{<a>, <b>} -> {<r=a+b>}]) ! <k>",
         [{"<k>": i // 2, "<a>" if i % 2 else "<b>": i} for i in range(12)]),
    "star exit guard reads an absent tag":
        ("[{<n>} -> {<n=n-1>}] * {<n>} if <m == 0>", [{"<n>": 2}]),
    "star exit guard divides by zero":
        ("[{<n>} -> {<n=n-1>}] * {<n>} if <n / n == 1>", [{"<n>": 3}, {"<n>": 0}]),
    "star exit guard holds":
        ("[{<n>} -> {<n=n-1>}] * {<n>} if <n <= 0>", [{"<n>": 3, "i": 0}, {"<n>": 0, "i": 1}, {"<n>": 5, "i": 2}]),
    "feedback guard reads an absent tag":
        ("[{<n>} -> {<n=n-1>}] \\ {<n>} if <m > 0>", [{"<n>": 2}]),
    "feedback guard divides by zero":
        ("[{<n>} -> {<n=n-1>}] \\ {<n>} if <6 / n > 1>", [{"<n>": 3}]),
    "feedback guard holds":
        ("[{<n>} -> {<n=n-1>}] \\ {<n>} if <n > 0>", [{"<n>": 3, "i": 0}, {"<n>": 1, "i": 1}]),
}


def outcome(net, records, engine, workers=None):
    options = {"workers": workers} if workers else {}
    try:
        execution = net.run(records, engine=engine, **options)
        try:
            return "ok", collections.Counter(json.dumps(r, sort_keys=True) for r in execution)
        finally:
            execution.close()
    except SNetRuntimeError as e:
        return "error", e.render()


@pytest.mark.parametrize("name", list(CASES))
def test_front_sync_star_agrees_with_the_reference(name):
    body, records = CASES[name]
    net = snet.load(f"net n connect {body};")
    expected = outcome(net, records, "reference")
    if "guard reads" in name or "divides" in name:
        assert expected[0] == "error", expected
    for workers in (1, 2):
        assert outcome(net, records, "front", workers) == expected, workers
