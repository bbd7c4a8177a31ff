"""The front end's check stage against its parse stage, and the rts dialect against the standard one.

On the 6,001-line program of ``test_bench_frontend.py``, in one process,
the stages are timed in turn, interleaved, ``ROUNDS`` times; each figure is
the median of its rounds (CPU time).  The ratios are the point: the check
stage (name resolution, types, the W and S warnings with the record-flow
analysis) per parse, and each stage read in the rts dialect per the same
stage in the standard dialect (the dialect adds a linking pass and the
shadowing lookups, which a program without rts forms should not pay for).

    python3 bench/check_stage.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_bench_frontend import LINES, TEXT  # noqa: E402

from snet.options import CompileOptions  # noqa: E402
from snet.spg.build import analyse  # noqa: E402
from snet.spg.linking import Linker  # noqa: E402
from snet.syntax.parser import parse  # noqa: E402
from snet.typesys.scopes import resolve  # noqa: E402
from snet.typesys.slips import find_slips  # noqa: E402
from snet.typesys.types import TypeChecker  # noqa: E402
from snet.typesys.warnings import find_warnings  # noqa: E402

ROUNDS = 7


def timed(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def main() -> None:
    rts = CompileOptions(dialect="rts")
    program = parse(TEXT, "big.snet")

    def check(shadowing: bool) -> None:
        res = resolve(program, shadowing)
        find_warnings(res, TypeChecker(res))

    def check_without_slips() -> None:
        res = resolve(program)
        checker = TypeChecker(res)
        for net, _ in res.nets():
            checker.net_type(net)

    def slips_only() -> None:
        res = resolve(program)
        find_slips(res, TypeChecker(res))

    stages = {
        "parse, standard": lambda: parse(TEXT, "big.snet"),
        "parse, rts": lambda: parse(TEXT, "big.snet", dialect="rts"),
        "link (rts only)": lambda: Linker(()).link(program, "big.snet"),
        "check, standard": lambda: check(False),
        "check, rts": lambda: check(True),
        "check without warnings (resolve + types)": check_without_slips,
        "slip analysis (resolve + types + S1-S5)": slips_only,
        "analyse, standard": lambda: analyse(TEXT, "big.snet"),
        "analyse, rts": lambda: analyse(TEXT, "big.snet", options=rts),
    }
    times: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(ROUNDS):
        for name, function in stages.items():
            times[name].append(timed(function))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{LINES} lines, median CPU time of {ROUNDS} interleaved rounds (load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, value in median.items():
        print(f"  {name:45s} {value * 1000:8.1f} ms  {LINES / value:10,.0f} lines/s")
    print(f"  check / parse (standard):        {median['check, standard'] / median['parse, standard']:.2f}")
    print(f"  parse rts / standard:            {median['parse, rts'] / median['parse, standard']:.2f}")
    print(f"  check rts / standard:            {median['check, rts'] / median['check, standard']:.2f}")
    print(f"  analyse rts / standard:          {median['analyse, rts'] / median['analyse, standard']:.2f}")


if __name__ == "__main__":
    main()
