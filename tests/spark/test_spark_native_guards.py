"""What a Spark-native run checks before its job, and what it leaves after a failure.

* an output that is, holds or lies inside an input is refused before
  anything is written, in any save mode (``snet.mode=overwrite`` would empty
  the folder, input and all, before the job reads it);
* a failed run leaves no ``_SUCCESS`` in the output folder: what the salvage
  job wrote there is the outputs made before the failure, not a complete
  output;
* Spark's errors are one line, without the JVM's frames, on the terminal
  too (the tests that look at the JVM's own output run the command in a
  process of its own: a session shared with other tests writes its log to
  the terminal pytest started with);
* a source without a column the network's input needs stops before the job;
* the output columns are inferred (pass-through input columns, tags, box
  return annotations, a run on the first records); ``--spark-schema`` sets
  the types of the columns it names and removes none.

Helpers come from ``test_spark_native_cli.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from test_spark_native_cli import MASTER, ONE_BOX, ROOT, canonical, run_one_box, snet_main

pytestmark = pytest.mark.spark

KEYED = "net keyed {\n  box work ((x, <k>) -> (y, <k>));\n} connect work ! <k>;\n"
KEYED_PY = "def work(x, k):\n    return {'y': x * 2, '<k>': k}\n"


def command(cwd, *words: str) -> subprocess.CompletedProcess:
    """``snet run`` in a new process (its own JVM), in ``cwd``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]]
                                                                      if os.environ.get("PYTHONPATH") else [])))
    return subprocess.run([sys.executable, "-m", "snet", "run", *words], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def jvm_frames(stderr: str) -> list[str]:
    """The lines of a JVM or Python stack trace in ``stderr``."""
    return [line for line in stderr.splitlines()
            if line.lstrip().startswith(("at org.", "at java.", "at scala.", "Caused by:", "Traceback", "py4j."))]


@pytest.mark.parametrize("source, sink, mode, says", [
    ("pdata/in.parquet", "pdata", "overwrite", "holds the input pdata/in.parquet"),
    ("pdata/in.parquet", "pdata", "append", "holds the input pdata/in.parquet"),
    ("pdata/*.parquet", "pdata", "overwrite", "holds the input pdata/in.parquet"),
    ("file://{tmp}/pdata/in.parquet", "file:{tmp}/pdata", "overwrite", "holds the input file://{tmp}/pdata/in.parquet"),
    ("pdata", "pdata/out.parquet", "append", "lies inside the input pdata"),
    ("pdata", "pdata", "overwrite", "is the input"),
])
def test_an_output_that_holds_is_or_lies_inside_the_input_is_refused_before_anything_is_written(
        tmp_path, source, sink, mode, says):
    """Exit 2 before Spark starts (the master is unreachable), one line naming both paths; the input and an
    unrelated file in the folder are left as they were, in every save mode."""
    folder = tmp_path / "pdata"
    folder.mkdir()
    (folder / "in.parquet").write_bytes(b"PAR1 kept PAR1")
    (folder / "notes.txt").write_text("unrelated\n")
    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text("def f(x):\n    return {'y': x}\n")
    source, sink, says = (text.format(tmp=tmp_path) for text in (source, sink, says))
    done = command(tmp_path, "net.snet", "-i", source, "-o", sink, "--format", "parquet", "--spark",
                   "spark://127.0.0.1:1", "--spark-conf", f"snet.mode={mode}")
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: the output {sink} {says}: "), lines
    assert sorted(p.name for p in folder.iterdir()) == ["in.parquet", "notes.txt"]
    assert (folder / "in.parquet").read_bytes() == b"PAR1 kept PAR1"


def test_a_failed_run_leaves_no_success_marker(spark, tmp_path, capfd):
    """The salvage job's part files hold the outputs made before the failure: the folder gets no _SUCCESS,
    and under snet.mode=append an earlier complete run's marker is removed too (the folder is no complete
    output any more)."""
    import pyarrow.parquet as pq

    status, out = run_one_box(tmp_path, fails=41)
    capfd.readouterr()
    assert status == 1
    assert list(out.glob("part-*")) and pq.read_table(out).num_rows == 41
    assert not (out / "_SUCCESS").exists() and not (out / "._SUCCESS.crc").exists()

    complete = tmp_path / "complete"
    complete.mkdir()
    status, done = run_one_box(complete, fails=-1, records=10)
    assert status == 0 and (done / "_SUCCESS").exists()
    (complete / "failing.snet").write_text(ONE_BOX)  # (a box module of another name: net.py is loaded already)
    (complete / "failing.py").write_text("def f(x):\n    if x == 5:\n        raise ValueError('no 5')\n"
                                         "    return {'y': x}\n")
    status = snet_main(str(complete / "failing.snet"), "-i", str(complete / "in.parquet"), "-o", str(done),
                       "--spark", MASTER, "--spark-conf", "snet.mode=append")
    err = capfd.readouterr().err
    assert status == 1, err
    assert pq.read_table(done).num_rows == 10 + 5, err
    assert not (done / "_SUCCESS").exists(), sorted(p.name for p in done.iterdir())


def test_a_corrupt_parquet_input_is_one_line_without_the_jvms_frames(spark, tmp_path, capsys):
    """A file that is no Parquet: Spark cannot read the source's schema, so the run never started: exit 2,
    one line naming the file and Spark's reason, nothing written."""
    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text("def f(x):\n    return {'y': x}\n")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + bytes(range(200)) + b"PAR1")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "bad.parquet"), "-o", str(out),
                       "--spark", MASTER)
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: cannot read the input {tmp_path / 'bad.parquet'}: SparkException: "
                             "[FAILED_READ_FILE"), err
    assert not out.exists()


def test_a_corrupt_file_met_by_the_job_is_one_line_on_the_terminal(spark_installed, tmp_path):
    """A folder whose second file is corrupt: the schema comes from the first, the job fails on the second:
    exit 1, one error line naming the file and the cause, no JVM frames on standard error (the JVM's own
    log included), and no output folder left behind."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text("def f(x):\n    return {'y': x}\n")
    (tmp_path / "in").mkdir()
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(10)]), tmp_path / "in" / "a.parquet")
    (tmp_path / "in" / "b.parquet").write_bytes(b"PAR1" + bytes(range(200)) + b"PAR1")
    done = command(tmp_path, "net.snet", "-i", "in", "-o", "out.parquet", "--format", "parquet", "--spark",
                   "local[1]", "--spark-schema", "y long")
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert done.returncode == 1, done.stderr
    assert jvm_frames(done.stderr) == [], done.stderr
    assert len(errors) == 1 and errors[0].startswith("error: Spark job failed: SparkException: [FAILED_READ_FILE"), \
        done.stderr
    assert "b.parquet" in errors[0] and "(caused by " in errors[0], errors
    assert not (tmp_path / "out.parquet").exists()


def test_a_source_without_a_column_the_network_needs_stops_before_the_job(spark, tmp_path, capfd):
    """The network's input needs x, the source has z only: exit 2 before any job, naming the label and the
    source's columns, nothing written (not a job over every record that fails on the first)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text("def f(x):\n    return {'y': x}\n")
    pq.write_table(pa.Table.from_pylist([{"z": i, "id": i} for i in range(50)]), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "y long")
    err = capfd.readouterr().err.splitlines()
    assert status == 2 and err == [f"error: {tmp_path / 'in.parquet'} lacks the column x that the network's "
                                   "input {x} needs (columns: id, z)"], err
    assert not out.exists()


def test_a_source_covering_one_input_variant_runs(spark, tmp_path, capfd):
    """A network with two input variants ({a} | {c}): a source with the columns of one of them is accepted
    (its rows may be of either variant, a null being an absent label); one with neither is refused, each
    variant with what it lacks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "pairs.snet").write_text("net pairs connect [| {a}, {c} |];\n")
    pq.write_table(pa.Table.from_pylist([{"a": 1}, {"a": 2}]), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pylist([{"b": 1}]), tmp_path / "b.parquet")
    assert snet_main(str(tmp_path / "pairs.snet"), "-i", str(tmp_path / "a.parquet"), "-o",
                     str(tmp_path / "out.parquet"), "--spark", MASTER, "--spark-driver-fallback",
                     "--spark-schema", "c long") == 0
    capfd.readouterr()
    status = snet_main(str(tmp_path / "pairs.snet"), "-i", str(tmp_path / "b.parquet"), "-o",
                       str(tmp_path / "out2.parquet"), "--spark", MASTER, "--spark-driver-fallback")
    err = capfd.readouterr().err.splitlines()
    assert status == 2 and err[-1] == (f"error: {tmp_path / 'b.parquet'} lacks a column of every input variant of "
                                       "the network: {a} needs a; {c} needs c (columns: b)"), err


def test_a_keyed_parquet_run_without_spark_schema_writes_every_label(spark, tmp_path):
    """``connect work ! <k>`` with box work ((x, <k>) -> (y, <k>)), Parquet in and out, 20,000 records: the
    type of y comes from a run on the first records, <k> is a tag column (long); the output has both, and
    the records of a run without Spark."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet

    (tmp_path / "keyed.snet").write_text(KEYED)
    (tmp_path / "keyed.py").write_text(KEYED_PY)
    records = [{"x": i, "<k>": i % 7} for i in range(20_000)]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "keyed.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER)
    assert status == 0
    table = pq.read_table(out)
    assert {"y", "<k>"} <= set(table.column_names), table.schema
    assert str(table.schema.field("y").type) == "int64" and str(table.schema.field("<k>").type) == "int64"
    assert table.num_rows == 20_000
    local = snet.load(str(tmp_path / "keyed.snet")).run(records, engine="reference")
    assert canonical(table.to_pylist()) == canonical(local)


def test_spark_schema_sets_a_columns_type_and_drops_no_label(spark, tmp_path):
    """--spark-schema 'y double' on the keyed network: y is double, and <k>, which it does not name, is still
    written (it used to be left out, silently)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "keyed.snet").write_text(KEYED)
    (tmp_path / "keyed.py").write_text(KEYED_PY)
    pq.write_table(pa.Table.from_pylist([{"x": i, "<k>": i % 3} for i in range(30)]), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    status = snet_main(str(tmp_path / "keyed.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                       "--spark", MASTER, "--spark-schema", "y double")
    assert status == 0
    table = pq.read_table(out)
    assert str(table.schema.field("y").type) == "double"
    assert Counter((r["y"], r["<k>"]) for r in table.to_pylist()) == Counter((2.0 * i, i % 3) for i in range(30))


def test_a_box_return_annotation_types_its_output_columns(spark, tmp_path):
    """A box annotated to return a TypedDict: its fields' types are the columns' (y: float is double though
    the box returns ints; z: list[str] an array of strings), with no --spark-schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "net.snet").write_text("net work {\n  box f ((x) -> (y, z));\n} connect f;\n")
    (tmp_path / "net.py").write_text(
        "from typing import TypedDict\n\n"
        "class Out(TypedDict):\n    y: float\n    z: list[str]\n\n"
        "def f(x) -> Out:\n    return {'y': x, 'z': [str(x)] * 2}\n")
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(5)]), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    assert snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o", str(out),
                     "--spark", MASTER) == 0
    table = pq.read_table(out)
    assert str(table.schema.field("y").type) == "double"
    assert str(table.schema.field("z").type) in ("list<element: string>", "list<item: string>")
    assert sorted((r["y"], tuple(r["z"])) for r in table.to_pylist()) == [(float(i), (str(i),) * 2)
                                                                         for i in range(5)]


def test_an_output_field_no_rule_types_names_the_spark_schema_option(spark, tmp_path, capsys):
    """A field that is no input column, with no annotation, and no value in the outputs of the first records
    (the box makes none for them): exit 2, the field named and --spark-schema asked for, nothing written."""
    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text("def f(x):\n    return {'y': 1.5} if x > 1000 else None\n")
    (tmp_path / "in.json").write_text("".join(json.dumps({"x": i}) + "\n" for i in range(10)))
    status = snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.json"), "-o",
                       str(tmp_path / "out.json"), "--spark", MASTER)
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: cannot infer the type of output field 'y' (no input column of that name, no box return "
        "annotation, and no value in the outputs of the network on the first input records); give its column "
        "type with --spark-schema, e.g. --spark-schema 'y double'"]
    assert not (tmp_path / "out.json").exists()


def test_an_output_label_without_a_column_fails_naming_the_label_and_the_record(spark_installed):
    """The tasks' writer, given every column (snet run): a record with a label no column holds is a
    run-time error naming the label and the record, never a row without that value."""
    from snet.errors import SNetRuntimeError
    from snet.spark.whole.dataframe import Writer

    schema = '{"type":"struct","fields":[{"name":"y","type":"long","nullable":true,"metadata":{}}]}'
    with pytest.raises(SNetRuntimeError) as error:
        Writer(schema, False).batch([{"y": 1}, {"y": 2, "<k>": 3}])
    assert "has label <k>, which no output column holds (columns: y)" in error.value.message
    assert "{'y': 2, '<k>': 3}" in error.value.message


def test_the_first_records_run_on_the_driver_only_when_a_type_is_missing(spark, tmp_path, capfd):
    """The run on the first records calls the boxes on the driver, so it happens only when a field is still
    without a type: with --spark-schema typing y, each record reaches the box once (calls counted in a file,
    executors and driver alike); without it, the first records reach it once more, on the driver."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    calls = tmp_path / "calls"
    (tmp_path / "net.snet").write_text(ONE_BOX)
    (tmp_path / "net.py").write_text(f"def f(x):\n    with open({str(calls)!r}, 'a') as out:\n"
                                     "        out.write(f'{x}\\n')\n    return {'y': x}\n")
    pq.write_table(pa.Table.from_pylist([{"x": i} for i in range(10)]), tmp_path / "in.parquet")
    assert snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o",
                     str(tmp_path / "typed.parquet"), "--spark", MASTER, "--spark-schema", "y long") == 0
    assert sorted(int(x) for x in calls.read_text().split()) == list(range(10))
    calls.unlink()
    assert snet_main(str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.parquet"), "-o",
                     str(tmp_path / "inferred.parquet"), "--spark", MASTER) == 0, capfd.readouterr().err
    assert sorted(int(x) for x in calls.read_text().split()) == sorted(list(range(10)) * 2)
    assert str(pq.read_table(tmp_path / "inferred.parquet").schema.field("y").type) == "int64"
