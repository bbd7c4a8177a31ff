"""A box that kills its Python worker on an executor: the box and the record are named, earlier outputs kept.

The session's master is ``local[2,2]``: Spark tries each task twice, both
attempts die, the job fails, and snet runs the batch again with the groups
in child processes to find the record (snet.spark.crash).  The boxes live in
a ``net.py`` beside the network, shipped to the executors as users' boxes are.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

import pytest

from snet.errors import SNetBoxError, SNetRuntimeError
from snet.spark.crash import looks_like_crash

pytestmark = pytest.mark.spark

SPLIT = "net crashing {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n"
# a synchro-cell in each replica: the state of earlier batches travels with the crashed batch
STATEFUL = "net crashing {\n  box f((a, <k>) -> (a));\n} connect ([| {a, <k>}, {b} |] .. f) ! <k>;\n"

EXITING = "import os\n\ndef f(a, k):\n    if a == 7:\n        os._exit(3)\n    return {'a': a}\n"
SEGFAULT = ("import ctypes\n\ndef f(a, k):\n    if a == 7:\n        ctypes.string_at(0)  # reads address 0: SIGSEGV\n"
            "    return {'a': a}\n")


def load(tmp_path, source: str, boxes: str):
    import snet

    (tmp_path / "net.snet").write_text(source)
    (tmp_path / "net.py").write_text(boxes)
    return snet.load(str(tmp_path / "net.snet"))


def run_until_error(net, records, **options):
    """The outputs the run gave, and the error it ended with."""
    outputs = []
    execution = net.run(records, **options)
    with pytest.raises(SNetRuntimeError) as error:
        for record in execution:
            outputs.append(record)
    return outputs, error.value


def values(records) -> list:
    return [r["a"] for r in records]


def test_a_box_that_exits_is_named_with_its_input_and_earlier_outputs_are_kept(spark_options, tmp_path, caplog):
    net = load(tmp_path, SPLIT, EXITING)
    records = [{"a": i, "<k>": i % 3} for i in range(12)]
    with caplog.at_level(logging.WARNING, logger="snet.spark"):
        outputs, error = run_until_error(net, records, **spark_options(spark_batch=100))
    assert isinstance(error, SNetBoxError)
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    assert error.span is not None and error.span.location.endswith("net.snet:3:11")
    assert 'the split\'s input record: {"a":7,"<k>":1}' in error.detail
    assert "Python worker exited unexpectedly" in error.detail
    # the inputs before the failing one, each once: what a local run gives before the same record
    assert sorted(values(outputs)) == list(range(7))
    assert any("a Python worker died; running the batch again" in m for m in caplog.messages)


def test_a_segfault_in_a_box_is_named(spark_options, tmp_path):
    net = load(tmp_path, SPLIT, SEGFAULT)
    records = [{"a": i, "<k>": i % 2} for i in range(10)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=100))
    assert error.message == "box 'f' ended its Python worker (killed by SIGSEGV) on input (a=7, <k>=1)"
    assert sorted(values(outputs)) == list(range(7))


def test_a_crash_in_a_later_batch_of_a_stateful_split_keeps_every_earlier_output(spark_options, tmp_path):
    net = load(tmp_path, STATEFUL, EXITING)
    # b values first fill each replica's cell in batch 1; a values pair with them later
    records = [{"b": 100 + k, "<k>": k} for k in range(3)] + [{"a": i, "<k>": i % 3} for i in range(12)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=4))
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    # the first a of each tag pairs with its b (stored in batch 1), later ones pass the fired cell
    assert sorted(values(outputs)) == list(range(7))
    assert sorted(r.get("b") for r in outputs if "b" in r) == [100, 101, 102]


FLAKY = '''
import os

COUNT = {path!r}

def f(a, k):
    if a == 5:
        with open(COUNT, "a+") as counter:
            counter.seek(0)
            deaths = len(counter.read())
            if deaths < 2:  # both of Spark's attempts die; the crash diagnosis's run lives
                counter.write("x")
                counter.flush()
                os._exit(9)
    return {{"a": a}}
'''


def test_a_worker_that_dies_only_twice_gives_the_exact_output(spark_options, tmp_path, caplog):
    count = tmp_path / "deaths"
    net = load(tmp_path, SPLIT, FLAKY.format(path=str(count)))
    records = [{"a": i, "<k>": i % 3} for i in range(9)]
    with caplog.at_level(logging.WARNING, logger="snet.spark"):
        outputs = list(net.run(records, **spark_options(spark_batch=100)))
    assert count.read_text() == "xx"  # Spark's two attempts did die
    assert Counter(json.dumps(r) for r in outputs) == Counter(json.dumps({"a": i}) for i in range(9))
    assert any("the batch ran again and completed" in m for m in caplog.messages)


def test_crash_texts_are_told_from_python_errors():
    assert looks_like_crash("org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)")
    assert looks_like_crash("ExecutorLostFailure (executor 1 exited caused by one of the running tasks)")
    assert not looks_like_crash("pyspark.errors.exceptions.base.PySparkRuntimeError: ModuleNotFoundError: x")


def test_the_dataframe_path_names_the_crash_too(spark_options, tmp_path):
    """``snet.path=dataframe`` (the Spark Connect path): the diagnosis runs through mapInArrow."""
    net = load(tmp_path, SPLIT, EXITING)
    records = [{"a": i, "<k>": i % 3} for i in range(9)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=100,
                                                                    spark_conf={"snet.path": "dataframe"}))
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    assert sorted(values(outputs)) == list(range(7))
