"""snet on a real standalone cluster: a master and two 1-core workers started from pyspark's own scripts.

The cluster (tests/spark/cluster.py) starts once for this module, in about
20-40 s, and is torn down at its end.  Its workers share nothing with the
driver but what snet ships: their PYTHONPATH lacks the project's tree, and
each runs in a folder of its own.  Two driver processes use it: the driver
program tests/spark/cluster_cases.py (split conformance cases compared with
the reference engine, and a box module that imports modules beside it) and
one ``snet run`` whose box kills its Python worker mid-run, and one
``snet spark-submit`` in client mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import spark_missing

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES = ["split_det_order", "split_many_keys", "split_sync_per_key", "fibonacci"]

HELPERS_NET = "net shipped {\n  box f((a, <k>) -> (a, where, snet));\n} connect f ! <k>;\n"
HELPERS_BOXES = '''
import snet
import helpers
from tools.scale import factor

def f(a, k):
    return {"a": helpers.double(a) * factor, "where": helpers.__file__, "snet": snet.__file__}
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
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


def test_the_start_up_probe_accepts_the_master_and_refuses_its_web_ui(cluster):
    """The protocol probe of snet.spark.preflight against a real master: its RPC port passes, its HTTP port not."""
    from snet.errors import SNetUsageError
    from snet.spark import preflight

    preflight.check_master(cluster.url)
    ui = f"spark://127.0.0.1:{cluster.ui_port}"
    with pytest.raises(SNetUsageError) as e:
        preflight.check_master(ui)
    assert str(e.value).startswith(f"{ui} is not a Spark master: 127.0.0.1:{cluster.ui_port} answered \"HTTP/1.1 ")


def test_the_start_up_probe_accepts_a_master_whose_rpc_is_in_tls(tmp_path):
    """A master with spark.ssl.rpc.enabled closes a plain request unanswered; the probe asks again in TLS."""
    missing = spark_missing()
    if missing:
        pytest.skip(missing)
    import shutil
    import time

    import cluster as standalone
    from snet.spark import preflight

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
