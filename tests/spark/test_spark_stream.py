"""``snet run --spark MASTER --stream [--available-now] -i SOURCE -o SINK --checkpoint DIR`` (snet/spark/stream.py).

Files are dropped into a source folder in waves; the sink is read back as
Spark's file sink commits it (the files its ``_spark_metadata`` log names),
with pyarrow, not with snet or Spark, and compared as a multiset with what
each input record must give once.  Runs with --available-now call the
command's ``main`` in this process (the session's local Spark); the kill and
the SIGTERM tests run the real command in a subprocess, and wait on the
sink's commit log, never on a time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
MASTER = "local[2,2]"  # the session of conftest.py, reused
WAIT = 300  # seconds: an upper bound on one step, never a pace

NET = "net work {\n  box f ((x) -> (y));\n} connect f;\n"
BOXES = "import time\n\ndef f(x) -> {'y': int}:\n    time.sleep(PAUSE)\n    return {'y': 3 * x + 1}\n"


def folder(tmp_path: Path, pause: float = 0.0) -> Path:
    (tmp_path / "net.snet").write_text(NET)
    (tmp_path / "net.py").write_text(f"PAUSE = {pause}\n" + BOXES)
    (tmp_path / "src").mkdir()
    return tmp_path


def drop(tmp_path: Path, name: str, xs) -> None:
    """A Parquet file of records {x}, written aside and renamed in (a stream must never see half a file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    aside = tmp_path / f".{name}.parquet"
    pq.write_table(pa.table({"x": pa.array(list(xs), pa.int64())}), aside)
    os.rename(aside, tmp_path / "src" / f"{name}.parquet")


def committed_files(sink: Path) -> list[Path]:
    """The files Spark's file sink committed: those its ``_spark_metadata`` log names (a killed micro-batch's
    files are not among them)."""
    log = sink / "_spark_metadata"
    if not log.is_dir():
        return []
    paths = set()
    for entry in sorted(log.iterdir()):
        if entry.name.startswith("."):
            continue
        for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version
            record = json.loads(line)
            if record.get("action", "add") == "add":
                paths.add(record["path"].removeprefix("file:"))
    return [Path(p) for p in sorted(paths)]


def committed_outputs(sink: Path) -> Counter:
    import pyarrow.parquet as pq

    outputs = Counter()
    for path in committed_files(sink):
        outputs.update(pq.read_table(path).column("y").to_pylist())
    return outputs


def want(*ranges) -> Counter:
    return Counter(3 * x + 1 for r in ranges for x in r)


def command(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", str(tmp_path / "net.snet"), "--spark", MASTER, "--stream", "-i", str(tmp_path / "src"),
            "--input-format", "parquet", "-o", str(tmp_path / "out"), "--output-format", "parquet",
            "--checkpoint", str(tmp_path / "ck"), *extra]


def snet_main(words: list[str]) -> int:
    from snet.cli import main

    return main(words)


def test_three_waves_with_available_now_give_each_output_once(spark, tmp_path, capsys):
    folder(tmp_path)
    waves = [range(0, 300), range(300, 420), range(420, 1000)]
    for at, xs in enumerate(waves):
        drop(tmp_path, f"wave{at}", xs)
        assert snet_main(command(tmp_path, "--available-now")) == 0
        assert committed_outputs(tmp_path / "out") == want(*waves[:at + 1])
        assert f"{len(xs)} input and {len(xs)} output records" in capsys.readouterr().err
    # Once more with nothing new: nothing written twice.
    assert snet_main(command(tmp_path, "--available-now")) == 0
    assert committed_outputs(tmp_path / "out") == want(*waves)


def wait_for(condition, what: str, child: subprocess.Popen):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        if child.poll() is not None:
            raise AssertionError(f"the stream ended ({child.returncode}) before {what}: {child.stderr.read()}")
        time.sleep(0.05)  # polling the sink's commit log: the event is a commit
    raise AssertionError(f"{what} did not happen within {WAIT} s")


def start(tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "snet", *command(tmp_path)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_a_driver_killed_mid_stream_and_started_again_gives_each_output_once(spark_installed, tmp_path):
    folder(tmp_path, pause=0.002)  # 2 ms a record: a micro-batch of 1,500 records is a few seconds long
    drop(tmp_path, "first", range(0, 200))
    child = start(tmp_path)
    try:
        wait_for(lambda: committed_outputs(tmp_path / "out") == want(range(0, 200)), "the first commit", child)
        drop(tmp_path, "second", range(200, 1700))
        # Killed while it runs the second file: once Spark has started its micro-batch (the offset log has it).
        wait_for(lambda: (tmp_path / "ck" / "offsets" / "1").exists(), "the second micro-batch", child)
        child.send_signal(signal.SIGKILL)
        child.wait(WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    drop(tmp_path, "third", range(1700, 1800))
    again = subprocess.run([sys.executable, "-m", "snet", *command(tmp_path, "--available-now")], cwd=tmp_path,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=WAIT)
    assert again.returncode == 0, again.stderr
    assert committed_outputs(tmp_path / "out") == want(range(0, 1800))


def test_sigterm_stops_the_stream_after_its_micro_batch_with_status_0(spark_installed, tmp_path):
    folder(tmp_path)
    drop(tmp_path, "first", range(0, 100))
    child = start(tmp_path)
    try:
        wait_for(lambda: committed_outputs(tmp_path / "out") == want(range(0, 100)), "the first commit", child)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert "snet: stream stopped" in err
    assert "Traceback" not in err
    assert committed_outputs(tmp_path / "out") == want(range(0, 100))


def test_a_failing_box_fails_the_stream_with_its_error(spark, tmp_path, capsys):
    folder(tmp_path)
    (tmp_path / "net.py").write_text("def f(x):\n    if x == 7:\n        raise ValueError('no 7')\n"
                                     "    return {'y': x}\n")
    drop(tmp_path, "first", range(0, 20))
    assert snet_main(command(tmp_path, "--available-now")) == 1
    err = capsys.readouterr().err
    assert "box 'f' raised ValueError: no 7" in err
    assert committed_files(tmp_path / "out") == []


PAIRS = "net pairs connect [| {x, <k>}, {y, <k>} |] !! <k>;\n"


def drop_columns(tmp_path: Path, name: str, columns: dict) -> None:
    """A Parquet file of int64 columns (None: a null, an absent label), renamed into the source folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    aside = tmp_path / f".{name}.parquet"
    pq.write_table(pa.table({k: pa.array(v, pa.int64()) for k, v in columns.items()}), aside)
    os.rename(aside, tmp_path / "src" / f"{name}.parquet")


def test_a_keyed_synchro_cell_pairs_records_of_different_micro_batches(spark, tmp_path, capsys):
    """Each tag value's cell is in Spark's state store between micro-batches (and runs, here)."""
    import pyarrow.parquet as pq

    (tmp_path / "net.snet").write_text(PAIRS)
    (tmp_path / "src").mkdir()
    n = 40
    drop_columns(tmp_path, "xs", {"x": [10 * k for k in range(n)], "y": [None] * n, "<k>": list(range(n))})
    assert snet_main(command(tmp_path, "--available-now")) == 0
    assert committed_files(tmp_path / "out") == [] or all(
        pq.read_table(p).num_rows == 0 for p in committed_files(tmp_path / "out"))
    # The y of every other tag in a second micro-batch, the rest in a third, with a second x for tag 0.
    drop_columns(tmp_path, "ys-even", {"x": [None] * (n // 2), "y": [k + 1000 for k in range(0, n, 2)],
                                       "<k>": list(range(0, n, 2))})
    assert snet_main(command(tmp_path, "--available-now")) == 0
    drop_columns(tmp_path, "ys-odd", {"x": [None] * (n // 2) + [7], "y": [k + 1000 for k in range(1, n, 2)] + [None],
                                      "<k>": list(range(1, n, 2)) + [0]})
    assert snet_main(command(tmp_path, "--available-now")) == 0
    got = Counter()
    for path in committed_files(tmp_path / "out"):
        got.update(tuple(sorted(r.items())) for r in pq.read_table(path).to_pylist())
    # Tag 0's cell fired in the second micro-batch: its second x passes the fired cell (an identity) alone.
    want = Counter(tuple(sorted({"x": 10 * k, "y": k + 1000, "<k>": k}.items())) for k in range(n))
    want[tuple(sorted({"x": 7, "y": None, "<k>": 0}.items()))] += 1
    assert got == want


def test_a_source_without_the_key_column_is_refused_before_the_query_starts(spark, tmp_path, capsys):
    """A keyed stream partitions its state by the split's tag column: files without it are refused (exit 2),
    as a batch run refuses them, and no query starts (no checkpoint location is written)."""
    (tmp_path / "net.snet").write_text(PAIRS)
    (tmp_path / "src").mkdir()
    drop_columns(tmp_path, "xs", {"x": [1, 2, 3]})
    assert snet_main(command(tmp_path, "--available-now")) == 2
    err = capsys.readouterr().err
    assert "keeps state per <k>, so the input is partitioned by its column <k>, which " in err, err
    assert f"{tmp_path / 'src'} lacks (columns: x)" in err, err
    assert not (tmp_path / "ck").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("words, message", [
    (["--available-now"], "--stream needs --checkpoint DIR"),
    (["--checkpoint", "CK", "--checkpoint-interval", "2"], "--checkpoint-interval does not apply to a run with "
                                                            "--stream"),
    (["--checkpoint", "CK", "--on-error", "skip"], "--on-error skip does not apply"),
])
def test_stream_options_that_cannot_work_are_refused(words, message, tmp_path):
    folder(tmp_path)
    drop(tmp_path, "first", range(3))
    words = [w.replace("CK", str(tmp_path / "ck")) for w in words]
    base = ["run", str(tmp_path / "net.snet"), "--spark", MASTER, "--stream", "-i", str(tmp_path / "src"),
            "--input-format", "parquet", "-o", str(tmp_path / "out"), "--output-format", "parquet"]
    done = subprocess.run([sys.executable, "-m", "snet", *base, *words], cwd=tmp_path, capture_output=True,
                          text=True, timeout=WAIT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_available_now_without_stream_is_refused(tmp_path):
    folder(tmp_path)
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "net.snet"), "-i", "in.jsonl",
                           "--available-now"], cwd=tmp_path, capture_output=True, text=True, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2
    assert "--available-now applies to runs with --stream" in done.stderr


def test_a_network_whose_state_no_tag_partitions_is_refused_with_its_position(tmp_path):
    (tmp_path / "net.snet").write_text("net cell connect [| {x}, {y} |];\n")
    (tmp_path / "src").mkdir()
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "net.snet"), "--spark", MASTER,
                           "--stream", "-i", str(tmp_path / "src"), "--input-format", "parquet", "-o",
                           str(tmp_path / "out"), "--output-format", "parquet", "--checkpoint", str(tmp_path / "ck")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2, done.stderr
    assert "a stream (--stream) keeps state per tag value only" in done.stderr
    assert "net.snet:1:" in done.stderr  # where the cell is


def test_spark_apply_on_a_streaming_dataframe_keeps_each_tag_s_state(spark, tmp_path):
    """A keyed network dropped into a user's own streaming job: readStream, net.spark_apply, writeStream."""
    import snet

    (tmp_path / "src").mkdir()
    net = snet.load(PAIRS)
    outputs = Counter()
    waves = [{"x": [1, 2, 3], "y": [None] * 3, "<k>": [1, 2, 3]},
             {"x": [None] * 3, "y": [10, 20, 30], "<k>": [1, 2, 3]}]
    for at, wave in enumerate(waves):
        drop_columns(tmp_path, f"wave{at}", wave)
        stream = spark.readStream.schema("x long, y long, `<k>` long").parquet(str(tmp_path / "src"))
        query = net.spark_apply(stream).writeStream.format("parquet").option("path", str(tmp_path / "out")) \
            .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
        query.awaitTermination(WAIT)
        assert query.exception() is None
    import pyarrow.parquet as pq

    for path in committed_files(tmp_path / "out"):
        outputs.update(tuple(sorted(r.items())) for r in pq.read_table(path).to_pylist())
    assert outputs == Counter(tuple(sorted({"x": k, "y": 10 * k, "<k>": k}.items())) for k in (1, 2, 3))


def test_a_json_lines_stream_in_two_waves(spark, tmp_path):
    """The other file formats stream too: JSON Lines in, JSON Lines out."""
    folder(tmp_path)
    words = [w if w != "parquet" else "json" for w in command(tmp_path, "--available-now")]
    waves = [range(0, 50), range(50, 80)]
    for at, xs in enumerate(waves):
        aside = tmp_path / f".wave{at}.json"
        aside.write_text("".join(json.dumps({"x": x}) + "\n" for x in xs))
        os.rename(aside, tmp_path / "src" / f"wave{at}.json")
        assert snet_main(words) == 0
        got = Counter(json.loads(line)["y"] for path in committed_files(tmp_path / "out")
                      for line in path.read_text().splitlines())
        assert got == want(*waves[:at + 1])


def _csv_wave(aside: Path, xs) -> None:
    aside.write_text("x\n" + "".join(f"{x}\n" for x in xs))


def _orc_wave(aside: Path, xs) -> None:
    import pyarrow as pa
    import pyarrow.orc as orc

    orc.write_table(pa.table({"x": pa.array(list(xs), pa.int64())}), str(aside))


def _csv_outputs(path: Path) -> list:
    import csv

    with open(path, newline="") as f:
        return [int(row["y"]) for row in csv.DictReader(f)]


def _orc_outputs(path: Path) -> list:
    import pyarrow.orc as orc

    return orc.read_table(str(path)).column("y").to_pylist()


@pytest.mark.parametrize("fmt, write, read", [("csv", _csv_wave, _csv_outputs), ("orc", _orc_wave, _orc_outputs)])
def test_csv_and_orc_streams_in_two_waves(spark, tmp_path, fmt, write, read):
    """CSV (with a header line) and ORC stream as Parquet and JSON Lines do: each wave's outputs once."""
    folder(tmp_path)
    words = [w if w != "parquet" else fmt for w in command(tmp_path, "--available-now")]
    waves = [range(0, 40), range(40, 70)]
    for at, xs in enumerate(waves):
        aside = tmp_path / f".wave{at}.{fmt}"
        write(aside, xs)
        os.rename(aside, tmp_path / "src" / f"wave{at}.{fmt}")
        assert snet_main(words) == 0
        got = Counter(y for path in committed_files(tmp_path / "out") for y in read(path))
        assert got == want(*waves[:at + 1])
