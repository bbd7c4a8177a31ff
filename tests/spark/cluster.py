"""A real Spark standalone cluster on this machine, started from the pyspark package's own scripts.

:class:`Cluster` starts a master and two workers with ``bin/spark-class``
(``org.apache.spark.deploy.master.Master`` and ``...worker.Worker``), as a
person without a Spark installation would with pip's pyspark.  Each worker
has 1 core, its own ``SPARK_WORKER_DIR`` and its own working directory, and
a ``PYTHONPATH`` without the project's source tree: executors get snet,
the boxes and the modules beside them only from what snet ships.  Every
process listens on 127.0.0.1.  :meth:`Cluster.stop` ends the processes it
started (by their process ids) and is called however the tests end.
:meth:`Cluster.kill_worker` ends a worker at once, as a machine that dies
would (its JVM and the executors it launched, with SIGKILL), and
:meth:`Cluster.restore_workers` starts again the workers that ended.
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
        self.worker_processes: dict[int, subprocess.Popen] = {}
        self.ended: list[subprocess.Popen] = []  # killed on purpose, not a failure
        self.logs: list[Path] = []

    def _start(self, name: str, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
        cwd.mkdir(parents=True, exist_ok=True)
        log = self.base / f"{name}.log"
        if log not in self.logs:
            self.logs.append(log)
        with open(log, "ab") as out:  # a worker started again writes on after its first life
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], cwd=cwd, env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.processes.append(process)
        return process

    def _start_worker(self, i: int) -> None:
        folder = self.base / f"worker{i}"
        env = spark_env(SPARK_WORKER_DIR=str(folder / "work"), PYTHONPATH=executor_pythonpath(),
                        SPARK_DAEMON_MEMORY="256m")
        self.worker_processes[i] = self._start(
            f"worker{i}", ["org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", "1", "--memory", "1g",
                           "--work-dir", str(folder / "work"), "--webui-port", str(free_port()), self.url],
            folder, env)

    def _wait_for_workers(self, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.processes if p.poll() is not None and p not in self.ended]
            if dead:
                raise RuntimeError(f"a cluster process ended at {what}:\n{self.log_tail()}")
            if self.alive_workers() == self.workers:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not come up in {timeout:g} s at {what}:\n{self.log_tail()}")

    def start(self, timeout: float = 90.0) -> "Cluster":
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(self.port),
                               "--webui-port", str(self.ui_port)], self.base / "master",
                    spark_env(SPARK_DAEMON_MEMORY="256m"))
        for i in range(self.workers):
            self._start_worker(i)
        self._wait_for_workers(timeout, "start")
        return self

    def worker_of(self, path: str) -> int | None:
        """The worker whose folder holds ``path`` (an executor's working directory, say), or None."""
        for i, folder in enumerate(self.worker_folders()):
            if path.startswith(str(folder) + os.sep):
                return i
        return None

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``'s process group: the worker JVM and the executor JVMs it launched.

        The Python daemons of those executors run in process groups of their own;
        they end their workers when their executor's pipe closes.
        """
        process = self.worker_processes[i]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=20)
        self.ended.append(process)

    def wait_for_lost_worker(self, timeout: float = 90.0) -> None:
        """Wait until the master no longer counts a killed worker alive (it sees the connection close)."""
        deadline = time.monotonic() + timeout
        while self.alive_workers() >= self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the master still counts {self.workers} workers alive after a kill")
            time.sleep(0.2)

    def restore_workers(self, timeout: float = 90.0) -> None:
        """Start again the workers killed with :meth:`kill_worker`; wait until the master counts all alive.

        A worker that ended without being killed here is a failure of the cluster, not restarted.
        """
        for i, process in sorted(self.worker_processes.items()):
            if process.poll() is not None and process not in self.ended:
                raise RuntimeError(f"worker {i} ended (status {process.returncode}):\n{self.log_tail()}")
        killed = [i for i, process in sorted(self.worker_processes.items()) if process in self.ended]
        if killed:
            self.wait_for_lost_worker(timeout)
            for i in killed:
                self._start_worker(i)
        if killed or self.alive_workers() != self.workers:
            self._wait_for_workers(timeout, "restart")

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as r:
            return json.loads(r.read())

    def worker_addresses(self) -> list[tuple[str, int]]:
        """The RPC addresses (host, port) of the alive workers, as the master knows them."""
        return [(w["host"], int(w["port"])) for w in self.status().get("workers", []) if w.get("state") == "ALIVE"]

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
