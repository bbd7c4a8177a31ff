"""The FRONT engine: overhead, stress tests, parallelism and stealing, as side-by-side ratios.

    python3 -m pytest bench/test_bench_front.py --benchmark-only -s

1. ten trivial boxes in a pipeline, 100,000 records with one inherited
   field, one worker, against the loop a user would write calling the same
   boxes, ``record = {**record, **f(record["a"])}``: the boxes fused into one
   chain (the default; target 1.3x) and each box an entity of its own
   (``fuse=False``); the loop that builds each record with a dict
   comprehension and the loop through the semantic core's box callers are
   further figures;
2. Fibonacci, PowerOfTwo and both sieves: FRONT against the reference
   engine, one worker each;
3. boxes that release the GIL (about 1 ms each): two workers against one
   (target: at least 1.7x);
4. one dominant GIL-releasing box in a pipeline, two workers: box
   concurrency 2 against 1 (target: at least 1.6x);
5. an unbalanced network (one input fans out into many slow calls):
   stealing on against off, each box an entity of its own (``fuse=False``),
   and the fused run's time beside it.

Each benchmark checks its result before timing it; the figures are ratios
of medians of runs interleaved in one process (bench/conftest.py), and are
recorded in docs/performance.md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import snet
from conftest import paired

ROOT = Path(__file__).resolve().parents[1]
NETS = ROOT / "tests" / "runtime" / "nets"
CASES = ROOT / "tests" / "conformance" / "cases"  # the repository's copy of the shared suite


def drain(net, records, **options):
    with net.run(records, engine=options.pop("engine", "front"), **options) as execution:
        return list(execution)


# -- 1. overhead per box call ---------------------------------------------------

N = 100_000
STAGES = 10
PIPE = "".join(f"box b{i} ((a) -> (a));\n" for i in range(STAGES)) + \
    "net pipe connect " + " .. ".join(f"b{i}" for i in range(STAGES)) + ";\n"


def inc(a):
    return {"a": a + 1}


PIPE_BOXES = {f"b{i}": inc for i in range(STAGES)}
RECORDS = [{"a": i, "id": i} for i in range(N)]


def plain_loop():
    """What a user would write instead of the network: call each box, merge its result into the record."""
    out = []
    functions = [PIPE_BOXES[f"b{i}"] for i in range(STAGES)]
    for record in RECORDS:
        for f in functions:
            record = {**record, **f(record["a"])}
        out.append(record)
    return out


def comprehension_loop():
    """The same, dropping the consumed label with a dict comprehension before merging (a second figure)."""
    out = []
    functions = [PIPE_BOXES[f"b{i}"] for i in range(STAGES)]
    for record in RECORDS:
        for f in functions:
            result = f(record["a"])
            record = {**{k: v for k, v in record.items() if k != "a"}, **result}
        out.append(record)
    return out


def test_pipeline_one_worker_against_a_plain_loop(benchmark, report):
    from snet.plan import Kind
    from snet.spg.lower import lower

    net = snet.load(PIPE, boxes=PIPE_BOXES)
    callers = [n.call for n in lower(net.graph, PIPE_BOXES).nodes if n.kind == Kind.BOX]

    def engine():
        return drain(net, RECORDS, workers=1)

    def unfused():
        """Each box an entity of its own (``--no-fuse``): the figure before fusion."""
        return drain(net, RECORDS, workers=1, fuse=False)

    def caller_loop():
        """The same loop through the semantic core's box callers: what any engine must do per call."""
        out = []
        for record in RECORDS:
            for call in callers:
                record = call(record)[0]
            out.append(record)
        return out

    assert engine() == unfused() == plain_loop() == comprehension_loop() == caller_loop()
    benchmark.pedantic(engine, rounds=1, iterations=1)
    figures = paired(engine, plain_loop, rounds=5)
    separate = paired(unfused, plain_loop, rounds=5)
    comprehension = paired(engine, comprehension_loop, rounds=3)
    core = paired(engine, caller_loop, rounds=3)
    hop = figures["candidate_s"] / (N * STAGES)
    report(box_calls_per_second=N * STAGES / figures["candidate_s"], us_per_hop=hop * 1e6,
           loop_us_per_hop=figures["baseline_s"] / (N * STAGES) * 1e6, ratio_to_loop=figures["ratio"],
           unfused_us_per_hop=separate["candidate_s"] / (N * STAGES) * 1e6, unfused_ratio_to_loop=separate["ratio"],
           ratio_to_comprehension_loop=comprehension["ratio"], ratio_to_box_caller_loop=core["ratio"])


# -- 2. stress tests against the reference engine ---------------------------------

def _sieve_feedback_boxes():
    sys.path.insert(0, str(NETS))
    try:
        import sieve_feedback
    finally:
        sys.path.remove(str(NETS))
    return sieve_feedback


STRESS = {
    # name: (net file, boxes, records, expected output count, rounds)
    # Runs of a tenth of a second get more rounds: their medians are noisier.
    "fibonacci": (NETS / "fibonacci.snet", None, [{"<n>": 16}], 1, 9),
    "poweroftwo": (NETS / "poweroftwo.snet", None, [{"<n>": 12}], 1, 9),
    "sieve_star": (CASES / "sieve_star" / "net.snet", None, [{"<limit>": 600}], 109, 9),
    "sieve_feedback": (NETS / "sieve_feedback.snet", "feedback",
                       [{"state": ()}] + [{"inval": i} for i in range(2, 5001)], 669, 3),
}


def _stress(name, benchmark, report):
    path, boxes, records, count, rounds = STRESS[name]
    net = snet.load(str(path), boxes=_sieve_feedback_boxes() if boxes else None)

    def front():
        return drain(net, records, workers=1)

    def ref():
        return drain(net, records, engine="reference")

    got, expected = front(), ref()
    assert len(got) == count and sorted(map(str, got)) == sorted(map(str, expected))
    benchmark.pedantic(front, rounds=1, iterations=1)
    figures = paired(front, ref, rounds=rounds)
    report(front_s=figures["candidate_s"], reference_s=figures["baseline_s"],
           speedup_over_reference=1 / figures["ratio"])


def test_fibonacci_against_reference(benchmark, report):
    _stress("fibonacci", benchmark, report)


def test_poweroftwo_against_reference(benchmark, report):
    _stress("poweroftwo", benchmark, report)


def test_sieve_star_against_reference(benchmark, report):
    _stress("sieve_star", benchmark, report)


def test_sieve_feedback_against_reference(benchmark, report):
    _stress("sieve_feedback", benchmark, report)


# -- 3.-5. parallelism -------------------------------------------------------------

def nap(a):
    time.sleep(0.001)  # about 1 ms, GIL released (like I/O, NumPy, hashlib)
    return {"a": a}


def quick(a):
    return {"a": a + 1}


NAPS = "box nap1 ((a) -> (a)); box nap2 ((a) -> (a));\nnet naps connect nap1 .. nap2;\n"
NAP_BOXES = {"nap1": nap, "nap2": nap}
NAP_RECORDS = [{"a": i} for i in range(200)]


def test_gil_releasing_boxes_two_workers_against_one(benchmark, report):
    net = snet.load(NAPS, boxes=NAP_BOXES)

    def two():
        return drain(net, NAP_RECORDS, workers=2)

    def one():
        return drain(net, NAP_RECORDS, workers=1)

    assert two() == one() == NAP_RECORDS
    benchmark.pedantic(two, rounds=1, iterations=1)
    figures = paired(two, one, rounds=5)
    report(two_workers_s=figures["candidate_s"], one_worker_s=figures["baseline_s"],
           speedup=1 / figures["ratio"])


DOMINANT = "box q1 ((a) -> (a)); box slow ((a) -> (a)); box q2 ((a) -> (a));\n" \
           "net dominant connect q1 .. slow .. q2;\n"
DOMINANT_BOXES = {"q1": quick, "slow": nap, "q2": quick}


def test_dominant_box_concurrency_two_against_one(benchmark, report):
    net = snet.load(DOMINANT, boxes=DOMINANT_BOXES)

    def concurrent():
        return drain(net, NAP_RECORDS, workers=2, box_concurrency=2)

    def sequential():
        return drain(net, NAP_RECORDS, workers=2, box_concurrency=1)

    expected = [{"a": i + 2} for i in range(200)]
    assert concurrent() == sequential() == expected
    benchmark.pedantic(concurrent, rounds=1, iterations=1)
    figures = paired(concurrent, sequential, rounds=5)
    report(concurrency_2_s=figures["candidate_s"], concurrency_1_s=figures["baseline_s"],
           speedup=1 / figures["ratio"])


FANOUT = "box fan ((<n>) -> (a)); box work ((a) -> (a));\nnet fanout connect fan .. work;\n"


def fan(n):
    return [{"a": i} for i in range(n)]


def test_unbalanced_network_stealing_on_against_off(benchmark, report):
    net = snet.load(FANOUT, boxes={"fan": fan, "work": nap})
    records = [{"<n>": 200}]  # one input: every licence starts with the worker that read it

    # Each box an entity of its own: stealing moves licences between the workers' lists.  Fused, `fan .. work`
    # is one chain, whose walk hands the one record's 200 outputs on as parts that the other worker takes
    # (docs/runtime.md, "Fusion"): the fused figure is reported beside, and should be the unfused one.
    def stealing():
        return drain(net, records, workers=2, steal=True, fuse=False)

    def no_stealing():
        return drain(net, records, workers=2, steal=False, fuse=False)

    def fused():
        return drain(net, records, workers=2)

    assert stealing() == no_stealing() == fused() == [{"a": i} for i in range(200)]
    benchmark.pedantic(stealing, rounds=1, iterations=1)
    figures = paired(stealing, no_stealing, rounds=5)
    against_fused = paired(stealing, fused, rounds=5)
    report(steal_s=figures["candidate_s"], no_steal_s=figures["baseline_s"], speedup=1 / figures["ratio"],
           fused_s=against_fused["baseline_s"], unfused_stealing_against_fused=1 / against_fused["ratio"])
