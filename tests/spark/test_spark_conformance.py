"""The shared cases with splits, and ordering around Spark splits, from source.

Every case runs through the embedding API with its splits on the session's
local Spark and must give the case's expected output (in order where the
case says so).  A few run through ``python -m snet run --spark`` as users
run them; each of those starts its own JVM, so they are kept few.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "conformance" / "cases"  # the repository's copy of the shared suite
RUNNER = CASES.parent / "run"
SPLIT_CASES = ["split_det_order", "split_many_keys", "split_range", "split_sync_per_key", "fibonacci",
               "metadata_comments_placement", "type_inference_routing"]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def normal(records) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in json.loads(json.dumps(list(records)))]


def case_run(name: str, **options):
    import snet

    folder = CASES / name
    net = snet.load(str(folder / "net.snet"))
    execution = net.run(read_jsonl(folder / "input.jsonl"), **{"engine": "reference", **options})
    out = list(execution)
    return out, execution


def expected(name: str):
    folder = CASES / name
    ordered = json.loads((folder / "case.json").read_text()).get("ordered", False)
    want = normal(read_jsonl(folder / "expected.jsonl"))
    return want, ordered


def check(out, name):
    want, ordered = expected(name)
    got = normal(out)
    if ordered:
        assert got == want
    else:
        assert Counter(got) == Counter(want)


@pytest.mark.parametrize("name", SPLIT_CASES)
@pytest.mark.parametrize("rule", ["all", "auto"])
def test_case_with_spark_equals_expected(spark_options, name, rule):
    out, execution = case_run(name, **spark_options(spark_splits=rule))
    check(out, name)
    stats = execution.stats()
    if rule == "all":
        assert stats.spark.selected, "every case here has a split"
        assert stats.spark.records > 0


@pytest.mark.parametrize("name", ["split_sync_per_key", "split_range", "fibonacci", "split_det_order"])
def test_case_with_tiny_batches(spark_options, name):
    out, execution = case_run(name, **spark_options(spark_batch=2))
    check(out, name)
    local_out, local = case_run(name)
    assert execution.warnings == local.warnings
    splits = execution.stats().spark.splits
    assert max(s.batches for s in splits.values()) >= 3


# -- ordering around Spark splits ---------------------------------------------

GATE = """
net gate {
  box gen ((n) -> (v, <k>) | (x));
  box work ((v, <k>) -> (v, <k>));
  box other ((x) -> (x));
} connect gen .. ((work ! <k>) || other);
"""


def gen(n):
    return [{"v": n, "<k>": n % 3}, {"x": n}, {"v": n + 100, "<k>": (n + 1) % 3}]


def work(v, k):
    return {"v": v * 10, "<k>": k}


def other(x):
    return {"x": -x}


def test_deterministic_parallel_around_a_spark_split_stays_ordered(spark_options):
    import snet

    net = snet.load(GATE, boxes={"gen": gen, "work": work, "other": other})
    records = [{"n": i} for i in range(12)]
    local = list(net.run(records, engine="reference"))
    execution = net.run(records, **spark_options(spark_splits="auto"))
    out = list(execution)
    assert out == local
    assert out[:3] == [{"v": 0, "<k>": 0}, {"x": 0}, {"v": 1000, "<k>": 1}]
    assert len(execution.stats().spark.selected) == 1


STAR = """
net countdown {
  box step ((v, <k>) -> (v, <k>) | (v, <k>, <done>));
} connect (step ! <k>) ** {<done>};
"""


def step(v, k):
    if v <= 0:
        return {"v": v, "<k>": k, "<done>": 1}
    return {"v": v - 1, "<k>": k}


def test_spark_splits_in_star_replicas_keep_star_order(spark_options):
    import snet

    net = snet.load(STAR, boxes={"step": step})
    records = [{"v": i % 4, "<k>": i % 2, "id": i} for i in range(10)]
    local = list(net.run(records, engine="reference"))
    execution = net.run(records, **spark_options())
    assert list(execution) == local
    split = next(iter(execution.stats().spark.splits.values()))
    assert split.replicas == 0 and split.records == sum(i % 4 + 1 for i in range(10))


FEEDBACK = """
net halve {
  box half ((v, <k>) -> (v, <k>) | (r, <k>));
} connect ((half ! <k>) .. [| {r}, {<k>} |]) \\ {v};
"""


def half(v, k):
    return {"v": v // 2, "<k>": k} if v > 1 else {"r": v, "<k>": k}


def test_feedback_through_a_spark_split_terminates_with_all_outputs(spark_options):
    import snet

    net = snet.load(FEEDBACK, boxes={"half": half})
    records = [{"v": 2 ** (i % 5) + i, "<k>": i % 3} for i in range(15)]
    local = list(net.run(records, engine="reference"))
    for batch in (1, 4096):
        out = list(net.run(records, **spark_options(spark_batch=batch)))
        assert Counter(normal(out)) == Counter(normal(local))


# -- the command line -----------------------------------------------------------

def cli_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


# The default engine (FRONT) and the reference engine around the Spark splits.
CLI_ENGINES = pytest.mark.parametrize("engine", ["front", "reference"])


@CLI_ENGINES
def test_cases_through_the_command_line(spark_installed, engine):
    cmd = f"{shlex.quote(sys.executable)} -m snet run --engine {engine} --spark local[2] --spark-splits all"
    result = subprocess.run([sys.executable, str(RUNNER), "--cmd", cmd, "--timeout", "180",
                             "split_det_order", "fibonacci"],
                            capture_output=True, text=True, timeout=600, env=cli_env())
    assert "2 passed, 0 failed" in result.stdout, result.stdout + result.stderr


@CLI_ENGINES
def test_box_error_on_an_executor_through_the_command_line(spark_installed, tmp_path, engine):
    (tmp_path / "net.snet").write_text("net raising {\n  box risky((a, <k>) -> (a));\n} connect risky ! <k>;\n")
    (tmp_path / "net.py").write_text(
        "def risky(a, k):\n    if a == 3:\n        raise ValueError('three is not allowed')\n    return {'a': a}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i, "<k>": i % 2}) + "\n" for i in range(6)))

    def snet_run(*extra):
        return subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "--engine",
                               engine, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env=cli_env())

    local = snet_run()
    spark = snet_run("--spark", "local[2]", "--spark-batch", "4", "--progress", "30")
    assert local.returncode == spark.returncode == 1
    # --progress: the Spark batches one by one, and a last line with the Spark part
    assert "snet progress: spark split net.snet:3:17: batch 1, 4 records" in spark.stderr, spark.stderr
    # --progress turns the Spark UI on and says where it is
    assert re.search(r"^snet progress: Spark UI at http://[\w.:-]+:\d+$", spark.stderr, re.M), spark.stderr
    assert "ignored: the session is already running" not in spark.stderr
    last = [line for line in spark.stderr.splitlines() if line.startswith("snet progress: done")][-1]
    assert "; spark: 1 batch, 4 records" in last, last
    first = [line for line in local.stderr.splitlines() if "error:" in line][0]
    assert "box 'risky' raised ValueError: three is not allowed" in first
    assert first in spark.stderr.splitlines()
    assert "raise ValueError('three is not allowed')" in spark.stderr
    assert "Py4J" not in spark.stderr and "PythonException" not in spark.stderr
    # On Spark the outputs of the inputs before the failing one in its batch are written.
    assert read_outputs(spark.stdout) == [{"a": i} for i in range(3)]
    local_out = read_outputs(local.stdout)
    if engine == "reference":  # one record at a time: exactly the outputs before the failure
        assert local_out == [{"a": i} for i in range(3)]
    else:  # two workers on a non-deterministic split: any of the other records may have finished
        values = [r["a"] for r in local_out]
        assert len(values) == len(set(values)) and set(values) <= {0, 1, 2, 4, 5}


def read_outputs(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


INIT = """
net initsplit {
  box init ( -> (<x>));
} connect (init | []) !! <k>;
"""


def init():
    return [{"<x>": 0}, {"<x>": 1}]


@pytest.mark.parametrize("batch", [1, 4096])
def test_initialisers_fire_once_per_replica_before_its_first_record(spark_options, batch):
    import snet

    net = snet.load(INIT, boxes={"init": init})
    records = [{"<k>": 1}, {"<k>": 2}, {"<k>": 1}]
    out = list(net.run(records, **spark_options(spark_batch=batch)))
    # language.md §6.4's example, in order
    assert out == [{"<x>": 0}, {"<x>": 1}, {"<k>": 1}, {"<x>": 0}, {"<x>": 1}, {"<k>": 2}, {"<k>": 1}]


NESTED_INIT = """
net nestedinit {
  box init ( -> (<x>));
} connect ((init | []) !! <j>) !! <k>;
"""


@pytest.mark.parametrize("batch", [1, 3, 4096])
def test_nested_replicas_fire_their_initialisers_per_outer_replica(spark_options, batch):
    import snet

    net = snet.load(NESTED_INIT, boxes={"init": init})
    records = [{"<k>": k, "<j>": j} for k, j in [(1, 1), (2, 1), (1, 1), (1, 2), (2, 2), (2, 1)]]
    local = list(net.run(records, engine="reference"))
    execution = net.run(records, **spark_options(spark_batch=batch))
    assert list(execution) == local
    assert sum(1 for r in local if "<x>" in r) == 2 * 4  # one init per (k, j) replica, two records each
    assert next(iter(execution.stats().spark.splits.values())).replicas == 2
