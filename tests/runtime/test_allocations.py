"""Allocations per record: a hop where no fusion applies allocates nothing beyond what its box returns.

A counting allocator (``alloc/counting.c``, built here with the C compiler
that builds snet) wraps CPython's allocators in a child process, which runs
each network with one worker over 20,000 and 40,000 records
(``alloc/measure.py``); the difference is what a record costs.  Every figure
is compared with a network that has the same box calls without the
construct, so what the boxes, the input and the output cost cancels out:
each assertion is about the runtime's own blocks.  (docs/performance.md,
"Allocations per record", has the figures.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from alloc.counter import build

HERE = Path(__file__).resolve().parent / "alloc"

pytestmark = pytest.mark.skipif(
    bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    reason="GIL build only: on a free-threaded CPython Cython keeps no freelists (a deterministic region's "
           "groups and tagged records are allocated per record there) and objects must come from mimalloc")

BOX = "box b0 ((a) -> (a)); box b1 ((a) -> (a)); box b2 ((a) -> (a)); box c0 ((z) -> (z)); box l0 ((a) -> (a));\n"
NETWORKS = {
    "one box": "net n connect b0;",
    "a box returning a list": "net n connect l0;",
    "two boxes": "net n connect b0 .. b1;",
    "three boxes": "net n connect b0 .. b1 .. b2;",
    "parallel": "net n connect b0 .. (b1 | c0);",
    "deterministic parallel": "net n connect b0 .. (b1 || c0);",
    "split": "net n connect b0 .. (b1 ! <k>);",
    "deterministic split": "net n connect b0 .. (b1 !! <k>);",
    "filter": "net n connect b0 .. [{a} -> {a, <t=1>}];",
    "filter passing nothing on": "net n connect b0 .. [{a, id, <k>} -> {a}];",
    "star": "net n connect b0 .. ([{a} -> {a, <done>}] * {<done>});",
}


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    """{(network, fused): blocks allocated per record}."""
    lib = build(tmp_path_factory.mktemp("alloc"))
    runs = [[f"{name}|{fuse}", BOX + source, fuse] for name, source in NETWORKS.items() for fuse in (True, False)]
    done = subprocess.run([sys.executable, str(HERE / "measure.py"), str(lib)], input=json.dumps(runs),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return {(name, fuse == "True"): v for key, v in json.loads(done.stdout).items()
            for name, fuse in [key.split("|")]}


# What a record may cost beyond the comparison: a block now and then (a list or deque growing, a table
# resized) shows as a fraction; one block per record would be 1.0.
SLACK = 0.25


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_a_hop_from_box_to_box_allocates_nothing(blocks, fuse):
    one, two, three = (blocks[(n, fuse)] for n in ("one box", "two boxes", "three boxes"))
    assert abs(two - one) <= SLACK and abs(three - two) <= SLACK, (one, two, three)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_a_box_s_list_of_records_is_read_not_copied(blocks, fuse):
    """``return [{"a": a}]`` against ``return {"a": a}``: the box's own list, and the list of outputs the
    caller builds (which a lone output leaves as itself), nothing more."""
    assert blocks[("a box returning a list", fuse)] - blocks[("one box", fuse)] <= 2 + SLACK, blocks


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("network", ["parallel", "deterministic parallel", "split", "deterministic split"])
def test_routing_a_record_allocates_nothing(blocks, network, fuse):
    """The parallel's branch and the split's replica are found without a block; ``||`` and ``!!`` keep
    their records' order with groups and tags taken from freelists."""
    assert abs(blocks[(network, fuse)] - blocks[("two boxes", fuse)]) <= SLACK, blocks


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_a_filter_allocates_its_output_record(blocks, fuse):
    """The explicit part and the output record it is set over (one copy of the input's table), no list
    for a lone output: at most two blocks (dicts also come from CPython's freelists, so often fewer)."""
    assert blocks[("filter", fuse)] - blocks[("one box", fuse)] <= 2 + SLACK, blocks
    assert blocks[("filter passing nothing on", fuse)] - blocks[("one box", fuse)] <= 1 + SLACK, blocks


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_a_star_allocates_nothing_beyond_its_operand(blocks, fuse):
    """A looping star marks each record's depth with a group stack and a tagged record from freelists."""
    assert blocks[("star", fuse)] - blocks[("filter", False)] <= SLACK, blocks
