"""``snet spark-submit``: the spark-submit command it builds, and its checks (no JVM is started here).

A real submission to a standalone cluster is in test_cluster.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from snet.cli import build_parser
from snet.errors import SNetUsageError
from snet.commands.submit import build_command

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("spark_installed")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "net.snet").write_text("net n {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n")
    (tmp_path / "net.py").write_text("import helpers\n\ndef f(a, k):\n    return {'a': helpers.g(a)}\n")
    (tmp_path / "helpers.py").write_text("def g(a):\n    return a\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SNET_SPARK_MASTER", raising=False)
    return tmp_path


def command(argv, tmp_path):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return build_command(argv, str(work), build_parser())


def test_client_mode_runs_snet_run_with_the_master_added(folder):
    cmd = command(["--master", "spark://head:7077", "--driver-memory", "2g", "--", "net.snet", "-i", "in.jsonl",
                   "-o", "out.jsonl", "--spark-batch", "100"], folder)
    assert cmd[0].endswith("spark-submit")
    primary = cmd.index(str(folder / "work" / "snet_submit_main.py"))
    assert cmd[1:primary] == ["--master", "spark://head:7077", "--driver-memory", "2g", "--conf",
                              f"spark.pyspark.driver.python={sys.executable}", "--conf", "spark.log.level=WARN"]
    assert cmd[primary + 1:] == ["run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--spark-batch", "100",
                                 "--spark", "spark://head:7077"]
    assert "from snet.__main__ import main" in Path(cmd[primary]).read_text()


def test_cluster_mode_ships_snet_the_network_and_the_box_folder(folder):
    cmd = command(["--master", "yarn", "--deploy-mode", "cluster", "--conf", "spark.log.level=ERROR", "--",
                   str(folder / "net.snet"), "-i", "hdfs-mounted/in.jsonl"], folder)
    py_files = cmd[cmd.index("--py-files") + 1].split(",")
    files = cmd[cmd.index("--files") + 1].split(",")
    assert files == [str(folder / "net.snet"), str(folder / "net.py")]
    with zipfile.ZipFile(py_files[0]) as z:
        names = set(z.namelist())
    assert {"snet/cli.py", "snet/syntax/grammar.lark", "lark/__init__.py", "attr/__init__.py",
            "tqdm/__init__.py"} <= names
    with zipfile.ZipFile(py_files[1]) as z:
        assert sorted(z.namelist()) == ["helpers.py", "net.py"]
    # the driver finds the shipped network by its base name in its working folder
    assert cmd[-6:] == ["run", "net.snet", "-i", "hdfs-mounted/in.jsonl", "--spark", "yarn"]
    assert "spark.pyspark.driver.python" not in " ".join(cmd)
    assert cmd.count("spark.log.level=ERROR") == 1 and "spark.log.level=WARN" not in cmd


@pytest.mark.parametrize("argv, words", [
    (["--master", "local[2]", "net.snet"], "the '--' is missing"),
    (["--", "net.snet"], "needs --master MASTER"),
    (["--master", "bogus://x", "--", "net.snet"], "'bogus://x' is not a Spark master URL"),
    (["--master", "spark://h:7077", "--deploy-mode", "cluster", "--", "net.snet"],
     "Spark runs no Python driver in cluster mode on spark masters"),
    (["--master", "local[2]", "--", "net.snet", "--spark", "local[3]"],
     "--spark local[3] after '--' is not the --master local[2]"),
    (["--master", "local[2]", "--", "net.snet", "--no-such-option"], "are not valid"),
])
def test_mistakes_are_named(folder, argv, words, capsys):
    with pytest.raises(SNetUsageError, match=None) as e:
        command(argv, folder)
    assert words in str(e.value)


def run_cli(folder, *argv):
    env = dict(os.environ)
    env["TMPDIR"] = str(folder)  # where --dry-run leaves the files its command names
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run([sys.executable, "-m", "snet", "spark-submit", *argv], cwd=folder, capture_output=True,
                          text=True, timeout=120, env=env)


def test_dry_run_prints_the_command_and_an_unreachable_master_fails_at_once(folder):
    dry = run_cli(folder, "--master", "local[2]", "--dry-run", "--", "net.snet", "-i", "in.jsonl")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip().endswith("run net.snet -i in.jsonl --spark 'local[2]'")
    (folder / "out.jsonl").write_text("earlier\n")
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bad = run_cli(folder, "--master", f"spark://127.0.0.1:{port}", "--", "net.snet", "-i", "net.snet", "-o",
                  "out.jsonl")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (f"error: cannot reach the Spark master spark://127.0.0.1:{port}: connection "
                                  f"refused at 127.0.0.1:{port} (nothing listens there)")
    assert (folder / "out.jsonl").read_text() == "earlier\n"
