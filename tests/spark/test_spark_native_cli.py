"""``snet run --spark MASTER -i SOURCE -o SINK`` with Spark sources and sinks (snet/spark/whole/native.py).

Most runs call the command's ``main`` in this process, so that they reuse
the session's local Spark; the exit-status checks that need no Spark run the
real command in a subprocess.  Outputs are read back with pyarrow or json,
not with snet, and compared with the reference engine's run of the same
records.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest


pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "conformance" / "cases"
MASTER = "local[2,2]"  # the session of conftest.py, reused

THREE = """
net three {
  box inc ((a) -> (a));
  box dbl ((a) -> (b));
  box tag ((b) -> (b, <even>));
} connect inc .. dbl .. tag;
"""
THREE_PY = """
def inc(a):
    return {"a": a + 1}

def dbl(a):
    return {"b": a * 2}

def tag(b):
    return {"b": b, "<even>": int(b % 4 == 0)}
"""


def canonical(records) -> Counter:
    return Counter(json.dumps({k: v for k, v in r.items() if v is not None}, sort_keys=True) for r in records)


def snet_main(*words: str) -> int:
    from snet.cli import main

    return main(["run", *words])


ONE_BOX = "net work {\n  box f ((x) -> (y));\n} connect f;\n"


def run_one_box(tmp_path, fails: int, records: int = 60, big: int | None = None, *more: str):
    """``snet run`` of the one-box network ``work`` over ``records`` records {x} of one Parquet file (one
    partition), its box raising ValueError at ``x == fails`` and giving the string 'big' for y at ``x == big``;
    (exit status, the output path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text(f"def f(x):\n    if x == {fails}:\n        raise ValueError('no {fails}')\n"
                                     f"    return {{'y': 'big' if x == {big} else x * 10}}\n")
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(records)]), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "y long", *more)
    return status, out


def test_parquet_in_parquet_out(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet

    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    records = [{"a": i, "id": i} for i in range(500)]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "b long, id long, `<even>` long")
    assert status == 0
    assert out.is_dir() and list(out.glob("part-*.parquet"))
    got = pq.read_table(out).to_pylist()
    local = list(snet.load(str(tmp_path / "three.snet")).run(records, engine="reference"))
    assert canonical(got) == canonical(local)
    # the sink exists now: Spark's default save mode refuses, snet says so before anything runs
    again = snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                      "--spark", MASTER, "--spark-schema", "b long, id long, `<even>` long")
    assert again == 2
    overwrite = snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                          "--spark", MASTER, "--spark-schema", "b long, id long, `<even>` long",
                          "--spark-conf", "snet.mode=overwrite")
    assert overwrite == 0 and canonical(pq.read_table(out).to_pylist()) == canonical(local)


@pytest.mark.parametrize("name", ["split_sync_per_key", "split_many_keys", "fibonacci"])
def test_json_directory_in_json_directory_out(spark, tmp_path, name):
    import snet

    folder = CASES / name
    records = [json.loads(line) for line in (folder / "input.jsonl").read_text().splitlines() if line.strip()]
    source = tmp_path / "in"
    source.mkdir()
    half = len(records) // 2
    for i, part in enumerate((records[:half], records[half:])):  # two files, in input order
        (source / f"part-{i}.json").write_text("".join(json.dumps(r) + "\n" for r in part))
    out = tmp_path / "out"
    status = snet_main(str(folder / "net.snet"), "-i", str(source), "-o", str(out), "--format", "json",
                       "--spark", MASTER)
    assert status == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    local = list(snet.load(str(folder / "net.snet")).run(records, engine="reference"))
    assert canonical(got) == canonical(local)
    expected = [json.loads(line) for line in (folder / "expected.jsonl").read_text().splitlines() if line.strip()]
    assert canonical(got) == canonical(expected)


def test_a_json_directory_is_recognised_by_its_part_files(spark, tmp_path):
    folder = CASES / "split_sync_per_key"
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-00000.json").write_text((folder / "input.jsonl").read_text())
    out = tmp_path / "out.json"
    assert snet_main(str(folder / "net.snet"), "-i", str(source), "-o", str(out), "--spark", MASTER) == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    expected = [json.loads(line) for line in (folder / "expected.jsonl").read_text().splitlines() if line.strip()]
    assert canonical(got) == canonical(expected)


def test_not_distributable_on_the_driver_with_the_fallback(spark, tmp_path):
    import snet

    folder = CASES / "split_range"
    records = [json.loads(line) for line in (folder / "input.jsonl").read_text().splitlines() if line.strip()]
    source = tmp_path / "in.json"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.json"
    status = snet_main(str(folder / "net.snet"), "-i", str(source), "-o", str(out), "--spark", MASTER,
                       "--spark-driver-fallback")
    assert status == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    local = list(snet.load(str(folder / "net.snet")).run(records, engine="reference"))
    assert canonical(got) == canonical(local)


def run_cli(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snet", "run", *words], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_not_distributable_exits_2_with_the_position_before_spark_starts(spark_installed, tmp_path):
    folder = CASES / "split_range"
    out = tmp_path / "out.parquet"
    done = run_cli(str(folder / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                   "--spark", "local[2]")
    assert done.returncode == 2, done.stderr
    assert re.search(r"net\.snet:1:\d+: error: a range split with state", done.stderr), done.stderr
    assert "--spark-driver-fallback" in done.stderr
    assert not out.exists()


def test_mixed_and_masterless_spark_formats_are_refused(tmp_path):
    net = CASES / "split_sync_per_key" / "net.snet"
    done = run_cli(str(net), "-i", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.jsonl"),
                   "--spark", "local[2]")
    assert done.returncode == 2 and "needs a Spark source and a Spark sink" in done.stderr, done.stderr
    done = run_cli(str(net), "-i", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"))
    assert done.returncode == 2 and "give --spark MASTER" in done.stderr, done.stderr


def test_csv_in_orc_out(spark, tmp_path):
    import pyarrow.orc as orc

    import snet

    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    records = [{"a": i, "id": 100 + i} for i in range(40)]
    (tmp_path / "in.csv").write_text("a,id\n" + "".join(f"{r['a']},{r['id']}\n" for r in records))
    out = tmp_path / "out.orc"
    status = snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.csv"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "b long, id long, `<even>` long")
    assert status == 0
    got = [row for path in sorted(out.glob("part-*.orc")) for row in orc.read_table(str(path)).to_pylist()]
    local = list(snet.load(str(tmp_path / "three.snet")).run(records, engine="reference"))
    assert canonical(got) == canonical(local)


def refused_run(tmp_path, *words):
    """``snet run`` of the 3-box network, Parquet to Parquet, against a master nobody serves, in a new process:
    for options refused before Spark starts."""
    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    (tmp_path / "in.json").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]]
                                                                      if os.environ.get("PYTHONPATH") else [])))
    return subprocess.run([sys.executable, "-m", "snet", "run", "three.snet", "-i", "in.json", "-o", "out.parquet",
                           "--format", "parquet", "--spark", "spark://127.0.0.1:1", *words], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("words", [["--on-error", "skip"], ["--errors", "errors.jsonl"]])
def test_skipping_failing_records_is_refused_for_a_spark_native_run(tmp_path, words):
    """A Spark-native run cannot skip records (no driver to report them to): exit 2 before Spark, nothing written."""
    done = refused_run(tmp_path, *words)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: {words[0]}{' skip' if words[0] == '--on-error' else ''} does not apply to a Spark-native run "
        "(parquet in, parquet out): its tasks run the network with no driver to report a skipped record to, so a "
        "failing box or a crashed Python worker fails the Spark job; to skip failing records, read and write JSON "
        "Lines (--spark then runs the splits on Spark and skips there)"]
    assert not (tmp_path / "out.parquet").exists() and not (tmp_path / "errors.jsonl").exists()



@pytest.mark.parametrize("keys", [["snet.partitions=8"], ["snet.path=rdd", "snet.partitions=2"], ["snet.mdoe=append"]])
def test_snet_settings_a_spark_native_run_does_not_read_are_refused(tmp_path, keys):
    """snet.path and snet.partitions (and a misspelt key) would be ignored there: exit 2 before Spark, naming them."""
    done = refused_run(tmp_path, *[w for key in keys for w in ("--spark-conf", key)])
    assert done.returncode == 2, done.stderr
    named = ", ".join(sorted(key.split("=")[0] for key in keys))
    assert done.stderr.splitlines() == [
        f"error: --spark-conf {named} does not apply to a Spark-native run (parquet in, parquet out): the snet keys "
        "it reads are snet.mode and snet.boxes (the tasks follow the source's partitions)"]
    assert not (tmp_path / "out.parquet").exists()

WHERE_PY = """
import {helper}

def f(a):
    return {{"a": {helper}.double(a), "where": __file__, "helper": {helper}.__file__}}
"""


@pytest.mark.parametrize("boxes", ["auto", "shipped"])
def test_snet_boxes_decides_where_a_spark_native_run_loads_box_files(spark, tmp_path, boxes):
    """``--spark-conf snet.boxes=shipped`` holds for Spark-native runs too: the box module and its sibling
    from the shipped zip, not from the file the driver's path names."""
    folder = tmp_path / "boxes"
    folder.mkdir()
    (folder / "net.snet").write_text("net where {\n  box f((a) -> (a, where, helper));\n} connect f;\n")
    helper = f"helpers_{boxes}"  # a name of its own: Python workers outlive a run and keep their modules
    (folder / "net.py").write_text(WHERE_PY.format(helper=helper))
    (folder / f"{helper}.py").write_text("def double(x):\n    return 2 * x\n")
    source = tmp_path / "in.json"
    source.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(4)))
    out = tmp_path / "out.json"
    status = snet_main(str(folder / "net.snet"), "-i", str(source), "-o", str(out), "--spark", MASTER,
                       "--spark-schema", "a long, where string, helper string", "--spark-conf", f"snet.boxes={boxes}")
    assert status == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    assert sorted(r["a"] for r in got) == [0, 2, 4, 6]
    for record in got:
        if boxes == "shipped":
            assert "snetboxes_" in record["where"] and record["where"].endswith(".zip/net.py"), record
            assert "snetboxes_" in record["helper"] and record["helper"].endswith(f".zip/{helper}.py"), record
        else:
            assert record["where"] == str(folder / "net.py") and record["helper"] == str(folder / f"{helper}.py")


def test_a_wrong_snet_boxes_setting_stops_a_spark_native_run_before_spark(tmp_path):
    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    (tmp_path / "in.json").write_text('{"a": 1}\n')
    done = run_cli(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.json"), "-o", str(tmp_path / "out.json"),
                   "--spark", "spark://127.0.0.1:1", "--spark-conf", "snet.boxes=zip")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["error: snet.boxes must be 'auto' (the box file where it exists, else the "
                                        "shipped zip) or 'shipped', not 'zip'"]
    assert not (tmp_path / "out.json").exists()


def test_a_keyed_network_sees_a_directorys_files_in_path_order(spark, tmp_path):
    """Spark reads a directory's files largest first; a synchro-cell per tag must pair the records of
    part-0 before those of a larger part-1, as a run over the files one after the other does."""
    import snet

    net = tmp_path / "pairs.snet"
    net.write_text("net pairs connect [| {a}, {c} |] ! <k>;\n")
    records = [{"a" if i % 2 == 0 else "c": i, "<k>": i % 3} for i in range(60)]
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in records[:12]))
    (source / "part-1.json").write_text("".join(json.dumps(r) + "\n" for r in records[12:]))  # the larger
    out = tmp_path / "out"
    assert snet_main(str(net), "-i", str(source), "-o", str(out), "--format", "json", "--spark", MASTER) == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    local = list(snet.load(str(net)).run(records, engine="reference"))
    assert canonical(got) == canonical(local)
    assert sorted((r["a"], r["c"]) for r in got if "a" in r and "c" in r) == [(0, 3), (2, 5), (4, 1)]


CRASHING = """
net crashing {
  box h ((x) -> (a) | (c));
  net join connect [| {a}, {c} |] * {a, c};
} connect (h .. join) ! <k>;
"""
CRASHING_PY = """
import os

def h(x):
    if x == 41:
        os._exit(3)
    return {"a": x} if x % 2 == 0 else {"c": x}
"""


def test_a_box_that_ends_its_python_worker_in_a_spark_native_run_is_named(spark, tmp_path, capfd):
    """A box that calls os._exit inside a keyed Spark-native run: exit 1, one error naming the box, its
    arguments and the input record (not a page of JVM frames), and the outputs made before the crash
    written: every output of the records before it, none of the records from it on in its partition."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet

    (tmp_path / "crashing.snet").write_text(CRASHING)
    (tmp_path / "crashing.py").write_text(CRASHING_PY)
    records = [{"x": i, "<k>": i % 3, "id": i} for i in range(60)]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "crashing.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "a long, c long, `<k>` long, id long")
    err = capfd.readouterr().err
    assert status == 1, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert errors == [f"{tmp_path / 'crashing.snet'}:5:12: error: box 'h' ended its Python worker (exit status 3) "
                      "on input (x=41)"], err
    assert 'the input record: {"x":41,"<k>":2,"id":41}' in err.splitlines(), err
    assert "at org.apache" not in err and "Py4J" not in err and "Aborting task" not in err, err
    got = pq.read_table(out).to_pylist()
    assert err.splitlines()[-1] == f"{len(got)} output records made before the failure were written to {out}", err
    net = snet.load(str(tmp_path / "crashing.snet"), boxes={"h": lambda x: {"a": x} if x % 2 == 0 else {"c": x}})
    before = canonical(net.run(records[:41], engine="reference"))
    everything = canonical(net.run(records, engine="reference"))
    assert before - canonical(got) == Counter(), "an output of a record before the crash is missing"
    assert canonical(got) - everything == Counter(), "an output that the run would not make"
    assert not [r for r in got if 41 in (r["a"], r["c"])]


def test_a_box_error_in_a_spark_native_run_keeps_the_outputs_made_before_it(spark, tmp_path, capfd):
    """A box that raises on one record of a one-partition source: exit 1 with the box's error, and the sink
    holds exactly the outputs of the records before it, in order (a stateless network keeps the partition's
    order); a failure that is no box's (a value that does not fit its column) writes nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    status, out = run_one_box(tmp_path, fails=41, big=99)
    err = capfd.readouterr().err
    assert status == 1, err
    errors = [line for line in err.splitlines() if "error:" in line]
    where = tmp_path / "net.snet"
    assert errors == [f"{where}:3:11: error: box 'f' raised ValueError: no 41 (input record {{x}})"], err
    assert err.splitlines()[-1] == f"41 output records made before the failure were written to {out}", err
    assert [r["y"] for r in pq.read_table(out).to_pylist()] == [x * 10 for x in range(41)]

    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(95, 100)]), tmp_path / "big.parquet")
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "big.parquet"), "-o",
                       str(tmp_path / "big_out.parquet"), "--spark", MASTER, "--spark-schema", "y long")
    err = capfd.readouterr().err
    assert status == 1 and "does not fit its column type" in err and "were written" not in err, err
    assert not (tmp_path / "big_out.parquet").exists()


def test_progress_prints_the_spark_ui_address_of_a_spark_native_run_and_quiet_silences_its_tasks(
        spark_installed, tmp_path):
    """--progress turns the Spark UI on and prints where it is; -q leaves out the tasks' termination warnings
    (cells left unfinished), as it does for a run on the driver."""
    (tmp_path / "pairs.snet").write_text("net pairs connect [| {a}, {c} |] ! <k>;\n")
    (tmp_path / "in.json").write_text("".join(json.dumps({"a": i, "<k>": i}) + "\n" for i in range(3)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]]
                                                                     if os.environ.get("PYTHONPATH") else []))}
    done = subprocess.run([sys.executable, "-m", "snet", "run", "-q", "--progress", "pairs.snet", "-i", "in.json",
                           "-o", "out.json", "--spark", "local[1]", "--spark-schema", "a long, c long, `<k>` long"],
                          cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^snet progress: Spark UI at http://[\w.:-]+:\d+$", done.stderr, re.M), done.stderr
    assert "synchro-cell discarded" not in done.stderr, done.stderr
    assert not [line for line in done.stderr.splitlines() if "warning:" in line], done.stderr
    got = [json.loads(line) for path in sorted((tmp_path / "out.json").glob("part-*.json"))
           for line in path.read_text().splitlines()]
    assert canonical(got) == canonical([])  # every cell is left with one record of two


def test_output_fields_are_typed_from_a_run_on_the_first_records(spark, tmp_path):
    """No --spark-schema and fields (b, <even>) that are no input column: b takes the type of its values in
    the outputs of a run of the network on the first records (on the driver), <even> is a tag (long); the run
    writes every label of the records a run without Spark makes."""
    import snet

    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    records = [{"a": i} for i in range(7)]
    (tmp_path / "in.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.json"
    assert snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.json"), "-o", str(out),
                     "--spark", MASTER) == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    assert all(isinstance(r["b"], int) and isinstance(r["<even>"], int) for r in got), got
    assert canonical(got) == canonical(snet.load(str(tmp_path / "three.snet")).run(records, engine="reference"))


@pytest.mark.parametrize("uri", ["file://{}", "file:{}", "file://localhost{}"])
def test_file_uris_are_checked_before_spark_starts_as_paths_are(tmp_path, uri):
    """An existing output, the input as output, and a missing input given as file: URIs: exit 2 at once
    (the master is unreachable, so Spark never started), each in one line."""
    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    (tmp_path / "in.parquet").mkdir()
    (tmp_path / "out.parquet").mkdir()
    (tmp_path / "out.parquet" / "part-00000.parquet").write_text("kept")

    def run(source, sink):
        return run_cli(str(tmp_path / "three.snet"), "-i", uri.format(source), "-o", uri.format(sink),
                       "--spark", "spark://127.0.0.1:1")

    done = run(tmp_path / "in.parquet", tmp_path / "out.parquet")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: the output {uri.format(tmp_path / 'out.parquet')} exists; remove it, or give --spark-conf "
        "snet.mode=overwrite"], done.stderr
    assert (tmp_path / "out.parquet" / "part-00000.parquet").read_text() == "kept"
    done = run(tmp_path / "in.parquet", tmp_path / "in.parquet")
    assert done.returncode == 2 and "is the input: writing it would destroy the input" in done.stderr, done.stderr
    done = run(tmp_path / "missing.parquet", tmp_path / "new.parquet")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: input not found: {uri.format(tmp_path / 'missing.parquet')}"], done.stderr
    assert not (tmp_path / "new.parquet").exists()


def test_a_glob_that_matches_nothing_exits_2_in_snets_words(spark, tmp_path, capsys):
    """What only Spark can see (a glob that matches no file) is still
    exit status 2 with snet's words, not a run-time failure with Spark's."""
    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    glob = f"file://{tmp_path}/nothing-*.parquet"
    status = snet_main(str(tmp_path / "three.snet"), "-i", glob, "-o", str(tmp_path / "out.parquet"),
                       "--spark", MASTER, "--spark-schema", "b long")
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(f"error: input not found: {glob} ("), err
    assert not (tmp_path / "out.parquet").exists()


def test_a_keyed_run_over_a_source_without_the_tag_column_names_the_source(spark, tmp_path, capsys):
    """The split's tag is no column of the source: exit 2 with the split's position, the column and the
    source's own columns (not the API's words or snet's file-order column), the sink untouched."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "keyed.snet").write_text("net keyed connect [| {a}, {c} |] ! <k>;\n")
    pq.write_table(pa.Table.from_pylist([{"a": 1, "id": 1}]), tmp_path / "in.parquet")
    status = snet_main(str(tmp_path / "keyed.snet"), "-i", str(tmp_path / "in.parquet"), "-o",
                       str(tmp_path / "out.parquet"), "--spark", MASTER, "--spark-schema", "a long, c long")
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: the split at {tmp_path / 'keyed.snet'}:1:34 keeps state per <k>, so the input is partitioned by "
        f"its column <k>, which {tmp_path / 'in.parquet'} lacks (columns: a, id)"]
    assert not (tmp_path / "out.parquet").exists()


def test_the_driver_fallback_reads_a_directorys_files_in_path_order(spark, tmp_path):
    """--spark-driver-fallback over a folder: the records reach the driver's engine as a run over the files
    one after the other gives them (part-0 before the larger part-1), so a top-level synchro-cell pairs the
    first {a} of part-0, not one of part-1 that Spark happens to read first."""
    import snet

    net = tmp_path / "pairs.snet"
    net.write_text("net pairs connect [| {a}, {c} |];\n")
    records = [{"a": 0, "id": 0}] + [{"c" if i % 2 else "a": i, "id": i} for i in range(1, 40)]
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in records[:1]))
    (source / "part-1.json").write_text("".join(json.dumps(r) + "\n" for r in records[1:]))  # the larger
    out = tmp_path / "out"
    assert snet_main(str(net), "-i", str(source), "-o", str(out), "--format", "json", "--spark", MASTER,
                     "--spark-driver-fallback", "--engine", "reference", "--spark-schema",
                     "a long, c long, id long") == 0
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    local = list(snet.load(str(net)).run(records, engine="reference"))
    assert canonical(got) == canonical(local)
    assert [(r["a"], r["c"]) for r in got if "a" in r and "c" in r] == [(0, 1)]


@pytest.mark.parametrize("column, value, words", [
    ("<k>", "x", "error: input column <k> is a tag, which holds integers, but its type is string; cast it"),
    ("<k>", 1.5, "error: input column <k> is a tag, which holds integers, but its type is double; cast it"),
    ("user id", 1, "error: input column 'user id' is not a record label (a label is NAME (field)")])
def test_columns_a_record_file_would_refuse_stop_a_spark_native_run_with_exit_2(spark, tmp_path, capsys, column,
                                                                                 value, words):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "three.snet").write_text(THREE)
    (tmp_path / "three.py").write_text(THREE_PY)
    pq.write_table(pa.Table.from_pylist([{"a": 1, column: value}]), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "three.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "b long")
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(words), err
    assert not out.exists()


def test_a_run_time_error_in_a_task_is_the_line_a_driver_run_prints(spark, tmp_path, capfd):
    """A record without the split's tag (a null in its column): exit 1 and the error line of a run without
    Spark, once positioned (not 'error: net.snet:…: error: …'), without Spark's frames; the sink holds what
    was made before the failure (here nothing: the one cell with a record never fired)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    net = tmp_path / "pairs.snet"
    net.write_text("net pairs connect [| {a}, {c} |] ! <k>;\n")
    pq.write_table(pa.Table.from_pylist([{"a": 1, "<k>": 1}, {"a": 2, "<k>": None}]), tmp_path / "in.parquet")
    status = snet_main(str(net), "-i", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"),
                       "--spark", MASTER, "--spark-schema", "a long, c long, `<k>` long")
    err = capfd.readouterr().err
    assert status == 1
    assert [line for line in err.splitlines() if "error:" in line] == [
        f"{net}:1:34: error: split cannot route record {{a}}: it lacks <k>"], err
    assert "at org.apache" not in err and "Traceback" not in err, err
    assert err.splitlines()[-1] == f"0 output records made before the failure were written to {tmp_path / 'out.parquet'}"
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 0


def test_a_box_exception_in_a_task_is_reported_as_a_driver_run_reports_it(spark, tmp_path, capfd):
    """The error line and the box's own traceback, as without Spark; not the task's frames or the JVM's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    net = tmp_path / "raising.snet"
    net.write_text("net raising {\n  box risky((x) -> (y));\n} connect risky;\n")
    (tmp_path / "raising.py").write_text(
        "def risky(x):\n    if x == 5:\n        raise ValueError('five is not allowed')\n    return {'y': x}\n")
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(8)]), tmp_path / "in.parquet")
    status = snet_main(str(net), "-i", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"),
                       "--spark", MASTER, "--spark-schema", "y long")
    err = capfd.readouterr().err
    assert status == 1
    lines = err.splitlines()
    first = [line for line in lines if "error:" in line]
    assert first == [f"{net}:3:11: error: box 'risky' raised ValueError: five is not allowed (input record {{x}})"], err
    tail = lines[lines.index(first[0]) + 1:]
    assert tail[0] == "Traceback (most recent call last):" and "raise ValueError('five is not allowed')" in err, err
    assert "snet/spark/whole/dataframe.py" not in err and "at org.apache" not in err, err


def test_a_job_spark_cannot_plan_is_exit_2_in_one_line(spark, tmp_path, capsys):
    """An output format that cannot hold a column (an array in CSV): Spark refuses the job before any task
    runs, so the run never started: exit 2, Spark's reason in one line, nothing written."""
    (tmp_path / "sum.snet").write_text("net sum {\n  box s((v) -> (s));\n} connect s;\n")
    (tmp_path / "sum.py").write_text("def s(v):\n    return {'s': sum(v)}\n")
    (tmp_path / "in.json").write_text("".join(json.dumps({"v": list(range(i))}) + "\n" for i in range(4)))
    out = tmp_path / "out.csv"
    status = snet_main(str(tmp_path / "sum.snet"), "-i", str(tmp_path / "in.json"), "-o", str(out), "--spark",
                       MASTER, "--spark-schema", "s long, v array<long>")
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: Spark cannot plan the run ({tmp_path / 'in.json'} in, {out} out): "
                             "[UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE] The CSV datasource doesn't support the "
                             "column `v`"), err
    assert not out.exists()


def test_ctrl_c_during_the_salvage_run_stops_it_as_an_interruption(spark_installed, tmp_path):
    """SIGINT while the salvage write job runs: the job is cancelled and the run ends as an interrupted run
    does ('error: interrupted', exit status 1), promptly; no line says what was or was not written, and the
    sink that did not exist before holds no part files."""
    import signal

    import pyarrow as pa
    import pyarrow.parquet as pq

    # The salvage run's box calls wait while `mark` is there: every call after the failing one, which
    # leaves `failed` behind (made before the run starts, the mark cannot come too late for them).  A call
    # that waits in a salvage child (a forked child with its channel open) leaves `salvaging-now`: the
    # moment the salvage job runs, when Ctrl-C comes.
    mark, failed, waiting = tmp_path / "salvaging", tmp_path / "failed", tmp_path / "salvaging-now"
    mark.touch()
    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text(
        "import os, sys, time\n"
        "def f(x):\n"
        f"    while os.path.exists({str(failed)!r}) and os.path.exists({str(mark)!r}):\n"
        "        isolation = sys.modules.get('snet.isolation')\n"
        "        if isolation is not None and isolation.in_child():\n"
        f"            open({str(waiting)!r}, 'w').close()\n"
        "        time.sleep(0.05)\n"
        "    if x == 5:\n"
        f"        open({str(failed)!r}, 'w').close()\n"
        "        raise ValueError('no 5')\n"
        "    return {'y': x}\n")
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(10)]), tmp_path / "in.parquet")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.parquet", "-o",
                                "out.parquet", "--spark", "local[2]", "--spark-schema", "y long"],
                               cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=env,
                               # SIGINT as a terminal delivers it, even where the tests run with it ignored
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = []
        for line in process.stderr:
            lines.append(line)
            if "running the partitions again" in line:
                break
        assert failed.exists(), "".join(lines)
        deadline = time.monotonic() + 300  # an upper bound only: the salvage job's first box call
        while not waiting.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting.exists(), "".join(lines)
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=120)[1]
    finally:
        mark.unlink(missing_ok=True)
        if process.poll() is None:
            process.kill()
            process.wait()
    err = "".join(lines) + rest
    assert process.returncode == 1, err
    assert err.strip().splitlines()[-1] == "error: interrupted", err
    assert "written" not in err, err
    assert not list((tmp_path / "out.parquet").glob("part-*")), err


def test_the_salvage_of_a_partition_streams_its_records_through_the_child(spark_installed, tmp_path):
    """The salvage job's task (snet.spark.whole.salvage.salvage_partition) gives its records to the child as it
    reads them, not after reading the whole partition into memory: its first output batch is out while
    most of a large partition is still unread; and its outputs are those of the records before the failure."""
    import pyarrow as pa

    import snet
    from snet.spark.whole.dataframe import OUT_BATCH
    from snet.spark.whole.salvage import salvage_partition
    from snet.spark.cluster.shipping import dump_context, make_context

    (tmp_path / "net.snet").write_text(ONE_BOX)
    net = snet.load(str(tmp_path / "net.snet"), boxes={"f": lambda x: {"y": x * 10} if x != 99_990 else 1 / 0})
    context = dump_context(make_context(net.graph, 0, net.boxes))
    read = []

    def batches():
        for start in range(0, 100_000, 1000):
            read.append(start)
            yield pa.RecordBatch.from_pylist([{"x": x} for x in range(start, start + 1000)])

    schema = '{"type":"struct","fields":[{"name":"y","type":"long","nullable":true,"metadata":{}}]}'
    outputs = salvage_partition(context, (), schema, True, None, batches())
    first = next(outputs)
    assert len(read) < 50, f"{len(read)} of 100 input batches were read before the first output batch"
    rest = [first, *outputs]
    assert first.num_rows == OUT_BATCH
    assert [y for batch in rest for y in batch.column("y").to_pylist()] == [x * 10 for x in range(99_990)]
    assert len(read) == 100


def test_a_salvage_job_that_fails_says_why_in_snets_words(spark, tmp_path, capfd):
    """A box error on one record, and an output before it that does not fit its column: the run reports the
    box error, and the salvage job, which fails on that output, says so with the value and the column, not
    with the first line of Spark's text; nothing is written and no output folder is left behind."""
    status, out = run_one_box(tmp_path, fails=41, big=10)
    err = capfd.readouterr().err
    assert status == 1, err
    assert [line for line in err.splitlines() if "error:" in line] == [
        f"{tmp_path / 'net.snet'}:3:11: error: box 'f' raised ValueError: no 41 (input record {{x}})"], err
    last = err.splitlines()[-1]
    assert last.startswith(f"nothing was written to {out} (the run to write the outputs made before the failure "
                           "failed: spark_apply: output label y holds 'big' (str), which does not fit its column "
                           "type int64"), err
    assert not out.exists()


def test_stats_of_a_failed_spark_native_run_are_printed_before_its_error(spark, tmp_path, capfd):
    """--stats prints its line for a failed Spark-native run too, as for a failed run on the driver: before
    the error, saying that it failed and what the salvage job wrote, which the error's last line says too;
    --stats-json writes the same figures."""
    status, out = run_one_box(tmp_path, 3, 6, None, "--stats", "--stats-json", str(tmp_path / "stats.json"))
    lines = capfd.readouterr().err.splitlines()
    assert status == 1, lines
    stats = [at for at, line in enumerate(lines) if line.startswith("snet: parquet ")]
    errors = [at for at, line in enumerate(lines) if "error:" in line]
    assert len(stats) == 1 and len(errors) == 1 and stats[0] < errors[0], lines
    assert re.fullmatch(rf"snet: parquet {re.escape(str(tmp_path / 'in.parquet'))} -> parquet {re.escape(str(out))}, "
                        r"the network inside Spark tasks: failed, 3 records written, \d+\.\d\d s",
                        lines[stats[0]]), lines
    assert lines[-1] == f"3 output records made before the failure were written to {out}", lines
    figures = json.loads((tmp_path / "stats.json").read_text())
    assert {k: figures[k] for k in ("run", "network", "failed", "records_out")} == {
        "run": "spark-native", "network": "inside Spark tasks", "failed": True, "records_out": 3}, figures


def test_engine_options_that_a_spark_native_run_does_not_take_are_named_in_a_warning(spark, tmp_path, capfd):
    """--engine, -w and --box-processes do not reach the tasks of a Spark-native run: one warning names them
    (not silently ignored), and the run goes on with exit 0 and every output."""
    import pyarrow.parquet as pq

    status, out = run_one_box(tmp_path, -1, 5, None, "--engine", "reference", "-w", "4", "--box-processes", "2")
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("warning:")]
    assert status == 0 and warnings == [
        "warning: --engine, -w/--workers, --box-processes have no effect on a Spark-native run: each Spark task "
        "runs the network on an engine of its own (FRONT with one worker; the tasks are the parallelism); they "
        "apply with --spark-driver-fallback and to runs over record files"], warnings
    assert [r["y"] for r in pq.read_table(out).to_pylist()] == [x * 10 for x in range(5)]


def test_stats_of_a_spark_native_run_count_the_records_written(spark, tmp_path, capfd):
    """--stats and --stats-json of a Spark-native run that succeeds: the records written, counted in the
    tasks (a JSON file named and never written would be a silent loss)."""
    status, out = run_one_box(tmp_path, -1, 25, None, "--stats", "--stats-json", str(tmp_path / "stats.json"))
    lines = capfd.readouterr().err.splitlines()
    assert status == 0, lines
    assert [line for line in lines if line.startswith("snet: parquet ")][0].endswith(
        "the network inside Spark tasks: 25 records written, " + lines[-1].rsplit(", ", 1)[-1]), lines
    figures = json.loads((tmp_path / "stats.json").read_text())
    assert figures["records_out"] == 25 and figures["failed"] is False and figures["seconds"] > 0, figures
    assert figures["source"] == {"format": "parquet", "path": str(tmp_path / "in.parquet")}, figures
    assert figures["sink"] == {"format": "parquet", "path": str(out)}, figures


def test_the_driver_fallback_writes_the_outputs_made_before_a_failure(spark, tmp_path, capfd):
    """--spark-driver-fallback: a box error ends the run with exit 1 and its error, and the outputs the network
    made before it are written to the sink, as a run over record files writes them, with the same last line
    as the salvage of a run inside Spark tasks.  On the reference engine: which records FRONT's workers finish
    once one of them has failed depends on timing (docs/runtime.md), so the outputs to expect would too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet

    (tmp_path / "net.snet").write_text("net fb {\n  box f ((x) -> (y));\n} connect f .. [| {y}, {z} |];\n")
    (tmp_path / "net.py").write_text("def f(x):\n    if x == 41:\n        raise ValueError('no 41')\n"
                                     "    return {'y': x * 10}\n")
    records = [{"x": i} for i in range(60)]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "y long, z long", "--spark-driver-fallback",
                       "--engine", "reference")
    err = capfd.readouterr().err
    assert status == 1, err
    assert [line for line in err.splitlines() if "error:" in line] == [
        f"{tmp_path / 'net.snet'}:3:11: error: box 'f' raised ValueError: no 41 (input record {{x}})"], err
    before = []
    with pytest.raises(snet.SNetRuntimeError):
        for record in snet.load(str(tmp_path / "net.snet")).run(records, engine="reference"):
            before.append(record)
    got = pq.read_table(out).to_pylist()
    assert before and [{k: v for k, v in r.items() if v is not None} for r in got] == before
    assert err.splitlines()[-1] == f"{len(before)} output records made before the failure were written to {out}", err
