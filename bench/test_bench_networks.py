"""FRONT with one worker against the reference engine on whole networks: time and peak memory.

    python3 -m pytest bench/test_bench_networks.py --benchmark-only -s

The networks are the split-heavy, fine-grained coordination the FRONT design
is for (targets: FRONT at least 2x faster than the reference engine,
its peak RSS at most the reference engine's):

* the conformance suite's ``fibonacci`` case (one request) at fib(22) and
  fib(25);
* PowerOfTwo (tests/runtime/nets/poweroftwo.snet);
* the sieve as a star of stages (the ``sieve_star`` case) and in the feedback
  form of state modelling (tests/runtime/nets/sieve_feedback.snet);
* the Fibonacci network of the language reference, §11.3
  (tests/runtime/nets/fibonacci.snet).

Each engine runs in a fresh Python process, so its peak resident set size
(``ru_maxrss``) is its own: the process loads the network, runs it to the
end and reports the run's time and its peak RSS (which includes the
interpreter and the imports, the same for both engines).  The two engines
alternate, ``ROUNDS`` times each; the figures are the medians, and the time
ratio is the reference engine's median over FRONT's (above 1: FRONT is
faster).  Both engines' outputs are checked to be the same multiset and the
expected count before anything is reported.

The children import snet from byte code, as an installed package does (pip
compiles it at install time): the byte code goes to a cache folder of this
benchmark run (``PYTHONPYCACHEPREFIX``), written by a first child that is not
timed, even where the environment says ``PYTHONDONTWRITEBYTECODE``.  Without
it every child compiles snet's modules from source in its timed first run
(about 10 ms of a 50 ms fib(18)).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NETS = ROOT / "tests" / "runtime" / "nets"
CASES = ROOT / "tests" / "conformance" / "cases"  # the repository's copy of the shared suite

# name: (net file, box module or None, input records, expected output count, rounds)
NETWORKS = {
    "fibonacci_case_22": (CASES / "fibonacci" / "net.snet", None, [{"<n>": 22, "<id>": 1}], 1, 3),
    "fibonacci_case_25": (CASES / "fibonacci" / "net.snet", None, [{"<n>": 25, "<id>": 1}], 1, 1),
    "poweroftwo": (NETS / "poweroftwo.snet", None, [{"<n>": 14}], 1, 3),
    "sieve_star": (CASES / "sieve_star" / "net.snet", None, [{"<limit>": 1000}], 168, 3),
    "sieve_feedback": (NETS / "sieve_feedback.snet", NETS / "sieve_feedback.py",
                       [{"state": []}] + [{"inval": i} for i in range(2, 10001)], 1229, 3),
    "fibonacci_reference": (NETS / "fibonacci.snet", None, [{"<n>": 18}], 1, 3),
}

# What each engine's process runs: load, run to the end, report.  The
# sieve's state is a tuple: JSON input gives a list, so it is converted.
CHILD = r"""
import json, resource, sys, time
import snet
spec = json.loads(sys.stdin.read())
net = snet.load(spec["net"], boxes=spec["boxes"])
records = [{k: tuple(v) if isinstance(v, list) else v for k, v in r.items()} for r in spec["records"]]
options = {"workers": 1} if spec["engine"] == "front" else {}
t = time.perf_counter()
with net.run(records, engine=spec["engine"], **options) as execution:
    out = list(execution)
    seconds = time.perf_counter() - t
    stats = execution.stats()
alive = stats.front.entities.alive if stats.front is not None else None
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "count": len(out), "outputs": sorted(map(str, out)), "alive": alive}))
"""


_PYCACHE: list = []  # the byte-code folder of this run, made and filled by the first child


def _byte_code_env(env: dict) -> dict:
    if not _PYCACHE:
        _PYCACHE.append(tempfile.mkdtemp(prefix="snet-bench-pycache-"))
        atexit.register(shutil.rmtree, _PYCACHE[0], True)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]
    return env


def run_engine(name: str, engine: str) -> dict:
    path, boxes, records, _, _ = NETWORKS[name]
    spec = {"net": str(path), "boxes": str(boxes) if boxes else None, "records": records, "engine": engine}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if not _PYCACHE:  # an untimed first child of both engines fills the byte-code cache
        warm = {"net": str(NETWORKS["fibonacci_reference"][0]), "boxes": None, "records": [{"<n>": 10}]}
        for each in ("reference", "front"):
            subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(dict(warm, engine=each)),
                           capture_output=True, text=True, env=_byte_code_env(dict(env)), timeout=600, check=True)
    env = _byte_code_env(env)
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(spec), capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(NETWORKS))
def test_front_one_worker_against_reference(name, benchmark, report):
    count, rounds = NETWORKS[name][3], NETWORKS[name][4]
    front, ref = [], []
    for _ in range(rounds):
        ref.append(run_engine(name, "reference"))
        front.append(run_engine(name, "front"))
    for got in front + ref:
        assert got["count"] == count and got["outputs"] == ref[0]["outputs"], name
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)  # the figures are the subprocesses' own
    f_s = statistics.median(r["seconds"] for r in front)
    r_s = statistics.median(r["seconds"] for r in ref)
    f_mb = statistics.median(r["rss_mb"] for r in front)
    r_mb = statistics.median(r["rss_mb"] for r in ref)
    report(front_s=f_s, reference_s=r_s, speedup_over_reference=r_s / f_s, front_rss_mb=f_mb,
           reference_rss_mb=r_mb, rss_ratio=f_mb / r_mb, front_entities_alive=front[-1]["alive"])
