"""What the engine's per-box figures cost: the ten-box pipeline on two built source trees, side by side.

    python3 bench/histogram_against.py OLD_TREE [NEW_TREE] [--rounds N] [--records N]

OLD_TREE is another checkout, built (``git worktree add --detach /tmp/old
REV``, then ``python3 setup.py build_ext --inplace`` there); NEW_TREE
defaults to this one.  Each round runs one fresh process per tree,
alternating which goes first; each process runs the pipeline of
bench/test_bench_front.py (ten trivial boxes, one worker) three times and
reports the best processor time and clock time.  Two shapes: the trivial
boxes (FRONT times one call in 16 of a box that fast) and the same
pipeline with boxes of about 25 µs (every call timed, so every call is
placed in the histogram).  The figure is the ratio of the medians,
NEW / OLD, recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import sys, time
tree, shape, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, tree)
import snet, snet_front.runtime
assert snet.__file__.startswith(tree) and snet_front.runtime.__file__.startswith(tree)
STAGES = 10
pipe = "".join(f"box b{i} ((a) -> (a));\n" for i in range(STAGES)) + \
    "net pipe connect " + " .. ".join(f"b{i}" for i in range(STAGES)) + ";\n"

def inc(a):
    return {"a": a + 1}

def spin(a):  # about 25 us of Python: every call is timed
    x = 0
    for i in range(400):
        x += i
    return {"a": a + 1}

box = inc if shape == "trivial" else spin
net = snet.load(pipe, boxes={f"b{i}": box for i in range(STAGES)})
records = [{"a": i} for i in range(n)]
best_cpu = best_clock = float("inf")
for _ in range(3):
    c, t = time.process_time(), time.perf_counter()
    with net.run(records, workers=1) as ex:
        out = list(ex)
    best_cpu = min(best_cpu, time.process_time() - c)
    best_clock = min(best_clock, time.perf_counter() - t)
    assert len(out) == n
print(best_cpu, best_clock)
"""


def measure(tree: str, shape: str, records: int) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, tree, shape, str(records)], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=600)
    if done.returncode:
        sys.exit(f"the run in {tree} failed:\n{done.stderr}")
    cpu, clock = done.stdout.split()
    return float(cpu), float(clock)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default=os.path.dirname(HERE))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    for shape, records in (("trivial", args.records), ("timed", args.records // 20)):
        old: list[tuple[float, float]] = []
        new: list[tuple[float, float]] = []
        for i in range(args.rounds):
            pair = [(old, args.old), (new, args.new)]
            for into, tree in (pair if i % 2 == 0 else pair[::-1]):
                into.append(measure(os.path.abspath(tree), shape, records))
        cpu = statistics.median(c for c, _ in new) / statistics.median(c for c, _ in old)
        clock = statistics.median(t for _, t in new) / statistics.median(t for _, t in old)
        print(f"{shape} boxes, {records:,} records: processor time new/old {cpu:.3f}, clock {clock:.3f} "
              f"(medians of {args.rounds}; old {statistics.median(c for c, _ in old):.3f} s, "
              f"new {statistics.median(c for c, _ in new):.3f} s of processor time)")


if __name__ == "__main__":
    main()
