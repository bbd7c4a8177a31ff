"""Fusion: chains of boxes and filters run as one FRONT entity give what the stages one by one give.

The chains are found in the plan (:mod:`snet.spg.fusion`); FRONT runs each
as one entity, through a compiled walk for the records of one shape
(:mod:`snet.core.chains`) or stage by stage through the box callers.  Every
test compares a fused run with an unfused one (``fuse=False``) and, where
it matters, with the reference engine: outputs in order and with their
labels in the same order, errors word for word, the figures of each box.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

import snet
from snet.errors import SNetBoxError
from snet.plan import Kind
from snet.spg.fusion import fused_chains
from snet.spg.lower import lower


def chains_of(source, boxes):
    net = snet.load(source, boxes=boxes)
    return fused_chains(lower(net.graph, boxes).nodes), net


def names(net, chains):
    plan = lower(net.graph, net.boxes)
    return [[getattr(plan.nodes[n], "name", "split" if plan.nodes[n].kind == Kind.SPLIT else "filter")
             for n in chain] for chain in chains]


def inc(a):
    return {"a": a + 1}


def run(net, records, **options):
    with net.run(records, engine=options.pop("engine", "front"), **options) as execution:
        return list(execution), execution


# -- which stages are fused ------------------------------------------------------------------------


def test_a_chain_runs_through_nets_identities_and_filters_and_stops_at_state():
    source = """
    net p {
      net inner { box b1 ((a) -> (a)); } connect b1 .. [];
      box b0 ((a) -> (a)); box b2 ((a) -> (a)); box b3 ((a) -> (a));
    } connect b0 .. inner .. [{a} -> {a}] .. b2 .. [| {a}, {b} |] .. b3 .. b0;
    """
    boxes = {f"b{i}": inc for i in range(4)}
    chains, net = chains_of(source, boxes)
    assert names(net, chains) == [["b0", "b1", "filter", "b2"], ["b3", "b0"]]


@pytest.mark.parametrize("source, expected", [
    # a parallel's branches end at its collector; a branch's own chain is fused
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a)); box b2 ((b) -> (b));"
     "net p connect (b0 .. b1 | b2) .. b0;", [["b0", "b1"]]),
    # a star's operand ends at the star (its exit test): the chain inside, not across
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a));"
     "net p connect (b0 .. b1) * {<done>};", [["b0", "b1"]]),
    # a split's operand likewise, when a replica holds state
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a));"
     "net p connect (b0 .. [| {a}, {b} |] .. b1 .. b0) ! <t>;", [["b1", "b0"]]),
    # ... but a split of boxes and filters alone is a stage (its tag's check), and the chain goes on through it
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a));"
     "net p connect (b0 .. b1) ! <t>;", [["split", "b0", "b1"]]),
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a));"
     "net p connect b0 .. ((b1 .. []) !! <t>) .. [{a} -> {a}] .. b0;", [["b0", "split", "b1", "filter", "b0"]]),
    # not a range split (a record enters several replicas), nor one whose operand holds anything but stages
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a));"
     "net p connect b0 .. (b1 ! <t>:<u>);", []),
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a)); box b2 ((b) -> (b));"
     "net p connect b0 .. ((b1 | b2) ! <t>);", []),
    # an initialiser stage breaks the chain
    ("box b0 ((a) -> (a)); box b1 ((a) -> (a)); box i ( -> (a));"
     "net p connect b0 .. i .. b1;", []),
    # one stage is no chain
    ("box b0 ((a) -> (a)); net p connect b0;", []),
])
def test_chains_end_where_the_run_decides_where_records_go(source, expected):
    boxes = {"b0": inc, "b1": inc, "b2": lambda b: {"b": b}, "i": lambda: {"a": 0}}
    chains, net = chains_of(source, boxes)
    assert names(net, chains) == expected


def test_an_async_box_runs_alone():
    async def slow(a):
        return {"a": a}

    source = "box b0 ((a) -> (a)); box s ((a) -> (a)); box b1 ((a) -> (a)); net p connect b0 .. s .. b1 .. b0;"
    net = snet.load(source, boxes={"b0": inc, "s": slow, "b1": inc})
    plan = lower(net.graph, net.boxes, defer_async=True)
    assert [[plan.nodes[n].name for n in chain] for chain in plan.fused] == [["b1", "b0"]]
    out, _ = run(net, [{"a": i} for i in range(50)], workers=2)
    assert out == [{"a": i + 3} for i in range(50)]


# -- same outputs, same order, same labels -----------------------------------------------------


def dup(a):
    return [{"a": a}, {"a": a + 100}]


def drop_odd(a):
    return None if a % 2 else {"a": a}


def to_b(a):
    return {"b": a * 2}


def tag(b):
    return {"a": b, "<t>": b % 3}


def untag(a, t):
    return {"a": a + t}


MIXED = """
net p {
  box inc ((a) -> (a)); box dup ((a) -> (a)); box drop_odd ((a) -> (a));
  box to_b ((a) -> (b)); box tag ((b) -> (a, <t>)); box untag ((a, <t>) -> (a));
} connect inc .. dup .. [{a} -> {a}; {a, <x>}] .. drop_odd .. to_b .. tag .. untag .. inc;
"""
MIXED_BOXES = {"inc": inc, "dup": dup, "drop_odd": drop_odd, "to_b": to_b, "tag": tag, "untag": untag}


def to_b_near_the_part_cost(a):
    """``to_b`` that computes for about ``PART_COST_LEAST`` (50 µs, chains.pxi): the chain's measured cost from
    a fan-out on hovers around the threshold, so that the rest of a walk is found slow in its middle."""
    until = time.perf_counter() + 46e-6
    while time.perf_counter() < until:
        pass
    return {"b": a * 2}


@pytest.mark.parametrize("workers", [2, 4])
def test_a_fan_out_after_one_walked_in_place_is_walked_in_place_too(workers):
    """A concurrent walk whose first fan-out (``dup``) goes on in place, and whose later one (the filter) finds
    the rest of the chain slow by then, walked the later one's outputs as parts: the walk in place then met
    the parts' marker instead of records (a TypeError ended the run, 10 runs in 10 at rest before the fix)."""
    net = snet.load(MIXED, boxes=dict(MIXED_BOXES, to_b=to_b_near_the_part_cost))
    records = [{"a": i} for i in range(4000)]
    fused, _ = run(net, records, workers=workers)
    reference, _ = run(net, records, engine="reference")
    assert fused == reference


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_fused_outputs_equal_unfused_in_order_with_their_labels_in_order(workers):
    net = snet.load(MIXED, boxes=MIXED_BOXES)
    assert len(lower(net.graph, net.boxes).fused) == 1
    records = [{"a": i, "id": i} for i in range(300)] + [{"id": -1, "a": 5, "<#k>": 3}, {"a": 7}]
    fused, _ = run(net, records, workers=workers)
    unfused, _ = run(net, records, workers=workers, fuse=False)
    reference, _ = run(net, records, engine="reference")
    assert fused == unfused == reference
    assert [list(r) for r in fused] == [list(r) for r in unfused] == [list(r) for r in reference]
    assert len(fused) > 300


def test_records_of_many_shapes_through_a_compiled_chain():
    source = "box b0 ((a) -> (a)); box b1 ((a) -> (b)); box b2 ((b) -> (a)); net p connect b0 .. b1 .. b2;"
    net = snet.load(source, boxes={"b0": inc, "b1": to_b, "b2": lambda b: {"a": b + 1}})
    records = [{"a": 1}, {"a": 2, "x": 1}, {"x": 1, "a": 3}, {"a": 4, "<#t>": 1, "y": "z"}, {"a": 5, "x": 2}] * 20
    fused, _ = run(net, records, workers=1)
    unfused, _ = run(net, records, workers=1, fuse=False)
    assert fused == unfused
    assert [list(r) for r in fused] == [list(r) for r in unfused]


def test_results_the_compiled_walk_does_not_take_for_granted_go_through_the_callers():
    """A list, None, a mapping that is not a dict, an int subclass as a tag: as the callers take them."""
    class Mapping(dict):
        pass

    class Int(int):
        pass

    def odd(a):
        return [{"a": a}, {"a": -a}] if a % 4 == 0 else None if a % 4 == 1 else Mapping(a=a) if a % 4 == 2 \
            else {"a": a, "<t>": Int(a)}

    source = "box b0 ((a) -> (a)); box odd ((a) -> (a) | (a, <t>)); box b1 ((a) -> (a)); net p connect b0 .. odd .. b1;"
    net = snet.load(source, boxes={"b0": inc, "odd": odd, "b1": inc})
    records = [{"a": i, "k": i} for i in range(40)]
    fused, _ = run(net, records, workers=1)
    unfused, _ = run(net, records, workers=1, fuse=False)
    assert fused == unfused and [list(r) for r in fused] == [list(r) for r in unfused]


# -- errors, policies and figures as if each box ran alone ---------------------------------------


def failing(a):
    if a == 7:
        raise ValueError("seven")
    return {"a": a}


def wrong_variant(a):
    return {"b": a} if a == 7 else {"a": a}


def bool_tag(a):
    return {"a": a, "<t>": a == 7}


@pytest.mark.parametrize("middle, declared", [
    (failing, "(a) -> (a)"), (wrong_variant, "(a) -> (a)"), (bool_tag, "(a) -> (a, <t>)")])
def test_a_failing_box_in_a_chain_gives_the_unfused_error_word_for_word(middle, declared):
    source = f"box b0 ((a) -> (a)); box mid ({declared}); box b1 ((a) -> (a)); net p connect b0 .. mid .. b1;"
    net = snet.load(source, boxes={"b0": inc, "mid": middle, "b1": inc})
    records = [{"a": i, "id": i} for i in range(20)]
    messages = []
    for fuse in (True, False):
        with pytest.raises(SNetBoxError) as caught:
            run(net, records, workers=1, fuse=fuse)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("<string>:1:") and "box 'mid'" in messages[0]


def test_the_traceback_of_a_box_in_a_compiled_chain_starts_in_the_box():
    net = snet.load("box b0 ((a) -> (a)); box mid ((a) -> (a)); net p connect b0 .. mid;",
                    boxes={"b0": inc, "mid": failing})
    with pytest.raises(SNetBoxError) as caught:
        run(net, [{"a": 6}], workers=1)
    detail = caught.value.detail
    assert "fused chain" not in detail and 'raise ValueError("seven")' in detail


@pytest.mark.parametrize("workers", [1, 4])
def test_skipped_failures_and_figures_are_those_of_the_boxes_alone(workers):
    source = "box b0 ((a) -> (a)); box mid ((a) -> (a)); box b1 ((a) -> (a)); net p connect b0 .. mid .. b1;"

    def flaky(a):
        if a % 10 == 3:
            raise ValueError(a)
        return {"a": a}

    net = snet.load(source, boxes={"b0": inc, "mid": flaky, "b1": inc})
    records = [{"a": i} for i in range(1000)]
    results = []
    for fuse in (True, False):
        errors = []
        out, execution = run(net, records, workers=workers, fuse=fuse, on_error=errors.append)
        stats = execution.stats()
        # (the error handler is called as calls fail: in the order of completion, with several workers)
        results.append((out, sorted((e["box"], e["record"]["a"]) for e in errors),
                        {name: stats.boxes[name].calls for name in ("b0", "mid", "b1")},
                        execution.failures))
    assert results[0] == results[1]
    assert results[0][2] == {"b0": 1000, "mid": 1000, "b1": 900} and results[0][3] == 100


def first_call_waits_for_a_second():
    """A box whose first call waits (releasing the GIL) until a second call begins; and the list that says
    whether one did (``[True]``) or the wait timed out (``[False]``)."""
    inside = []
    both = threading.Event()
    overlapped: list = []
    lock = threading.Lock()

    def wait(a):
        with lock:
            inside.append(a)
            if len(inside) == 2:
                both.set()
        if len(inside) == 1:
            overlapped.append(both.wait(10))
        return {"a": a}

    return wait, overlapped


def test_a_chain_overlaps_the_calls_of_a_box_that_releases_the_gil_and_keeps_order():
    """Two workers run two records' walks at once through the chain (its limit is its boxes')."""
    wait, overlapped = first_call_waits_for_a_second()
    net = snet.load("box b0 ((a) -> (a)); box w ((a) -> (a)); net p connect b0 .. w .. b0;",
                    boxes={"b0": inc, "w": wait})
    out, _ = run(net, [{"a": i} for i in range(40)], workers=2, box_concurrency=2)
    assert overlapped == [True]
    assert out == [{"a": i + 2} for i in range(40)]


def test_no_fuse_on_the_command_line(tmp_path):
    (tmp_path / "net.snet").write_text(MIXED)
    (tmp_path / "net.py").write_text(
        "def inc(a):\n    return {'a': a + 1}\n"
        "def dup(a):\n    return [{'a': a}, {'a': a + 100}]\n"
        "def drop_odd(a):\n    return None if a % 2 else {'a': a}\n"
        "def to_b(a):\n    return {'b': a * 2}\n"
        "def tag(b):\n    return {'a': b, '<t>': b % 3}\n"
        "def untag(a, t):\n    return {'a': a + t}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i, "id": i}) + "\n" for i in range(50)))
    outputs = []
    for flags in ([], ["--no-fuse"]):
        result = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", *flags],
                                cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") > 50


def test_graph_colours_the_fused_chains(tmp_path):
    (tmp_path / "net.snet").write_text(MIXED)
    result = subprocess.run([sys.executable, "-m", "snet", "graph", "--fused", "net.snet"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 0, result.stderr
    marked = [line for line in result.stdout.splitlines() if "fused chain 1, stage" in line]
    assert len(marked) == 8  # seven boxes and the filter
    assert all('fillcolor="#cfe8ff"' in line for line in marked)
    plain = subprocess.run([sys.executable, "-m", "snet", "graph", "net.snet"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "fused chain" not in plain.stdout


def test_a_box_that_forks_inside_a_compiled_chain_ends_the_child():
    def forks(a):
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            return {"a": a}
        return {"a": -1}  # the child returns into the run: it must end there

    net = snet.load("box b0 ((a) -> (a)); box f ((a) -> (a)); box b1 ((a) -> (a)); net p connect b0 .. f .. b1;",
                    boxes={"b0": inc, "f": forks, "b1": inc})
    out, _ = run(net, [{"a": 1}, {"a": 2}], workers=1)
    assert out == [{"a": 3}, {"a": 4}]


# -- input batches: a cheap chain at the network's entry takes its input many records at a time ----


CHEAP = "box b0 ((a) -> (a)); box b1 ((a) -> (a)); box b2 ((a) -> (a)); net p connect b0 .. b1 .. b2;"


def fail_at_3000(a):
    if a == 3001:  # (b0 added one)
        raise ValueError("three thousand")
    return {"a": a}


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_input_batches_keep_order_and_every_box_figure(workers):
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": inc, "b2": inc})
    records = [{"a": i} for i in range(6000)]
    fused, execution = run(net, records, workers=workers)
    unfused, _ = run(net, records, workers=workers, fuse=False)
    assert fused == unfused == [{"a": i + 3} for i in range(6000)]
    stats = execution.stats()
    assert {name: stats.boxes[name].calls for name in ("b0", "b1", "b2")} == {"b0": 6000, "b1": 6000, "b2": 6000}
    assert stats.records_in == stats.records_out == 6000


def test_input_batches_take_the_input_once_the_boxes_are_timed():
    """One record at a time, an input is a continuation of the worker's turn; a batch's records are not.

    With one worker: its first ``TIMED_CALLS`` records (64) go one at a time,
    the rest in batches.  (With several, each worker times the boxes for
    itself, and a worker finds the chain busy with another's walk more
    often on a free-threaded build: how many go one at a time depends on
    the machine.)
    """
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": inc, "b2": inc})
    out, execution = run(net, [{"a": i} for i in range(6000)], workers=1)
    assert out == [{"a": i + 3} for i in range(6000)]
    assert execution.stats().front.continuations < 600, execution.stats().front


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_inside_an_input_batch_comes_after_the_outputs_of_the_records_before_it(workers):
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": fail_at_3000, "b2": inc})
    got = []
    with pytest.raises(SNetBoxError, match="three thousand"):
        for out in net.run(({"a": i} for i in range(6000)), workers=workers):
            got.append(out)
    assert got == [{"a": i + 2} for i in range(3000)]


def test_a_bad_input_record_inside_an_input_batch_comes_after_the_outputs_before_it():
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": inc, "b2": inc})
    records = [{"a": i} for i in range(3000)] + [{"a": 3000, "<t>": 1.5}] + [{"a": i} for i in range(10)]
    records[1500] = {"a": 1500, "<t>": 7}  # a label not seen before: learnt, and the record goes through
    got = []
    with pytest.raises(snet.SNetRecordError, match=r"^error: input record 3001: tag <t> must hold an integer"):
        for out in net.run(records, workers=1):
            got.append(out)
    assert got == [{"a": i + 3, "<t>": 7} if i == 1500 else {"a": i + 3} for i in range(3000)]


def test_a_slow_chain_takes_its_input_one_record_at_a_time():
    """A chain whose walk is slow is not batched: its records' walks stay free to overlap on several workers."""
    def slow(a):
        time.sleep(0.0005)  # (releases the GIL)
        return {"a": a}

    net = snet.load("box b0 ((a) -> (a)); box s ((a) -> (a)); net p connect b0 .. s;",
                    boxes={"b0": inc, "s": slow})
    out, execution = run(net, [{"a": i} for i in range(300)], workers=1)
    assert out == [{"a": i + 1} for i in range(300)]
    assert execution.stats().front.continuations >= 300 - 1


# -- input runs: a cheap network whose entry is no chain walks its input records one after another -----


KEYED = "box score ((v, <k>) -> (s, <k>)); net keyed connect score ! <k>;"


def score(v, k):
    return {"s": (v * v + 17) % 1009, "<k>": k}


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_input_runs_keep_order_every_box_figure_and_each_keys_order(workers):
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": inc, "b2": inc})
    out, execution = run(net, [{"a": i} for i in range(6000)], workers=workers, fuse=False)
    assert out == [{"a": i + 3} for i in range(6000)]
    stats = execution.stats()
    assert {name: stats.boxes[name].calls for name in ("b0", "b1", "b2")} == {"b0": 6000, "b1": 6000, "b2": 6000}
    assert stats.records_in == stats.records_out == 6000
    keyed = snet.load(KEYED, boxes={"score": score})
    records = [{"v": i, "<k>": i % 64} for i in range(20_000)]
    got, execution = run(keyed, records, workers=workers, fuse=False)
    for k in (0, 17, 63):  # the replica of a key takes its records in order
        assert [r["s"] for r in got if r["<k>"] == k] == [score(r["v"], k)["s"] for r in records if r["<k>"] == k]
    assert sorted(map(repr, got)) == sorted(repr(score(r["v"], r["<k>"])) for r in records)
    # The replicas keep no state, and the 64 keys come back in turn: the split keeps their replicas rather
    # than dropping and building them again and again (docs/runtime.md, "Reclaimed replicas")
    assert execution.stats().front.entities.created < 400, execution.stats().front.entities


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_inside_an_input_run_comes_after_the_outputs_of_the_records_before_it(workers):
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": fail_at_3000, "b2": inc})
    got = []
    with pytest.raises(SNetBoxError, match="three thousand"):
        for out in net.run(({"a": i} for i in range(6000)), workers=workers, fuse=False):
            got.append(out)
    assert got == [{"a": i + 2} for i in range(3000)]


def test_a_bad_input_record_inside_an_input_run_comes_after_the_outputs_before_it():
    net = snet.load(CHEAP, boxes={"b0": inc, "b1": inc, "b2": inc})
    records = [{"a": i} for i in range(3000)] + [{"a": 3000, "<t>": 1.5}] + [{"a": i} for i in range(10)]
    got = []
    with pytest.raises(snet.SNetRecordError, match=r"^error: input record 3001: tag <t> must hold an integer"):
        for out in net.run(records, workers=1, fuse=False):
            got.append(out)
    assert got == [{"a": i + 3} for i in range(3000)]


def test_a_slow_network_takes_its_input_one_record_at_a_time():
    """A network whose records take long is not run: another worker admits the next record meanwhile.

    Record 200 waits for a second call of the box to begin: one comes only
    if another worker may admit record 201 while the first worker is inside
    the call (a run holds the input until its record's walk ends).
    """
    wait, overlapped = first_call_waits_for_a_second()

    def slow(a):
        if a < 200:
            time.sleep(0.0002)  # (releases the GIL)
            return {"a": a}
        return wait(a)

    net = snet.load("box s ((a) -> (a)); net p connect s;", boxes={"s": slow})
    out, _ = run(net, [{"a": i} for i in range(400)], workers=2, box_concurrency=2)
    assert out == [{"a": i} for i in range(400)]
    assert overlapped == [True]


# -- a fan-out inside a concurrent walk: its outputs walk the rest of the chain as parts ------------


def test_a_fan_out_inside_a_chain_walks_its_outputs_on_two_workers_and_keeps_their_order():
    """One record, 40 outputs: the other worker takes (steals) parts, so two calls of ``w`` overlap."""
    wait, overlapped = first_call_waits_for_a_second()
    net = snet.load("box fan ((<n>) -> (a)); box w ((a) -> (a)); net p connect fan .. w;",
                    boxes={"fan": lambda n: [{"a": i} for i in range(n)], "w": wait})
    assert len(lower(net.graph, net.boxes).fused) == 1
    out, execution = run(net, [{"<n>": 40}], workers=2, box_concurrency=2)
    assert overlapped == [True]
    assert out == [{"a": i} for i in range(40)]
    assert execution.stats().boxes["w"].calls == 40


@pytest.mark.parametrize("workers", [2, 4])
def test_records_fanned_out_in_a_chain_come_out_in_order_and_as_unfused(workers):
    def work(a):
        time.sleep(0.0002 * (a % 3))  # (releases the GIL: parts of several records overlap, finishing out of order)
        return {"a": a, "b": a * 2}

    source = ("box fan ((<n>, k) -> (a, k)); box work ((a) -> (a, b)); box last ((b) -> (c));"
              "net p connect fan .. work .. last;")
    boxes = {"fan": lambda n, k: [{"a": k * 100 + i, "k": k} for i in range(n)], "work": work,
             "last": lambda b: {"c": b + 1} if b % 4 else [{"c": b}, {"c": -b}]}
    net = snet.load(source, boxes=boxes)
    records = [{"<n>": (k * 7) % 11, "k": k} for k in range(60)]
    fused, execution = run(net, records, workers=workers)
    unfused, _ = run(net, records, workers=workers, fuse=False)
    reference, _ = run(net, records, engine="reference")
    assert fused == unfused == reference
    assert [list(r) for r in fused] == [list(r) for r in reference]
    stats = execution.stats()
    assert stats.boxes["work"].calls == sum((k * 7) % 11 for k in range(60))


def test_a_fan_out_in_a_chain_inside_a_split_and_a_star_gives_the_unfused_outputs():
    source = ("box fan ((<n>) -> (a)); box work ((a) -> (a)); box done ((a) -> (a, <stop>));"
              "net p connect ((fan .. work) !! <k>) .. (done ** {<stop>});")
    boxes = {"fan": lambda n: [{"a": i} for i in range(n)], "work": lambda a: {"a": a + 1},
             "done": lambda a: {"a": a, "<stop>": 1}}
    net = snet.load(source, boxes=boxes)
    records = [{"<n>": n % 5, "<k>": n % 3} for n in range(40)]
    for workers in (2, 4):
        fused, _ = run(net, records, workers=workers)
        unfused, _ = run(net, records, workers=workers, fuse=False)
        assert sorted(map(repr, fused)) == sorted(map(repr, unfused))  # (the split's order is the run's)
        assert len(fused) == sum(n % 5 for n in range(40))


# -- transparent splits: a split of boxes and filters alone is a stage of the chain ------------------------


def test_a_keyed_split_of_a_box_runs_as_one_chain_with_no_replica_per_key():
    net = snet.load(KEYED, boxes={"score": score})
    records = [{"v": i, "<k>": i % 64} for i in range(20_000)]
    for workers in (1, 2, 4):
        got, execution = run(net, records, workers=workers)
        # every record's output, each key's in its order (the chain keeps input order: one of the split's)
        assert got == [score(r["v"], r["<k>"]) for r in records]
        stats = execution.stats()
        assert stats.boxes["score"].calls == 20_000
        assert stats.front.entities.created < 10, stats.front.entities  # one chain, not a replica per key


TAGGED = ("box b0 ((a) -> (a, <t>) | (a)); box b1 ((a) -> (b) | (b, c)); box b2 ((b) -> (b));"
          "net p connect b0 .. (([{a} -> {a}] .. b1) DET <t>) .. b2;")


def tag_unless(missing):
    return lambda a: {"a": a} if a == missing else {"a": a, "<t>": a % 3}


def fan(a):
    return [{"b": a}, {"b": -a, "c": 0}] if a % 4 == 0 else {"b": a}


@pytest.mark.parametrize("det", ["!", "!!"])
@pytest.mark.parametrize("missing", [None, 700])
def test_a_split_inside_a_chain_gives_what_the_split_gives(det, missing):
    """Outputs in order, the split's error for a record without the tag (and the outputs before it), figures."""
    source = TAGGED.replace("DET", det)
    boxes = {"b0": tag_unless(missing), "b1": fan, "b2": lambda b: {"b": b + 1}}
    chains, net = chains_of(source, boxes)
    assert names(net, chains) == [["b0", "split", "filter", "b1", "b2"]]

    def outcome(**options):
        got = []
        try:
            for out in net.run([{"a": i} for i in range(1500)], **options):
                got.append(out)
        except snet.SNetRuntimeError as e:
            return got, str(e)
        return got, None

    reference = outcome(engine="reference")
    if missing is not None:
        assert reference[1].endswith("error: split cannot route record {a}: it lacks <t>"), reference[1]
    for workers in (1, 2, 4):
        for fuse in (True, False):
            got, error = outcome(engine="front", workers=workers, fuse=fuse)
            assert error == reference[1]
            if missing is not None and not (workers == 1 and fuse):
                # a failure stops the run; what is out by then depends on the schedule (and on replicas' order)
                assert all(out in reference[0] for out in got)
            elif fuse or det == "!!":  # the chain keeps input order: the one `!!` gives, and one `!` allows
                assert got == reference[0], (workers, fuse)
            else:  # `!`'s replicas: each value's records in order, the values' streams merged as they come
                assert sorted(map(repr, got)) == sorted(map(repr, reference[0]))
                for t in range(3):
                    assert [r for r in got if r["<t>"] == t] == [r for r in reference[0] if r["<t>"] == t]


def test_a_split_after_a_box_that_always_gives_its_tag_is_checked_by_the_box():
    """``b0``'s one variant holds ``<t>``, so the chain checks nothing at the split; a result without it is
    ``b0``'s error, as unfused."""
    source = "box b0 ((a) -> (a, <t>)); box b1 ((a) -> (b)); net p connect b0 .. (b1 !! <t>);"
    good = snet.load(source, boxes={"b0": lambda a: {"a": a, "<t>": a % 5}, "b1": lambda a: {"b": a}})
    out, _ = run(good, [{"a": i} for i in range(500)], workers=2)
    assert out == [{"b": i, "<t>": i % 5} for i in range(500)]
    bad = snet.load(source, boxes={"b0": lambda a: {"a": a} if a == 7 else {"a": a, "<t>": a}, "b1": lambda a: {"b": a}})
    for fuse in (True, False):
        with pytest.raises(SNetBoxError, match=r"box 'b0' emitted a record with labels \{a\}, which fits none"):
            run(bad, [{"a": i} for i in range(10)], workers=1, fuse=fuse)
