"""How FRONT's time falls as cores are added: a sweep for machines with many cores.

Two networks of pure-Python boxes that do a fixed amount of work per call
(no loop that runs until a time has passed), written in a box file beside
the network and loaded by ``snet.load`` as users' boxes are:

``pipeline``
    ``f .. g``: ``f`` turns ``acc = (acc * 31 + i + n) % 1_000_003``
    90,000 times, ``g`` is trivial; timed at each ``--workers`` count
    (``snet run -w N``).  With the GIL the workers take turns, so the time
    stays about flat; on a free-threaded CPython (``PYTHON_GIL=0``) they run
    at once.
``split``
    ``work ! <t>`` over 64 tag values: the same fixed loop, timed with the
    split in process at 2 workers (``snet run -w 2``) and in each
    ``--split-processes`` count of local processes (``snet run -w 2
    --split-processes N``), the time of starting the processes included.

Each point is the best of ``--repeat`` runs.  The split's outputs are
checked in every run against a run of the reference engine; the pipeline's,
once, on its first 32 records.  Speed-ups are over the first worker count
given (``speedup_over_first``: over 1 worker when the list starts with 1)
and over the split in process.  One JSON object per point on standard
output, then a summary line:

    python3 bench/cores_scaling.py --workers 1,2,4,8,16 --split-processes 2,4,8,16

(docs/performance.md's 16-core tables: ``--workers 1,2,4,8,12,16
--split-processes ""`` with ``PYTHON_GIL=0`` on CPython 3.13t, and
``--workers "" --split-processes 2,4,8,16 --per-tag 4 --repeat 2``.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import snet

LOOPS = 90_000

PIPELINE = "box f ((n) -> (n, s));\nbox g ((s) -> (t));\nnet p connect f .. g;\n"
SPLIT = "net fanned {\n  box work((x, <t>) -> (x, <t>));\n} connect work ! <t>;\n"

BOXES = f'''
def f(n):
    acc = n
    for i in range({LOOPS}):
        acc = (acc * 31 + i + n) % 1_000_003
    return {{"n": n, "s": acc}}


def g(s):
    return {{"t": s}}


def work(x, t):
    acc = x
    for i in range({LOOPS}):
        acc = (acc * 31 + i + x) % 1_000_003
    return {{"x": acc, "<t>": t}}
'''


def load(folder: str, name: str, source: str) -> snet.Network:
    with open(os.path.join(folder, name + ".snet"), "w") as out:
        out.write(source)
    with open(os.path.join(folder, name + ".py"), "w") as out:
        out.write(BOXES)
    return snet.load(os.path.join(folder, name + ".snet"))


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=counts, default=[1, 2, 4, 8, 16],
                        help="worker counts for the pipeline (comma-separated; empty: skip it)")
    parser.add_argument("--split-processes", type=counts, default=[2, 4, 8, 16],
                        help="process counts for the split (comma-separated; empty: skip it)")
    parser.add_argument("--records", type=int, default=800, help="records through the pipeline")
    parser.add_argument("--per-tag", type=int, default=12, help="records of each of the split's 64 tags")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each point; the best is reported")
    args = parser.parse_args(argv)

    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    common = {"python": sys.version.split()[0], "gil": gil, "cpus": os.cpu_count(),
              "load": round(os.getloadavg()[0], 2)}
    summary: dict[str, dict[int, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        if args.workers:
            net = load(folder, "pipeline", PIPELINE)
            records = [{"n": i} for i in range(args.records)]
            expected = sorted(o["t"] for o in net.run(records[:32], engine="reference"))
            assert sorted(o["t"] for o in net.run(records[:32], workers=2)) == expected
            first = None
            for workers in args.workers:
                seconds = best_of(args.repeat, lambda: sum(1 for _ in net.run(records, workers=workers)))
                first = first or seconds  # the time at the first worker count given
                point = {"network": "pipeline", "workers": workers, "records": args.records,
                         "seconds": round(seconds, 4), "speedup_over_first": round(first / seconds, 2),
                         "first_workers": args.workers[0], **common}
                summary.setdefault("pipeline", {})[workers] = point["speedup_over_first"]
                print(json.dumps(point), flush=True)
        if args.split_processes:
            net = load(folder, "fanned", SPLIT)
            records = [{"x": i, "<t>": i % 64} for i in range(64 * args.per_tag)]
            expected = sorted((o["<t>"], o["x"]) for o in net.run(records, engine="reference"))

            def run(**options):
                got = sorted((o["<t>"], o["x"]) for o in net.run(records, workers=2, **options))
                assert got == expected

            threads = best_of(args.repeat, run)
            print(json.dumps({"network": "split", "in_process_workers": 2, "calls": len(records),
                              "seconds": round(threads, 4), **common}), flush=True)
            for processes in args.split_processes:
                run(split_processes=processes)  # the fork server starts once
                seconds = best_of(args.repeat, lambda: run(split_processes=processes))
                point = {"network": "split", "split_processes": processes, "calls": len(records),
                         "seconds": round(seconds, 4), "speedup_over_in_process": round(threads / seconds, 2),
                         **common}
                summary.setdefault("split", {})[processes] = point["speedup_over_in_process"]
                print(json.dumps(point), flush=True)
    print(json.dumps({"summary": summary, **common}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
