"""Replica state as bytes, split selection and grouping, without Spark.

The executor side (:mod:`snet.spark.splits.replicas`) is plain Python, so its
state handling is tested here in-process: running a stream of records in
one group must equal running it cut into many groups, with the state
carried between them as bytes, whatever the cut.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import handmade  # noqa: E402

from snet.core.chains import CountedChain  # noqa: E402
from snet.errors import SNetBoxError  # noqa: E402
from snet.spark.splits.replicas import Group, ReplicaHost, TaskInput, dump_replica, load_replica  # noqa: E402
from snet.plan import Kind  # noqa: E402
from snet.spg.lower import lower  # noqa: E402
from snet.splitexec import select_splits  # noqa: E402


def split_id(graph):
    return next(n.id for n in graph.nodes if n.kind == "split")


RECORDS = [{"a": 1, "<k>": 0}, {"a": 2, "<k>": 0}, {"b": 10, "<k>": 0}, {"c": 5, "<k>": 0},
           {"b": 20, "<k>": 0}, {"a": 3, "<k>": 0}]


def run_in_groups(host, records, cut):
    """Feed ``records`` to one replica in groups of ``cut``, carrying the state between them."""
    state, outputs, seq = None, [], 0
    for start in range(0, len(records), cut):
        items = []
        for record in records[start:start + cut]:
            items.append(((seq, 0, 0), record, state is None and not items))
            seq += 1
        result = host.run_group(Group(0, 0, state, items))
        assert result.error is None
        state = result.state
        outputs.extend(outs for _, outs in result.outputs)
    return outputs, state, result.warnings


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 6])
def test_state_across_groups_equals_one_group(cut):
    graph = handmade.sync_split()
    host = ReplicaHost(graph, {}, split_id(graph))
    whole, _, _ = run_in_groups(host, RECORDS, len(RECORDS))
    pieces, _, _ = run_in_groups(host, RECORDS, cut)
    assert pieces == whole
    assert whole == [[], [{"a": 2, "<k>": 0}], [{"a": 1, "b": 10, "<k>": 0}], [{"c": 5, "<k>": 0}],
                     [{"b": 20, "<k>": 0}], [{"a": 3, "<k>": 0}]]


def test_state_holds_only_dynamic_objects():
    graph = handmade.sync_split()
    host = ReplicaHost(graph, {}, split_id(graph))
    _, state, warnings = run_in_groups(host, RECORDS[:1], 1)
    assert warnings == ["hand.snet:1:19: warning: synchro-cell discarded with 1 of 2 patterns filled"]
    # The program text, the nodes and the compiled operators stay behind as ids.
    assert b"net hand connect" not in state
    assert b"SyncPatterns" not in state and b"SyncNode" not in state
    assert len(state) < 400
    # Plain pickle cannot load it: it holds persistent ids that only a host resolves.
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(state)
    target = load_replica(host, state)
    again, _ = dump_replica(host, target)
    assert again == state


def test_a_second_host_resumes_the_state():
    graph = handmade.sync_split()
    first = ReplicaHost(graph, {}, split_id(graph))
    second = ReplicaHost(graph, {}, split_id(graph))  # another worker process, say
    _, state, _ = run_in_groups(first, RECORDS[:2], 2)
    result = second.run_group(Group(0, 0, state, [((5, 0, 0), {"b": 7, "<k>": 0}, False)]))
    assert result.outputs == [((5, 0, 0), [{"a": 1, "b": 7, "<k>": 0}])]
    assert result.warnings == []


def test_box_error_is_returned_as_data():
    graph = handmade.box_split()

    def work(v, k):
        if v == 2:
            raise ValueError("two")
        return {"v": v, "<k>": k}

    host = ReplicaHost(graph, {"work": work}, split_id(graph))
    items = [((i, 0, 0), {"v": i, "<k>": 0}, False) for i in range(4)]
    out = host.run_task(TaskInput("run", [Group(-1, None, None, items)]))
    result = out.results[0]
    assert [k for k, _ in result.outputs] == [(0, 0, 0), (1, 0, 0)]
    assert result.error.key == (2, 0, 0)
    error = result.error.rebuild()
    assert isinstance(error, SNetBoxError)
    assert "box 'work' raised ValueError: two (input record {v, <k>})" in error.render()
    assert "raise ValueError(\"two\")" in error.detail
    assert out.box_calls["work"][0] == 2  # calls that returned, as the local statistics count them


def test_selection_rules():
    boxed = handmade.box_split()
    pure = handmade.sync_split()
    assert select_splits(boxed, "auto") == {split_id(boxed)}
    assert select_splits(pure, "auto") == frozenset()  # filters and cells only: stays local
    assert select_splits(pure, "all") == {split_id(pure)}
    assert select_splits(pure, "hand.snet:1:33") == {split_id(pure)}
    assert select_splits(pure, "1:33") == {split_id(pure)}
    assert select_splits(pure, "hand") == {split_id(pure)}  # a net name: its outermost splits
    from snet.errors import SNetUsageError
    with pytest.raises(SNetUsageError, match="names no split or net.*hand.snet:1:33"):
        select_splits(pure, "2:7")

    class Selection:  # all that lowering reads of a split executor
        selected = select_splits(pure, "all")

    plan = lower(pure, {}, executor=Selection())
    assert [n.kind for n in plan.nodes if n.id in Selection.selected] == [Kind.EXECUTOR_SPLIT]
    assert plan.root.holds_executor_split
    assert not [n for n in plan.nodes if n.deterministic and n.holds_executor_split]  # nothing to flush before


def test_selection_on_a_compiled_program_with_nested_splits():
    from snet.spg.build import compile_file

    path = Path(__file__).resolve().parents[1] / "conformance" / "cases" / "fibonacci" / "net.snet"
    graph = compile_file(str(path.resolve()))
    splits = {n.id: n for n in graph.nodes if n.kind == "split"}
    outer = [i for i, n in splits.items() if n.tag == "<id>"]
    inner = [i for i, n in splits.items() if n.tag == "<m>"]
    assert len(outer) == 1 and len(inner) == 1
    assert select_splits(graph, "auto") == frozenset()  # filters and cells only
    assert select_splits(graph, "all") == set(outer)  # the nested split runs inside the outer replicas
    assert select_splits(graph, "join") == set(inner)  # a net name
    position = splits[inner[0]].span
    assert select_splits(graph, f"{position.line}:{position.column}") == set(inner)
    assert select_splits(graph, f"join,{splits[outer[0]].span.location}") == set(outer)  # outermost kept


CHAIN = """
net chain {
  box inc ((a, <k>) -> (a, <k>));
  box fan ((a, <k>) -> (a, <k>));
  box tag ((a, <k>) -> (a, <k>, <t>));
} connect (inc .. fan .. tag) ! <k>;
"""


@pytest.mark.parametrize("maker", ["front", "python"])
def test_a_chain_of_boxes_gives_what_the_engine_gives_and_counts_every_call(maker):
    """A stateless chain of boxes on an executor takes compiled walks (snet.core.chains.CountedChain), not the
    engine: the same outputs per item, the same error at the same item, every call counted, and the timed
    calls standing for the rest in the seconds and the histogram.  Its walks are FRONT's (``make_walk``, in C)
    where the compiled runtime imports, else Python's (``compile_walk``): both are checked."""
    import snet
    from snet.core.chains import compile_walk
    from snet.spark.tasks import front_imports
    from snet.stats import LATENCY_BUCKETS

    def inc(a, k):
        return {"a": a + 1, "<k>": k}

    def fan(a, k):
        if a % 7 == 0:
            return None
        return [{"a": a, "<k>": k}, {"a": a + 10, "<k>": k}] if a % 3 == 0 else {"a": a, "<k>": k}

    def tag(a, k):
        if a == 1000:
            raise ValueError("a thousand")
        return {"a": a, "<k>": k, "<t>": a % 2}

    net = snet.load(CHAIN, boxes={"inc": inc, "fan": fan, "tag": tag})
    walked = ReplicaHost(net.graph, net.boxes, split_id(net.graph))
    engine = ReplicaHost(net.graph, net.boxes, split_id(net.graph))
    assert walked.chain is not None
    if maker == "front":
        if not front_imports():
            pytest.skip("needs FRONT's compiled runtime (snet_front)")
        from snet_front.runtime import make_walk

        assert walked.chain.make is make_walk  # what a task with the runtime takes
    else:
        walked.chain = CountedChain(walked.chain.callers, compile_walk)
    engine.chain = None  # the reference engine's path
    records = [{"a": i, "<k>": i % 4} if i % 5 else {"<k>": i % 4, "a": i, "b": "x"} for i in range(600)]
    # a stateless operand's groups are bare (the runner's equal chunks): outputs aligned with the records
    tasks = [TaskInput("run", [Group(-1, 0, None, records[start:start + 150], True)]) for start in range(0, 600, 150)]
    for task in tasks:
        got, want = walked.run_task(task), engine.run_task(task)
        assert got.results[0].aligned and want.results[0].aligned
        assert got.results[0].outputs == want.results[0].outputs and got.results[0].error is None
        assert [list(r) for outs in got.results[0].outputs for r in outs] == \
            [list(r) for outs in want.results[0].outputs for r in outs]  # labels in the same order
        for name in ("inc", "fan", "tag"):
            assert got.box_calls[name][0] == want.box_calls[name][0]
    calls = got.box_calls["tag"][0]
    assert calls > 100 and len(got.box_calls["tag"][2]) == LATENCY_BUCKETS
    assert got.box_calls["tag"][1] > 0 and abs(sum(got.box_calls["tag"][2]) - calls) <= 2 * CountedChain.SAMPLE_EVERY

    failing = [{"a": 990 + i, "<k>": 0} for i in range(20)]  # 999 + 1 fails in tag
    got = walked.run_task(TaskInput("run", [Group(-1, 0, None, failing, True)]))
    want = engine.run_task(TaskInput("run", [Group(-1, 0, None, failing, True)]))
    assert got.results[0].outputs == want.results[0].outputs
    assert got.results[0].error.key == want.results[0].error.key == (9,)
    assert got.results[0].error.message == want.results[0].error.message
    assert "box 'tag' raised ValueError: a thousand" in got.results[0].error.rebuild().render()
    assert {name: entry[0] for name, entry in got.box_calls.items()} == \
        {name: entry[0] for name, entry in want.box_calls.items()}  # a call that raised is not counted

