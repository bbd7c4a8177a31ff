"""Blocks allocated per record: FRONT's networks beside the loop a user writes.

    python3 bench/allocations.py

Builds the counting allocator of tests/runtime/alloc (it wraps CPython's
allocators and counts each new block) with the C compiler that builds snet,
then runs, in a child process with it installed, each network below with
one worker over 20,000 and 40,000 records, and the user's loop over the same
ten boxes (``record = {**record, **f(record["a"])}``, as
bench/test_bench_front.py writes it); the difference between the two sizes
over 20,000 is a record's cost.  Prints a Markdown table (docs/performance.md,
"Allocations per record").  GIL builds of CPython only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ALLOC = Path(__file__).resolve().parents[1] / "tests" / "runtime" / "alloc"
sys.path.insert(0, str(ALLOC))
from counter import build  # noqa: E402 (the counting allocator's build, shared with the test)

BOX = "".join(f"box b{i} ((a) -> (a));\n" for i in range(10)) + "box c0 ((z) -> (z));\n"
# Five filters in a row (one stage when fused: docs/runtime.md, "Filters in a row are one filter").
FIVE_FILTERS = ("[{a} -> {a, <t=1>}] .. [{a} -> {a, <u=2>}] .. [{a, <t>} -> {a, <t=t+1>}] .. [{a} -> {a}]"
                " .. [{a} -> {a, <v>}]")
NETWORKS = [
    ("one box", "net n connect b0;"),
    ("ten boxes", "net n connect " + " .. ".join(f"b{i}" for i in range(10)) + ";"),
    ("a box, then `(b1 | c0)`", "net n connect b0 .. (b1 | c0);"),
    ("a box, then `(b1 || c0)`", "net n connect b0 .. (b1 || c0);"),
    ("a box, then `(b1 ! <k>)`", "net n connect b0 .. (b1 ! <k>);"),
    ("a box, then `(b1 !! <k>)`", "net n connect b0 .. (b1 !! <k>);"),
    ("a box, then `[{a} -> {a, <t=1>}]`", "net n connect b0 .. [{a} -> {a, <t=1>}];"),
    ("a box, then `([{a} -> {a, <done>}] * {<done>})`", "net n connect b0 .. ([{a} -> {a, <done>}] * {<done>});"),
    ("a box, then five filters that add tags", "net n connect b0 .. " + FIVE_FILTERS + ";"),
]

LOOP = r'''
import ctypes, gc, sys
counting = ctypes.PyDLL(sys.argv[1]); counting.count.restype = ctypes.c_ulonglong; counting.install()
def ident(a):
    return {"a": a}
functions = [ident] * 10
def loop(records):
    out = []
    for record in records:
        for f in functions:
            record = {**record, **f(record["a"])}
        out.append(record)
    return out
N = 20_000
small = [{"a": i, "id": i, "<k>": i % 64} for i in range(N)]
large = [{"a": i, "id": i, "<k>": i % 64} for i in range(2 * N)]
loop(small[:100]); gc.disable()
c0 = counting.count(); loop(small); c1 = counting.count(); loop(large); c2 = counting.count()
print(((c2 - c1) - (c1 - c0)) / N)
'''


def main() -> None:
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        sys.exit("allocations.py: a GIL build of CPython only (free-threaded objects come from mimalloc)")
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        runs = [[f"{name}|{fuse}", BOX + source, fuse] for name, source in NETWORKS for fuse in (True, False)]
        done = subprocess.run([sys.executable, str(ALLOC / "measure.py"), str(lib)], input=json.dumps(runs),
                              capture_output=True, text=True, check=True)
        blocks = json.loads(done.stdout)
        loop = float(subprocess.run([sys.executable, "-c", LOOP, str(lib)], capture_output=True, text=True,
                                    check=True).stdout)
    print("| network, one worker | blocks a record, fused | unfused |")
    print("|---|---|---|")
    for name, _ in NETWORKS:
        cell = name.replace("|", "\\|")  # (a bar in a table cell, code or not, must be escaped)
        print(f"| {cell} | {blocks[f'{name}|True']:.2f} | {blocks[f'{name}|False']:.2f} |")
    print(f"| the user's loop over the ten boxes | {loop:.2f} | |")


if __name__ == "__main__":
    main()
