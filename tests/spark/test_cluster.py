"""snet on a real standalone cluster: a master and two 1-core workers started from pyspark's own scripts.

The cluster (tests/spark/cluster.py) starts once for this module, in about
20-40 s, and is torn down at its end.  Its workers share nothing with the
driver but what snet ships: their PYTHONPATH lacks the project's tree, and
each runs in a folder of its own.  Driver processes use it: the driver
program tests/spark/cluster_cases.py (split conformance cases compared with
the reference engine, and a box module that imports modules beside it); one
``snet run`` whose box kills its Python worker mid-run; one ``snet
spark-submit`` in client mode; two Spark-native ``snet run``s (Parquet in and
out, a JSON directory in and out) whose files the executors read and write
at the same absolute paths; one ``snet run`` during which the test kills
the worker running a chosen record (the ``cluster`` fixture starts a killed
worker again before the next test); and two streams (``--stream``): one that
loses a worker in the same way, one whose driver is SIGKILLed between three
waves of files.
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

from conftest import spark_missing

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WAIT = 300  # seconds: an upper bound on one step, never a pace
CASES = ["split_det_order", "split_many_keys", "split_sync_per_key", "fibonacci"]

HELPERS_NET = "net shipped {\n  box f((a, <k>) -> (a, where, snet, caller, front));\n} connect f ! <k>;\n"
HELPERS_BOXES = '''
import snet
import snet.core.boxes
import helpers
from tools.scale import factor

def f(a, k):
    try:
        import snet_front.runtime
        front = snet_front.runtime.__file__
    except ImportError:
        front = None
    # caller: the box caller module the task runs (the compiled one or the pure-Python one)
    return {"a": helpers.double(a) * factor, "where": helpers.__file__, "snet": snet.__file__,
            "caller": snet.core.boxes.__file__, "front": front}
'''


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    missing = spark_missing()
    if missing:
        pytest.skip(missing)
    import cluster as standalone

    c = standalone.Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture
def cluster(standalone_cluster):
    """The module's cluster with both workers alive: a worker a test killed is started again first."""
    standalone_cluster.restore_workers()
    return standalone_cluster


def driver_env():
    import cluster as standalone

    path = os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    return standalone.spark_env(PYTHONPATH=path)


def canonical(records) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in records]


def helper_folder(folder: Path, boxes: str, net: str) -> Path:
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "__init__.py").write_text("")
    (folder / "tools" / "scale.py").write_text("factor = 10\n")
    (folder / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (folder / "net.py").write_text(boxes)
    (folder / "net.snet").write_text(net)
    return folder


def spark_words(url: str) -> list[str]:
    """``snet run`` options of a client of the test cluster, taking only what snet ships."""
    return ["--spark", url, "--spark-conf", "spark.driver.host=127.0.0.1", "--spark-conf",
            "spark.driver.bindAddress=127.0.0.1", "--spark-conf", f"spark.pyspark.python={sys.executable}",
            "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "snet.boxes=shipped"]


def reference_run(folder: Path, net: str, records: list[dict]) -> list[dict]:
    """The network's outputs with the reference engine, without Spark, in a process of its own (the box
    module imports its siblings by plain names, which would stay in this process's modules)."""
    (folder / "reference-in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.run([sys.executable, "-m", "snet", "run", net, "-i", "reference-in.jsonl", "-o",
                           "reference-out.jsonl", "--engine", "reference"], cwd=folder, capture_output=True,
                          text=True, timeout=120, env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:]
    return [json.loads(line) for line in (folder / "reference-out.jsonl").read_text().splitlines()]


def without(records, label: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k != label and v is not None} for r in records]


def shipped_from_a_worker(cluster, where: str) -> bool:
    """Imported on an executor from the shipped zip in one of the workers' folders."""
    return cluster.worker_of(where) is not None and ".zip" in where and where.endswith("helpers.py")


def test_split_cases_and_shipped_helpers_on_the_cluster(cluster, tmp_path):
    folder = helper_folder(tmp_path / "boxes", HELPERS_BOXES, HELPERS_NET)
    result = subprocess.run([sys.executable, str(HERE / "cluster_cases.py"), cluster.url, str(folder), *CASES],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600, env=driver_env())
    assert result.returncode == 0, result.stderr[-5000:] + cluster.log_tail()
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    by_case = {line["case"]: line for line in lines}
    assert sorted(by_case) == sorted(CASES + ["helpers"])
    for name in CASES:
        line = by_case[name]
        spark, local = canonical(line["spark"]), canonical(line["local"])
        assert spark, name
        if line["ordered"]:
            assert spark == local, name
        else:
            assert Counter(spark) == Counter(local), name
    helpers = by_case["helpers"]["spark"]
    assert sorted(r["a"] for r in helpers) == [0, 20, 40, 60, 80, 100]
    workers = [str(w) for w in cluster.worker_folders()]
    for record in helpers:
        # imported on an executor, from the shipped zip in that worker's own folder
        assert any(record["where"].startswith(w + os.sep) for w in workers), record
        assert ".zip" in record["where"] and record["where"].endswith("helpers.py"), record
        # snet itself from the shipped package zip (in the executor's working folder), not the source tree
        assert record["snet"].endswith("snet.zip/snet/__init__.py") and not record["snet"].startswith(str(ROOT)), \
            record
        assert_compiled_modules_shipped(cluster, record)


def assert_compiled_modules_shipped(cluster, record: dict) -> None:
    """The task ran the driver's compiled box caller and had FRONT, both extracted from the shipped zip into
    the executor's own folder; a driver without the built extension ships the pure-Python caller."""
    from importlib.machinery import EXTENSION_SUFFIXES

    from snet.shipped_native import native_suffix

    caller, front = record["caller"], record["front"]
    if native_suffix() is None:
        assert caller.endswith("snet.zip/snet/core/boxes.py") and front is None, record
        return
    folder = os.path.dirname(os.path.dirname(os.path.dirname(caller)))
    assert cluster.worker_of(caller) is not None and not caller.startswith(str(ROOT)), record
    assert os.path.basename(folder).startswith("snet-native-"), record
    assert caller == os.path.join(folder, "snet", "core", "boxes" + EXTENSION_SUFFIXES[0]), record
    assert front == os.path.join(folder, "snet_front", "runtime" + EXTENSION_SUFFIXES[0]), record


CRASH_BOXES = '''
import os
import helpers

def f(a, k):
    if a == 7:
        os._exit(5)
    return {"a": helpers.double(a)}
'''
CRASH_NET = "net crashing {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n"


def test_a_worker_killed_by_a_box_on_the_cluster_is_named_and_earlier_outputs_written(cluster, tmp_path):
    folder = helper_folder(tmp_path / "boxes", CRASH_BOXES, CRASH_NET)
    (folder / "in.jsonl").write_text("".join(json.dumps({"a": i, "<k>": i % 3}) + "\n" for i in range(12)))
    result = subprocess.run(
        [sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--spark", cluster.url,
         "--spark-conf", "spark.driver.host=127.0.0.1", "--spark-conf", "spark.driver.bindAddress=127.0.0.1",
         "--spark-conf", f"spark.pyspark.python={sys.executable}", "--spark-conf", "spark.executor.memory=512m",
         "--spark-conf", "snet.boxes=shipped"],
        cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert result.returncode == 1, result.stderr[-5000:]
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors[0].endswith("net.snet:3:11: error: box 'f' ended its Python worker (exit status 5) on input "
                              "(a=7, <k>=1)"), result.stderr[-5000:]
    assert 'the split\'s input record: {"a":7,"<k>":1}' in result.stderr
    written = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    assert sorted(r["a"] for r in written) == [2 * i for i in range(7)]


def test_a_workers_port_given_for_the_master_fails_in_seconds_and_leaves_the_output_alone(cluster, tmp_path):
    """A worker speaks the master's RPC protocol; without the endpoint check this took the client's 66 s."""
    host, port = cluster.worker_addresses()[0]
    folder = helper_folder(tmp_path / "boxes", HELPERS_BOXES, HELPERS_NET)
    (folder / "in.jsonl").write_text(json.dumps({"a": 1, "<k>": 0}) + "\n")
    (folder / "out.jsonl").write_text("the output of an earlier run\n")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--spark",
         f"spark://{host}:{port}", "--spark-conf", "spark.driver.host=127.0.0.1", "--spark-conf",
         "spark.driver.bindAddress=127.0.0.1"],
        cwd=folder, capture_output=True, text=True, timeout=300, env=driver_env())
    seconds = time.monotonic() - started
    assert result.returncode == 2, result.stderr[-5000:]
    error = (f"error: spark://{host}:{port} is not a Spark master: {host}:{port} answers in Spark's RPC protocol but "
             "has no master endpoint (a worker's or a driver's port?); a master's RPC port is the one its log names "
             "in 'Starting Spark master at spark://HOST:PORT', 7077 by default")
    assert result.stderr.splitlines()[-1] == error, result.stderr[-5000:]
    assert "\tat " not in result.stderr, result.stderr[-5000:]  # no JVM stack trace
    assert seconds < 30, seconds  # a guard against the client's three 20 s registration attempts, not a benchmark
    assert (folder / "out.jsonl").read_text() == "the output of an earlier run\n"


def test_snet_spark_submit_in_client_mode_on_the_cluster(cluster, tmp_path):
    folder = helper_folder(tmp_path / "boxes", HELPERS_BOXES, HELPERS_NET)
    (folder / "in.jsonl").write_text("".join(json.dumps({"a": i, "<k>": i % 2}) + "\n" for i in range(4)))
    result = subprocess.run(
        [sys.executable, "-m", "snet", "spark-submit", "--master", cluster.url, "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", f"spark.pyspark.python={sys.executable}",
         "--conf", "spark.executor.memory=512m", "--", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
         "--spark-conf", "snet.boxes=shipped"],
        cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert result.returncode == 0, result.stderr[-5000:]
    written = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    assert sorted(r["a"] for r in written) == [0, 20, 40, 60]
    workers = [str(w) for w in cluster.worker_folders()]
    assert all(any(r["where"].startswith(w + os.sep) for w in workers) for r in written), written
    for record in written:
        assert_compiled_modules_shipped(cluster, record)


NATIVE_BOXES = '''
import helpers
from tools.scale import factor

def f(a):
    return {"a": helpers.double(a), "where": helpers.__file__}

def g(a):
    return {"b": a * factor}

def h(a):
    if a % 2:
        return {"c": a * factor, "where": helpers.__file__}
    return {"a": helpers.double(a), "where": helpers.__file__}
'''
CHAIN_NET = "net chain {\n  box f((a) -> (a, where));\n  box g((a) -> (b));\n} connect f .. g;\n"
PAIRS_NET = "net pairs {\n  box h((a) -> (a, where) | (c, where));\n} connect (h .. [| {a}, {c} |]) ! <k>;\n"


def test_spark_native_parquet_in_parquet_out_on_the_cluster(cluster, tmp_path):
    """The whole network in the executors' tasks, the boxes and their helpers from the shipped zip."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = helper_folder(tmp_path / "boxes", NATIVE_BOXES, CHAIN_NET)
    records = [{"a": i, "id": i} for i in range(200)]
    source = tmp_path / "in.parquet"
    source.mkdir()
    for i in range(2):  # two files: two tasks
        pq.write_table(pa.Table.from_pylist(records[i::2]), source / f"part-{i}.parquet")
    out = tmp_path / "out.parquet"
    done = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", str(source), "-o", str(out),
                           *spark_words(cluster.url), "--spark-schema", "b long, id long, where string"],
                          cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()
    assert (out / "_SUCCESS").exists() and list(out.glob("part-*.parquet"))
    got = pq.read_table(out).to_pylist()
    assert all(shipped_from_a_worker(cluster, r["where"]) for r in got), got[:3]
    local = reference_run(folder, "net.snet", records)
    assert Counter(canonical(without(got, "where"))) == Counter(canonical(without(local, "where")))
    assert sorted(r["b"] for r in got) == [20 * i for i in range(200)]


def test_spark_native_json_directory_in_and_out_with_state_per_tag_on_the_cluster(cluster, tmp_path):
    """A synchro-cell per tag value: the DataFrame is repartitioned by the tag, each replica in one task."""
    folder = helper_folder(tmp_path / "boxes", NATIVE_BOXES, PAIRS_NET)
    records = [{"a": i, "<k>": i % 5} for i in range(60)]
    source = tmp_path / "in"
    source.mkdir()
    for i, part in enumerate((records[:30], records[30:])):
        (source / f"part-{i}.json").write_text("".join(json.dumps(r) + "\n" for r in part))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", str(source), "-o", str(out),
                           "--format", "json", *spark_words(cluster.url),
                           "--spark-schema", "a long, c long, where string, `<k>` long"],
                          cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()
    assert (out / "_SUCCESS").exists()
    got = [json.loads(line) for path in sorted(out.glob("part-*.json")) for line in path.read_text().splitlines()]
    assert all(shipped_from_a_worker(cluster, r["where"]) for r in got), got[:3]
    local = reference_run(folder, "net.snet", records)
    assert Counter(canonical(without(got, "where"))) == Counter(canonical(without(local, "where")))
    # one pair per tag value, the other records passed on alone
    assert sum(1 for r in got if "a" in r and "c" in r) == 5 and len(got) == 55


NATIVE_CRASH_BOXES = '''
import os
import helpers

def h(a):
    if a == 17:
        os._exit(5)
    return {"c": helpers.double(a)} if a % 2 else {"a": helpers.double(a)}
'''
NATIVE_CRASH_NET = "net pairs {\n  box h((a) -> (a) | (c));\n} connect (h .. [| {a}, {c} |]) ! <k>;\n"


def test_a_box_that_ends_its_python_worker_in_a_spark_native_run_on_the_cluster_is_named(cluster, tmp_path):
    """A keyed Spark-native run whose box calls os._exit on the executors: exit 1, the box, its arguments and the
    record in one error line, no JVM frames; the outputs made before the crash written (those of every record
    before it, none of the crashing record's); --progress printed the Spark UI's address."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet

    folder = helper_folder(tmp_path / "boxes", NATIVE_CRASH_BOXES, NATIVE_CRASH_NET)
    records = [{"a": i, "<k>": i % 5} for i in range(40)]
    source = tmp_path / "in.parquet"
    source.mkdir()
    for i, part in enumerate((records[:20], records[20:])):
        pq.write_table(pa.Table.from_pylist(part), source / f"part-{i}.parquet")
    out = tmp_path / "out.parquet"
    done = subprocess.run([sys.executable, "-m", "snet", "run", "--progress", "net.snet", "-i", str(source), "-o",
                           str(out), *spark_words(cluster.url), "--spark-schema", "a long, c long, `<k>` long"],
                          cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert done.returncode == 1, done.stderr[-5000:] + cluster.log_tail()
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == ["net.snet:3:12: error: box 'h' ended its Python worker (exit status 5) on input (a=17)"], \
        done.stderr[-5000:]
    assert 'the input record: {"a":17,"<k>":2}' in done.stderr.splitlines()
    assert re.search(r"^snet progress: Spark UI at http://[\w.:-]+:\d+$", done.stderr, re.M), done.stderr[-5000:]
    assert "at org.apache" not in done.stderr and "Py4J" not in done.stderr
    got = pq.read_table(out).to_pylist()
    assert done.stderr.splitlines()[-1] == f"{len(got)} output records made before the failure were written to {out}"
    net = snet.load(str(folder / "net.snet"), boxes={"h": lambda a: {"c": 2 * a} if a % 2 else {"a": 2 * a}})
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    rows = Counter(key({k: v for k, v in r.items() if v is not None}) for r in got)
    before = Counter(key(r) for r in net.run(records[:17], engine="reference"))
    everything = Counter(key(r) for r in net.run(records, engine="reference"))
    assert before - rows == Counter() and rows - everything == Counter(), (rows, before)
    assert not [r for r in got if r.get("c") == 34]  # nothing of the record that crashed


def test_the_start_up_probe_accepts_the_master_and_refuses_its_web_ui(cluster):
    """The protocol probe of snet.spark.cluster.preflight against a real master: its RPC port passes, its HTTP port not."""
    from snet.errors import SNetUsageError
    from snet.spark.cluster import preflight

    preflight.check_master(cluster.url)
    ui = f"spark://127.0.0.1:{cluster.ui_port}"
    with pytest.raises(SNetUsageError) as e:
        preflight.check_master(ui)
    assert str(e.value).startswith(f"{ui} is not a Spark master: 127.0.0.1:{cluster.ui_port} answered \"HTTP/1.1 ")


KILL_BOXES = '''
import json
import os
import time

import helpers

MARK = {mark!r}
CLUSTER = {base!r}
VICTIM = 21

def f(a):
    if a == VICTIM and os.getcwd().startswith(CLUSTER + os.sep):  # on the cluster's executors only
        note = json.dumps({{"cwd": os.getcwd(), "pid": os.getpid()}})
        with open(MARK + "." + str(os.getpid()), "w") as out:
            out.write(note)
        try:
            os.link(MARK + "." + str(os.getpid()), MARK)  # the first attempt only, with its note whole
        except FileExistsError:
            with open(MARK + ".again", "a") as out:  # a later attempt: go on
                out.write(note + "\\n")
        else:
            time.sleep(60)  # the test kills this worker long before
            open(MARK + ".slept", "w").close()
    if a % 2:
        return {{"c": a * 10}}
    return {{"a": helpers.double(a)}}
'''
KILL_NET = "net survivor {\n  box f((a) -> (a) | (c));\n} connect (f .. [| {a}, {c} |]) !! <k>;\n"


def run_killing_the_victim_s_worker(cluster, folder: Path, mark: Path, words: list[str]) -> int:
    """Run ``python -m snet WORDS`` in ``folder``; once the box of KILL_BOXES has marked its victim record (in
    ``mark``), SIGKILL the worker running it, while the box sleeps inside the task.  The run must then end
    with status 0, the first attempt dead mid-record; the killed worker's index."""
    run = subprocess.Popen([sys.executable, "-m", "snet", *words], cwd=folder, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=driver_env())
    try:
        deadline = time.monotonic() + 300
        while not mark.exists():
            assert run.poll() is None, run.communicate()[1][-5000:]
            assert time.monotonic() < deadline, "the box never reached its record"
            time.sleep(0.1)  # polling the mark file: the event is the box's write
        first = json.loads(mark.read_text())
        victim = cluster.worker_of(first["cwd"])
        assert victim is not None, first
        cluster.kill_worker(victim)
        _, stderr = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, stderr[-5000:] + cluster.log_tail()
    assert not mark.with_name(mark.name + ".slept").exists()  # the first attempt died mid-record
    return victim


def test_a_worker_killed_mid_run_loses_nothing_and_duplicates_nothing(cluster, tmp_path):
    """SIGKILL the worker (and its executor) running a task mid-record: Spark runs the task again on the
    other worker, from the replicas' state of the last batch, and the output is the reference engine's."""
    import time

    mark = tmp_path / "mark"
    folder = helper_folder(tmp_path / "boxes", KILL_BOXES.format(mark=str(mark), base=str(cluster.base)), KILL_NET)
    records = [{"a": i, "<k>": i % 3} for i in range(40)]
    (folder / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    victim = run_killing_the_victim_s_worker(
        cluster, folder, mark, ["run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl", *spark_words(cluster.url),
                                "--spark-splits", "all", "--spark-batch", "8"])
    again = [json.loads(line) for line in (tmp_path / "mark.again").read_text().splitlines()]
    assert len(again) == 1 and cluster.worker_of(again[0]["cwd"]) == 1 - victim, (victim, again)
    written = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    local = reference_run(folder, "net.snet", records)
    assert canonical(written) == canonical(local)  # `!!` keeps input order: the same list
    # every input once: its a (doubled) or its c, nothing lost, nothing twice
    seen = Counter([r["a"] // 2 for r in written if "a" in r] + [r["c"] // 10 for r in written if "c" in r])
    assert seen == Counter(range(40))
    assert sum(1 for r in written if "a" in r and "c" in r) == 3  # one pair per tag value


def test_the_start_up_probe_accepts_a_master_whose_rpc_is_in_tls(tmp_path):
    """A master with spark.ssl.rpc.enabled closes a plain request unanswered; the probe asks again in TLS."""
    missing = spark_missing()
    if missing:
        pytest.skip(missing)
    import shutil
    import time

    import cluster as standalone
    from snet.spark.cluster import preflight

    keytool = shutil.which("keytool")
    if keytool is None:
        pytest.skip("no keytool to make the master's key store")
    store = tmp_path / "keys.jks"
    subprocess.run([keytool, "-genkeypair", "-alias", "spark", "-keyalg", "RSA", "-keysize", "2048", "-dname",
                    "CN=127.0.0.1", "-keystore", str(store), "-storepass", "changeit", "-keypass", "changeit",
                    "-validity", "2", "-noprompt"], check=True, capture_output=True, timeout=60)
    properties = tmp_path / "tls.conf"
    properties.write_text("spark.authenticate true\nspark.authenticate.secret probe\nspark.ssl.rpc.enabled true\n"
                          f"spark.ssl.rpc.keyStore {store}\nspark.ssl.rpc.keyStorePassword changeit\n"
                          f"spark.ssl.rpc.keyPassword changeit\nspark.ssl.rpc.trustStore {store}\n"
                          "spark.ssl.rpc.trustStorePassword changeit\n")
    master = standalone.Cluster(tmp_path, workers=0)
    try:
        master._start("master", ["org.apache.spark.deploy.master.Master", "--host", standalone.HOST, "--port",
                                 str(master.port), "--webui-port", str(master.ui_port), "--properties-file",
                                 str(properties)], tmp_path / "master", standalone.spark_env(SPARK_DAEMON_MEMORY="256m"))
        log = tmp_path / "master.log"
        deadline = time.monotonic() + 90
        while "New state: ALIVE" not in (log.read_text(errors="replace") if log.exists() else ""):
            assert time.monotonic() < deadline and master.processes[0].poll() is None, master.log_tail()
            time.sleep(0.5)
        assert "RPC SSL enabled" in log.read_text(errors="replace")
        preflight.check_master(master.url)
    finally:
        master.stop()


def test_a_worker_killed_mid_stream_changes_nothing_in_the_output(cluster, tmp_path):
    """``snet run --stream`` of a keyed network on the cluster, two waves of files: the worker running the
    victim record of the second micro-batch is killed (with its executor); Spark runs the task again on the
    other worker, from the state store's last committed state, and the sink holds the outputs an
    uninterrupted run gives, each once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_spark_stream import committed_files

    mark = tmp_path / "mark"
    boxes = KILL_BOXES.format(mark=str(mark), base=str(cluster.base)).replace("VICTIM = 21", "VICTIM = 61")
    folder = helper_folder(tmp_path / "boxes", boxes, KILL_NET)
    (folder / "src").mkdir()

    def drop(name: str, values: range) -> None:
        table = pa.table({"a": pa.array(list(values), pa.int64()), "<k>": pa.array([v % 3 for v in values], pa.int64())})
        pq.write_table(table, folder / f".{name}")
        os.rename(folder / f".{name}", folder / "src" / f"{name}.parquet")

    words = [sys.executable, "-m", "snet", "run", "net.snet", "--stream", "--available-now", "-i", "src",
             "--input-format", "parquet", "-o", "out", "--output-format", "parquet", "--checkpoint", "ck",
             *spark_words(cluster.url)]
    drop("first", range(0, 40))
    done = subprocess.run(words, cwd=folder, capture_output=True, text=True, timeout=600, env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()
    drop("second", range(40, 80))
    run_killing_the_victim_s_worker(cluster, folder, mark, words[3:])
    written = Counter()
    for path in committed_files(folder / "out"):
        written.update(json.dumps({k: v for k, v in r.items() if v is not None}, sort_keys=True)
                       for r in pq.read_table(path).to_pylist())
    # Per tag value: its first even a pairs with its first odd c; every other record passes the fired cell.
    want = Counter()
    for k in range(3):
        values = [v for v in range(80) if v % 3 == k]
        first_a = next(v for v in values if v % 2 == 0)
        first_c = next(v for v in values if v % 2 == 1)
        want[json.dumps({"a": 2 * first_a, "c": 10 * first_c, "<k>": k}, sort_keys=True)] += 1
        for v in values:
            if v not in (first_a, first_c):
                out = {"a": 2 * v, "<k>": k} if v % 2 == 0 else {"c": 10 * v, "<k>": k}
                want[json.dumps(out, sort_keys=True)] += 1
    assert written == want


WAVES_NET = ("net pairs {\n  box wait ((y) -> (y));\n}\n"
             "connect (([{x} -> {x}] | wait) .. [| {x, <k>}, {y, <k>} |]) !! <k>;\n")
WAVES_BOXES = "import time\n\ndef wait(y):\n    time.sleep(0.02)  # a micro-batch of 100 ys lasts a second\n" \
              "    return {'y': y}\n"


def test_three_waves_a_killed_driver_and_cells_paired_across_micro_batches_on_the_cluster(cluster, tmp_path):
    """``snet run --stream`` of a keyed synchro-cell on the cluster, files in three waves: the xs alone
    (``--available-now``: every cell waits), then the ys of the even tags in a stream whose driver is SIGKILLed
    in the middle of that micro-batch, then the ys of the odd tags and a second x for tag 0 (``--available-now``,
    which runs the killed micro-batch again and the new one).  Every tag's x meets its y across micro-batches,
    driver runs and the kill, each pair once; tag 0's second x passes its fired cell alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_spark_stream import committed_files, wait_for

    folder = helper_folder(tmp_path / "boxes", WAVES_BOXES, WAVES_NET)
    (folder / "src").mkdir()
    n = 200

    def drop(name: str, columns: dict) -> None:
        pq.write_table(pa.table({k: pa.array(v, pa.int64()) for k, v in columns.items()}), folder / f".{name}")
        os.rename(folder / f".{name}", folder / "src" / f"{name}.parquet")

    def written() -> Counter:
        return Counter(json.dumps({k: v for k, v in r.items() if v is not None}, sort_keys=True)
                       for path in committed_files(folder / "out") for r in pq.read_table(path).to_pylist())

    words = [sys.executable, "-m", "snet", "run", "net.snet", "--stream", "-i", "src", "--input-format", "parquet",
             "-o", "out", "--output-format", "parquet", "--checkpoint", "ck", *spark_words(cluster.url)]
    drop("xs", {"x": [10 * k for k in range(n)], "y": [None] * n, "<k>": list(range(n))})
    done = subprocess.run(words + ["--available-now"], cwd=folder, capture_output=True, text=True, timeout=600,
                          env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()
    assert written() == Counter()  # every cell holds its x

    drop("ys-even", {"x": [None] * (n // 2), "y": [k + 1000 for k in range(0, n, 2)], "<k>": list(range(0, n, 2))})
    child = subprocess.Popen(words, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=driver_env())
    try:  # killed once Spark has started the second micro-batch (the offset log has it), before its commit
        wait_for(lambda: (folder / "ck" / "offsets" / "1").exists(), "the second micro-batch", child)
        child.kill()
        child.wait(WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert not (folder / "ck" / "commits" / "1").exists()  # the kill came in the middle of the micro-batch

    drop("ys-odd", {"x": [None] * (n // 2) + [7], "y": [k + 1000 for k in range(1, n, 2)] + [None],
                    "<k>": list(range(1, n, 2)) + [0]})
    done = subprocess.run(words + ["--available-now"], cwd=folder, capture_output=True, text=True, timeout=600,
                          env=driver_env())
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()
    want = Counter(json.dumps({"x": 10 * k, "y": k + 1000, "<k>": k}, sort_keys=True) for k in range(n))
    want[json.dumps({"x": 7, "<k>": 0}, sort_keys=True)] += 1
    assert written() == want
