"""Infrastructure mistakes fail in seconds, with the cause in one line, exit 2, the output file untouched.

The command-line tests run ``python -m snet run --spark MASTER`` in a
subprocess, as a user would; none of them gets as far as starting a
SparkContext, and only the one given a Spark driver's port for the master
starts snet's JVM (for the endpoint check).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from snet.errors import SNetUsageError
from snet.spark.cluster import preflight

ROOT = Path(__file__).resolve().parents[2]
NET = "net splitting {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n"


@pytest.mark.parametrize("master, pairs", [
    ("local", []), ("local[2]", []), ("local[*]", []), ("local[2,3]", []), ("local[*, 4]", []),
    ("local-cluster[2,1,1024]", []), ("yarn", []),
    ("spark://head:7077", [("head", 7077)]),
    ("spark://h1:7077,h2:7078", [("h1", 7077), ("h2", 7078)]),
    ("spark://[::1]:7077", [("::1", 7077)]),
    ("k8s://https://api.example:6443", [("api.example", 6443)]),
    ("k8s://https://api.example", [("api.example", 443)]),
    ("sc://localhost", [("localhost", 15002)]),
    ("sc://localhost:15003/;token=abc", [("localhost", 15003)]),
])
def test_master_urls_spark_takes_are_accepted(master, pairs):
    assert preflight.addresses(master) == pairs


@pytest.mark.parametrize("master, words", [
    ("bogus://x", "is not a Spark master URL: a master is local"),
    ("local[2", "is not a Spark master URL"),
    ("lokal[2]", "is not a Spark master URL"),
    ("spark://head", "spark:// needs a port"),
    ("spark://head:99999", "port 99999 is out of range"),
    ("spark://head:7077/x:y", "is not HOST:PORT"),
    ("head:7077", "is not a Spark master URL"),
])
def test_malformed_master_urls_say_what_is_wrong(master, words):
    with pytest.raises(SNetUsageError) as e:
        preflight.addresses(master)
    assert words in str(e.value)
    assert f"'{master}'" in str(e.value)


def free_port() -> int:
    """A loopback port that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_listening_port_is_reachable_and_a_closed_one_is_refused():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        preflight.check_reachable(f"spark://127.0.0.1:{port}", [("127.0.0.1", port)])
        closed = free_port()
        # one reachable standby master is enough
        preflight.check_reachable("spark://x", [("127.0.0.1", closed), ("127.0.0.1", port)])
    with pytest.raises(SNetUsageError) as e:
        preflight.check_reachable(f"spark://127.0.0.1:{closed}", [("127.0.0.1", closed)])
    assert str(e.value) == (f"cannot reach the Spark master spark://127.0.0.1:{closed}: "
                            f"connection refused at 127.0.0.1:{closed} (nothing listens there)")


def test_an_unknown_host_is_named():
    with pytest.raises(SNetUsageError) as e:
        preflight.check_reachable("sc://nosuchhost.invalid", [("nosuchhost.invalid", 15002)])
    assert "cannot reach the Spark Connect server sc://nosuchhost.invalid: unknown host nosuchhost.invalid" \
        in str(e.value)


@contextlib.contextmanager
def tcp_server(handle):
    """A real TCP server on a loopback port, ``handle(connection)`` in a thread per connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def one(connection):
        try:
            handle(connection)
        except OSError:  # the probe went away first
            pass

    def serve():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        server.close()


def banner(connection):
    with connection:
        connection.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        connection.recv(100)


def closes(connection):
    connection.close()


def reads_then_closes(connection):
    with connection:
        connection.recv(100)


def silent(connection):
    with connection:
        time.sleep(3)


@pytest.mark.parametrize("handle, words", [
    (banner, 'answered "SSH-2.0-OpenSSH_9.6" to a Spark RPC request, which is not Spark\'s RPC protocol (a master\'s '
             "RPC port is the one its log names in 'Starting Spark master at spark://HOST:PORT', 7077 by default; "
             "its web UI and REST ports speak HTTP)"),
    (closes, "closed the connection without answering a Spark RPC request, in plain TCP and in TLS"),
    (reads_then_closes, "closed the connection without answering a Spark RPC request, in plain TCP and in TLS"),
    (silent, "accepted the connection but sent nothing back within 0.5 s in answer to a Spark RPC request"),
])
def test_a_port_that_does_not_speak_spark_is_refused_saying_what_it_did(handle, words):
    with tcp_server(handle) as port:
        master = f"spark://127.0.0.1:{port}"
        with pytest.raises(preflight._NotSpark) as e:
            preflight.probe_spark("127.0.0.1", port, timeout=0.5)
        assert str(e.value) == f"127.0.0.1:{port} {words}"
        if handle is not silent:
            with pytest.raises(SNetUsageError) as e:
                preflight.check_reachable(master, [("127.0.0.1", port)], probe=True)
            assert str(e.value) == f"{master} is not a Spark master: 127.0.0.1:{port} {words}"


def test_a_closed_standby_and_a_server_that_is_not_spark_are_both_named():
    closed = free_port()
    with tcp_server(banner) as port:
        with pytest.raises(SNetUsageError) as e:
            preflight.check_reachable("spark://x", [("127.0.0.1", closed), ("127.0.0.1", port)], probe=True)
    assert str(e.value).startswith(f"cannot reach the Spark master spark://x: connection refused at 127.0.0.1:{closed} "
                                   f"(nothing listens there); 127.0.0.1:{port} answered \"SSH-2.0-OpenSSH_9.6\"")


def test_answers_are_shown_printable():
    assert preflight._shown(b"HTTP/1.1 400 Bad Request\r\nServer: x\r\n") == '"HTTP/1.1 400 Bad Request"'
    assert preflight._shown(b"\x15\x03\x01\x00\x02") == '"\\x15\\x03\\x01\\x00\\x02"'
    assert preflight._shown(b"x" * 70) == '"' + "x" * 60 + '..."'


def test_the_probe_is_a_stream_request_frame():
    """What goes on the wire: an 8-byte length counting itself, type 6, the stream id as an int-prefixed string."""
    frame = preflight._PROBE
    assert int.from_bytes(frame[:8], "big") == len(frame)
    assert frame[8] == 6
    assert int.from_bytes(frame[9:13], "big") == len(frame) - 13
    assert frame[13:].startswith(b"/files/")
    assert preflight._frame_start(b"\x00" * 7 + b"\x4b\x08") and not preflight._frame_start(b"HTTP/1.1 4")


def test_java_version_is_read_from_the_program_spark_will_run(tmp_path, monkeypatch):
    """A ``java`` that reports version 11 (a script standing in for an old JDK) is refused, naming both."""
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert preflight.java_command() == str(java)
    assert preflight.java_major(str(java)) == 11
    with pytest.raises(SNetUsageError, match=r"Java 11 at .*jdk11/bin/java is too old: Spark 4 needs Java 17"):
        preflight.check_java()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(SNetUsageError, match="Java not found: JAVA_HOME is .*nowhere, which has no bin/java"):
        preflight.check_java()


def test_the_java_here_passes(spark_installed):
    preflight.check_java()
    assert preflight.java_major(preflight.java_command()) >= preflight.JAVA_MIN


# -- the command line ------------------------------------------------------------

def run_cli(folder: Path, master: str, env_changes: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(env_changes or {})
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
                             "--spark", master], cwd=folder, capture_output=True, text=True, timeout=120, env=env)
    return result, time.monotonic() - started


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "net.snet").write_text(NET)
    (tmp_path / "net.py").write_text("def f(a, k):\n    return {'a': a}\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1, "<k>": 0}\n')
    (tmp_path / "out.jsonl").write_text("the output of an earlier run\n")
    return tmp_path


def assert_failed_at_start(folder: Path, result, seconds: float, first_line: str):
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == first_line, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr  # the cause, not a JVM log
    assert seconds < 10
    assert (folder / "out.jsonl").read_text() == "the output of an earlier run\n"


def test_an_unreachable_master_fails_at_once_and_leaves_the_output_alone(spark_installed, folder):
    port = free_port()
    result, seconds = run_cli(folder, f"spark://127.0.0.1:{port}")
    assert_failed_at_start(folder, result, seconds, f"error: cannot reach the Spark master spark://127.0.0.1:{port}: "
                           f"connection refused at 127.0.0.1:{port} (nothing listens there)")


def test_a_web_server_on_the_master_port_fails_at_once_and_leaves_the_output_alone(spark_installed, folder):
    """An open port that is not a Spark master (here Python's own HTTP server) fails in seconds, not in 75."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the HTTP server did not start"
                time.sleep(0.1)
        result, seconds = run_cli(folder, f"spark://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0].startswith(
        f"error: spark://127.0.0.1:{port} is not a Spark master: 127.0.0.1:{port} answered \"<!DOCTYPE HTML>\" "
        "to a Spark RPC request, which is not Spark's RPC protocol"), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert seconds < 20  # a guard against the 75 s of Spark's own registration retries, not a timing benchmark
    assert (folder / "out.jsonl").read_text() == "the output of an earlier run\n"


def test_a_master_url_of_no_known_scheme_fails_in_one_line(spark_installed, folder):
    result, seconds = run_cli(folder, "bogus://x")
    assert_failed_at_start(folder, result, seconds, "error: 'bogus://x' is not a Spark master URL: a master is "
                           "local, local[N], spark://HOST:PORT, yarn, k8s://HOST:PORT or sc://HOST:PORT")


def test_an_unknown_master_host_fails_in_one_line(spark_installed, folder):
    result, seconds = run_cli(folder, "spark://nosuchhost.invalid:7077")
    assert_failed_at_start(folder, result, seconds, "error: cannot reach the Spark master "
                           "spark://nosuchhost.invalid:7077: unknown host nosuchhost.invalid "
                           f"({socket_error_text('nosuchhost.invalid')})")


def socket_error_text(host: str) -> str:
    try:
        socket.getaddrinfo(host, 7077)
    except OSError as e:
        return e.strerror or str(e)
    pytest.skip(f"{host} resolves here")


def test_missing_java_fails_in_one_line(spark_installed, folder, tmp_path_factory):
    empty = tmp_path_factory.mktemp("bin")  # a PATH with no java on it
    env = {"PATH": str(empty), "JAVA_HOME": ""}
    result, seconds = run_cli(folder, "local[2]", env)
    assert_failed_at_start(folder, result, seconds, "error: Java not found: Spark needs Java 17 or later, and there "
                           "is no java on PATH and no JAVA_HOME (install a JDK, e.g. openjdk-17-jre-headless)")


def test_a_failed_start_is_told_by_the_line_that_names_the_exception():
    from snet.spark.failures import first_cause as startup_cause

    text = ("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
            ": org.apache.spark.SparkException: Could not parse Master URL: 'bogus://x'\n"
            "\tat org.apache.spark.SparkContext$.createTaskScheduler(SparkContext.scala:3300)\n"
            "\tat org.apache.spark.SparkContext.<init>(SparkContext.scala:600)\n")
    assert startup_cause(RuntimeError(text)) == \
        "org.apache.spark.SparkException: Could not parse Master URL: 'bogus://x'"
    assert startup_cause(RuntimeError("something odd\nmore")) == "RuntimeError: something odd"


def test_a_network_with_no_split_for_spark_runs_locally_and_says_so(folder):
    # `auto` leaves splits of filters and synchro-cells local: the master is not contacted (nothing
    # listens on the port), the run succeeds, and the user learns that Spark was not used.
    (folder / "net.snet").write_text("net splitting connect [{a, <k>} -> {b=a}] ! <k>;\n")
    (folder / "net.py").unlink()
    port = free_port()
    result, _ = run_cli(folder, f"spark://127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: no split of this network has a box in its operand (--spark-splits auto leaves splits of "
        f"filters and synchro-cells local): the run does not use Spark, and spark://127.0.0.1:{port} is not "
        "contacted"]
    assert (folder / "out.jsonl").read_text() == '{"b":1}\n'  # the pattern's labels are consumed


DRIVER = """
import sys
from pyspark import SparkConf, SparkContext
conf = (SparkConf().setMaster("local[1]").setAppName("a driver").set("spark.driver.port", sys.argv[1])
        .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false"))
sc = SparkContext(conf=conf)
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_drivers_port_given_for_the_master_fails_in_seconds_and_leaves_the_output_alone(spark_installed, folder):
    """A Spark driver's RPC port speaks the master's protocol and passes the probe; the endpoint check,
    made in snet's JVM before the session starts, finds no master there (without it: the client's 66 s)."""
    port = free_port()
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert driver.stdout.readline().strip() == "ready", "the driver did not start"
        result, seconds = run_cli(folder, f"spark://127.0.0.1:{port}")
    finally:
        driver.stdin.close()
        driver.wait(timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"error: spark://127.0.0.1:{port} is not a Spark master: 127.0.0.1:{port} answers in Spark's RPC protocol "
        "but has no master endpoint (a worker's or a driver's port?); a master's RPC port is the one its log names "
        "in 'Starting Spark master at spark://HOST:PORT', 7077 by default"), result.stderr
    assert "\tat " not in result.stderr, result.stderr  # no JVM stack trace
    assert seconds < 30  # a guard against the client's three 20 s registration attempts, not a timing benchmark
    assert (folder / "out.jsonl").read_text() == "the output of an earlier run\n"
