"""Records per second through the reference engine, against a plain Python loop.

A pipeline of ten trivial boxes; the baseline calls the same ten functions
on the same records in a loop, doing what the engine must do at minimum
(argument extraction, result merging with flow inheritance).

    python3 -m pytest bench/test_bench_reference.py --benchmark-only -s
"""

from __future__ import annotations

import snet
from conftest import paired

N = 20000
STAGES = 10
SRC = "".join(f"box b{i} ((a) -> (a));\n" for i in range(STAGES)) + \
    "net pipe connect " + " .. ".join(f"b{i}" for i in range(STAGES)) + ";\n"


def inc(a):
    return {"a": a + 1}


BOXES = {f"b{i}": inc for i in range(STAGES)}
RECORDS = [{"a": i, "id": i} for i in range(N)]


def plain_loop():
    out = []
    functions = [BOXES[f"b{i}"] for i in range(STAGES)]
    for record in RECORDS:
        for f in functions:
            result = f(record["a"])
            record = {**{k: v for k, v in record.items() if k != "a"}, **result}
        out.append(record)
    return out


def test_reference_pipeline(benchmark, report):
    net = snet.load(SRC, boxes=BOXES)

    def engine():
        return list(net.run(RECORDS, engine="reference"))

    assert engine() == plain_loop()
    benchmark.pedantic(engine, rounds=3, iterations=1)
    figures = paired(engine, plain_loop, rounds=3)
    report(records_per_second=N / figures["candidate_s"], loop_records_per_second=N / figures["baseline_s"],
           ratio_to_loop=figures["ratio"])
