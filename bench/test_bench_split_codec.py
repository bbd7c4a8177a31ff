"""A Spark split's chunk of records on the wire: one pickle (what the split runner sends) against an Arrow IPC stream.

The records of a stateless split's chunk go to the executor and their
outputs come back (docs/spark.md, "One batch is one single-stage Spark
job"); both ends hold Python dicts, the box's arguments and results.  The
candidate here is what Arrow on that path would have to do to give back the
records sent, exactly: check that every record has the same labels in the
same order and that each label holds one exact type Arrow keeps (a column
of ints with one ``True`` would come back all ints, one of ints and floats
all floats), build the columns, write the stream, and on the other side
read it and make the dicts again.  The baseline is ``pickle`` of the list,
protocol 5, the runner's own (``snet.spark.tasks.dumps``).  Both are timed
for a chunk there and its outputs back, in one process, alternated, with
the cyclic collector paused as the driver and the tasks pause it.

A second candidate is a lower bound for any Arrow form of the chunk: the
same round trip with no check at all (``RecordBatch.from_pylist``, the
stream, ``to_pylist``: pyarrow's own loops in C, which keep the first
record's labels and convert silently, so it is not exact).  Both Arrow
candidates send the outputs back flat and make the list per input that
the driver needs on arrival; the pickle sends the lists.  If even that
costs what the pickle does, no check however cheap makes Arrow the faster
form for records that are Python dicts at both ends.

    python3 -m pytest bench/test_bench_split_codec.py --benchmark-only -s
"""

from __future__ import annotations

import operator
import pickle

import pytest

from conftest import paired
from snet.gcpause import gc_paused

pa = pytest.importorskip("pyarrow")

RECORDS = 20_000
ARROW_TYPES = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_(), bytes: pa.binary()}


def arrow_encode(records: list[dict]) -> bytes | None:
    """The records as one IPC stream if their round trip is exact, else None (they would go pickled)."""
    labels = tuple(records[0])
    if len(set(map(tuple, records))) != 1:
        return None
    arrays = []
    for column in zip(*map(operator.itemgetter(*labels), records)):
        kinds = set(map(type, column))
        if len(kinds) != 1 or (kind := kinds.pop()) not in ARROW_TYPES:
            return None
        arrays.append(pa.array(column, type=ARROW_TYPES[kind]))
    batch = pa.RecordBatch.from_arrays(arrays, names=list(labels))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def arrow_decode(data: bytes) -> list[dict]:
    return pa.ipc.open_stream(data).read_all().to_pylist()


def unchecked_encode(records: list[dict]) -> bytes:
    batch = pa.RecordBatch.from_pylist(records)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def unchecked_round_trip(records: list[dict]) -> list[dict]:
    outputs = arrow_decode(pickle.loads(pickle.dumps(unchecked_encode(records), 5)))
    return per_input(arrow_decode(unchecked_encode(outputs)))


def arrow_round_trip(records: list[dict]) -> list[dict]:
    data = arrow_encode(records)
    assert data is not None
    outputs = arrow_decode(pickle.loads(pickle.dumps(data, 5)))  # (the bytes inside the task's pickle)
    back = arrow_encode(outputs)  # a box that returns its record: one output each, sent back flat
    assert back is not None
    return per_input(arrow_decode(back))


def per_input(flat: list[dict]) -> list[list[dict]]:
    """The outputs as the driver needs them, a list per input (one output each here), made in C."""
    return list(map(list, zip(flat)))


def pickle_round_trip(records: list[dict]) -> list[list[dict]]:
    outputs = pickle.loads(pickle.dumps(records, 5))
    return pickle.loads(pickle.dumps(per_input(outputs), 5))  # a list per input, as the tasks send them


SHAPES = {
    "tag_and_int": lambda i: {"v": i, "<k>": i % 64},
    "five_fields": lambda i: {"name": f"user-{i}", "score": i / 7, "ok": i % 3 == 0, "n": i * 31, "<k>": i % 64},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_chunk_there_and_back_pickled_against_arrow(benchmark, report, shape):
    records = [SHAPES[shape](i) for i in range(RECORDS)]
    assert arrow_round_trip(records) == per_input(records) == pickle_round_trip(records)
    assert [type(v) for v in arrow_round_trip(records)[-1][0].values()] == [type(v) for v in records[-1].values()]
    assert unchecked_round_trip(records) == per_input(records)
    with gc_paused():
        figures = paired(lambda: arrow_round_trip(records), lambda: pickle_round_trip(records), rounds=15)
        bound = paired(lambda: unchecked_round_trip(records), lambda: pickle_round_trip(records), rounds=15)
    benchmark.pedantic(pickle_round_trip, args=(records,), rounds=1, iterations=1)
    report(arrow_over_pickle=figures["ratio"], arrow_us=figures["candidate_s"] / RECORDS * 1e6,
           pickle_us=figures["baseline_s"] / RECORDS * 1e6, unchecked_over_pickle=bound["ratio"],
           unchecked_us=bound["candidate_s"] / RECORDS * 1e6)
