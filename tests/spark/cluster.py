"""A real Spark standalone cluster on this machine, started from the pyspark package's own scripts.

:class:`Cluster` starts a master and two workers with ``bin/spark-class``
(``org.apache.spark.deploy.master.Master`` and ``...worker.Worker``), as a
person without a Spark installation would with pip's pyspark.  Each worker
has 1 core, its own ``SPARK_WORKER_DIR`` and its own working directory, and
a ``PYTHONPATH`` without the project's source tree: executors get snet,
the boxes and the modules beside them only from what snet ships.  Every
process listens on 127.0.0.1.  :meth:`Cluster.stop` ends the processes it
started (by their process ids) and is called however the tests end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def executor_pythonpath() -> str:
    """This process's PYTHONPATH without the project's tree (where pyspark, lark... may live)."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(p for p in parts if Path(p).resolve() != ROOT)


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's processes and of drivers that use it: loopback only."""
    env = dict(os.environ)
    home = spark_home()
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP=HOST, SPARK_MASTER_HOST=HOST,
               PYSPARK_PYTHON=sys.executable, PYTHONHASHSEED="0", SPARK_NO_DAEMONIZE="1")
    env.update(extra)
    return env


class Cluster:
    def __init__(self, base: Path, workers: int = 2):
        self.base = base
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.workers = workers
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def _start(self, name: str, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        log = self.base / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], cwd=cwd, env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))

    def start(self, timeout: float = 90.0) -> "Cluster":
        memory = {"SPARK_DAEMON_MEMORY": "256m"}
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(self.port),
                               "--webui-port", str(self.ui_port)], self.base / "master", spark_env(**memory))
        for i in range(self.workers):
            folder = self.base / f"worker{i}"
            env = spark_env(SPARK_WORKER_DIR=str(folder / "work"), PYTHONPATH=executor_pythonpath(), **memory)
            self._start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", "1",
                                       "--memory", "1g", "--work-dir", str(folder / "work"), "--webui-port",
                                       str(free_port()), self.url], folder, env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a cluster process ended at start:\n{self.log_tail()}")
            if self.alive_workers() == self.workers:
                return self
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not come up in {timeout:g} s:\n{self.log_tail()}")

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        try:
            return int(self.status().get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def log_tail(self, lines: int = 30) -> str:
        text = []
        for log in self.logs:
            if log.exists():
                text.append(f"== {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(text)

    def worker_folders(self) -> list[Path]:
        return [self.base / f"worker{i}" for i in range(self.workers)]

    def stop(self) -> None:
        """End the processes started here (each in its own session: the JVM and what it started)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=10)
        self.processes.clear()
