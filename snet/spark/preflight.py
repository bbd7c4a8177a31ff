"""Checks made before Spark starts, so that an infrastructure mistake fails in seconds, in one line.

Starting a SparkContext against a master that is not there takes about a
minute (the standalone client retries its registration) and ends in
"Cannot call methods on a stopped SparkContext", the cause buried in the
JVM's log; a URL with a wrong scheme ends in a Java stack trace.  Before a
session is started, :func:`check_master` therefore checks, in order:

1. **the URL's form**: ``local``, ``local[N]``, ``local[N,F]``,
   ``local[*]``, ``local-cluster[N,C,M]``, ``spark://HOST:PORT`` (a comma
   list for standby masters), ``yarn``, ``k8s://[https://]HOST[:PORT]``,
   ``sc://HOST[:PORT]``;
2. **Java**, for every master but Spark Connect (whose driver has no JVM):
   ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else ``java`` on
   ``PATH``, and its version (Spark 4 needs Java 17 or later);
3. **the address**, for ``spark://``, ``k8s://`` and ``sc://`` masters: the
   host name resolves and a TCP connection to the port is accepted, each
   within :data:`TIMEOUT` seconds.  For several standby masters one
   reachable master is enough.

Each failure is a :class:`~snet.errors.SNetUsageError` (exit status 2)
whose first line says what is wrong: a bad scheme, an unknown host,
connection refused, no answer, Java missing or too old.  Nothing here
imports pyspark.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading

from snet.errors import SNetUsageError

TIMEOUT = 2.0  # seconds for a name lookup, and again for a connection
JAVA_MIN = 17

_LOCAL = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?$|local-cluster\[\d+,\s*\d+,\s*\d+\]$")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s,]+)(?::(\d+))?$")
SCHEMES = "local, local[N], spark://HOST:PORT, yarn, k8s://HOST:PORT or sc://HOST:PORT"
DEFAULT_PORTS = {"spark": 7077, "sc": 15002, "k8s": 443}


def addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs ``master`` names; raises SNetUsageError for a URL Spark cannot take."""
    master = master.strip()
    if _LOCAL.match(master) or master == "yarn":
        return []
    scheme, sep, rest = master.partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        raise SNetUsageError(f"'{master}' is not a Spark master URL: a master is {SCHEMES}")
    if scheme == "k8s" and rest.startswith(("https://", "http://")):
        secure = rest.startswith("https://")
        rest = rest.partition("://")[2]
        default = 443 if secure else 80
    else:
        default = DEFAULT_PORTS[scheme]
    if scheme == "sc":
        rest = rest.split("/", 1)[0].split(";", 1)[0]  # sc://host:port/;token=... parameters
    else:
        rest = rest.rstrip("/")
    found = []
    for part in rest.split(",") if scheme == "spark" else [rest]:
        m = _HOST_PORT.match(part.strip())
        if not m:
            raise SNetUsageError(f"'{master}' is not a Spark master URL: '{part}' is not HOST:PORT")
        if scheme == "spark" and m.group(2) is None:
            raise SNetUsageError(f"'{master}' is not a Spark master URL: spark:// needs a port (HOST:7077)")
        host = m.group(1).strip("[]")
        port = int(m.group(2)) if m.group(2) else default
        if not 0 < port < 65536:
            raise SNetUsageError(f"'{master}' is not a Spark master URL: port {port} is out of range")
        found.append((host, port))
    return found


def java_command() -> str:
    """The java program Spark's launcher will run; raises SNetUsageError when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise SNetUsageError(f"Java not found: JAVA_HOME is {home}, which has no bin/java; Spark needs "
                                 f"Java {JAVA_MIN} or later (set JAVA_HOME to its folder, or unset it)")
        return java
    java = shutil.which("java")
    if java is None:
        raise SNetUsageError(f"Java not found: Spark needs Java {JAVA_MIN} or later, and there is no java on "
                             "PATH and no JAVA_HOME (install a JDK, e.g. openjdk-17-jre-headless)")
    return java


def java_major(java: str) -> int | None:
    """The major version ``java -version`` reports, or None when it cannot tell."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SNetUsageError(f"Java at {java} does not run: {e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def check_java() -> None:
    java = java_command()
    major = java_major(java)
    if major is not None and major < JAVA_MIN:
        raise SNetUsageError(f"Java {major} at {java} is too old: Spark 4 needs Java {JAVA_MIN} or later "
                             "(set JAVA_HOME to a newer JDK)")


def _resolve(host: str, port: int, timeout: float) -> list:
    """``getaddrinfo`` with a time limit (a name lookup can hang far longer than a connect)."""
    result: dict = {}

    def lookup():
        try:
            result["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            result["error"] = e

    thread = threading.Thread(target=lookup, daemon=True, name="snet-spark-lookup")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise _Unreachable(f"the host name {host} did not resolve within {timeout:g} s")
    if "error" in result:
        raise _Unreachable(f"unknown host {host} ({result['error'].strerror or result['error']})")
    return result["infos"]


class _Unreachable(Exception):
    pass


def _connect(host: str, port: int, timeout: float) -> None:
    infos = _resolve(host, port, timeout)
    last = None
    for family, kind, proto, _name, address in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.settimeout(timeout)
                s.connect(address)
                return
        except ConnectionRefusedError:
            last = f"connection refused at {host}:{port} (nothing listens there)"
        except socket.timeout:
            last = f"no answer from {host}:{port} within {timeout:g} s (a firewall, or the wrong address)"
        except OSError as e:
            last = f"cannot connect to {host}:{port}: {e.strerror or e}"
    raise _Unreachable(last or f"no address for {host}")


def check_reachable(master: str, pairs: list[tuple[str, int]], timeout: float = TIMEOUT) -> None:
    """At least one of ``pairs`` accepts a TCP connection; else SNetUsageError with the cause."""
    causes = []
    for host, port in pairs:
        try:
            _connect(host, port, timeout)
            return
        except _Unreachable as e:
            causes.append(str(e))
    kind = "Spark Connect server" if master.startswith("sc://") else \
        "Kubernetes API server" if master.startswith("k8s://") else "Spark master"
    raise SNetUsageError(f"cannot reach the {kind} {master}: {'; '.join(causes)}")


def check_master(master: str, timeout: float = TIMEOUT) -> None:
    """Every check of the module docstring; raises SNetUsageError (exit 2) at the first failure."""
    pairs = addresses(master)
    if not master.startswith("sc://"):
        check_java()
    if pairs:
        check_reachable(master, pairs, timeout)
