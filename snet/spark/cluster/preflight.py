"""Checks made before Spark starts, so that an infrastructure mistake fails in seconds, in one line.

:func:`check_master`: the URL's form, Java 17 or later (not for Spark
Connect), an address that accepts a connection and, for ``spark://``, speaks
Spark's RPC protocol (:func:`probe_spark`); :func:`check_master_endpoint`,
the JVM started, a master's endpoint there.  Each failure is an
:class:`~snet.errors.SNetUsageError` (exit status 2); docs/architecture.md
("Spark") gives the probe.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

from snet.errors import SNetUsageError

TIMEOUT = 2.0  # seconds for a name lookup, and again for a connection
JAVA_MIN = 17
PROBE_TIMEOUT = 5.0  # seconds for the answer to the protocol probe (a master answers in milliseconds)
LOOKUP_TIMEOUT = 10.0  # seconds for the endpoint check's lookup of the master's endpoint

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
    found = shutil.which("java")
    if found is None:
        raise SNetUsageError(f"Java not found: Spark needs Java {JAVA_MIN} or later, and there is no java on "
                             "PATH and no JAVA_HOME (install a JDK, e.g. openjdk-17-jre-headless)")
    return found


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


class _NotSpark(Exception):
    pass


# The stream id ends a line twice, so that a server of a line protocol (HTTP, SMTP...) answers at once.
_PROBE_STREAM = b"/files/snet-preflight\r\n\r\n"
_STREAM_REQUEST, _MAX_TYPE = 6, 15  # message types of Spark's transport protocol (0-12 so far)
_PROBE = struct.pack("!qbi", 8 + 1 + 4 + len(_PROBE_STREAM), _STREAM_REQUEST, len(_PROBE_STREAM)) + _PROBE_STREAM


def _frame_start(data: bytes) -> bool:
    """True when ``data`` starts as a frame of Spark's transport protocol (length, then message type)."""
    (length,) = struct.unpack_from("!q", data)
    return 9 <= length < 1 << 31 and 0 <= data[8] <= _MAX_TYPE


def _shown(data: bytes, limit: int = 60) -> str:
    """The first line of a peer's answer, printable."""
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    text = "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in line[:limit])
    return f'"{text}{"..." if len(line) > limit else ""}"'


def _exchange(sock: socket.socket, deadline: float) -> bytes | None:
    """Send the probe and read the answer's first 9 bytes; b"" when the peer closed, None when silent."""
    data = b""
    with contextlib.suppress(OSError):  # the peer closed at once (it may have said why first)
        sock.sendall(_PROBE)
    while len(data) < 9:
        left = deadline - time.monotonic()
        if left <= 0:
            return data or None
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except socket.timeout:
            return data or None
        except OSError:  # reset, or a TLS error
            return data
        if not chunk:
            return data
        data += chunk
    return data


def _verdict(host: str, port: int, data: bytes | None, timeout: float, tls: bool) -> bool:
    """True for a Spark answer, False for a peer that closed without a byte or spoke TLS; else raises _NotSpark."""
    over = " in TLS" if tls else ""
    if data is None:
        raise _NotSpark(f"{host}:{port} accepted the connection but sent nothing back within {timeout:g} s "
                        f"in answer to a Spark RPC request{over}")
    if not data or (not tls and data[:1] in (b"\x15", b"\x16") and data[1:2] == b"\x03"):
        return False  # closed, or a TLS record (an alert): try again in TLS
    if len(data) >= 9 and _frame_start(data):
        return True
    raise _NotSpark(f"{host}:{port} answered {_shown(data)} to a Spark RPC request{over}, which is not Spark's "
                    "RPC protocol (a master's RPC port is the one its log names in 'Starting Spark master at "
                    "spark://HOST:PORT', 7077 by default; its web UI and REST ports speak HTTP)")


def probe_spark(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise _NotSpark unless ``host:port`` answers as a Spark process does (see the module docstring)."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
        if _verdict(host, port, _exchange(sock, deadline), timeout, tls=False):
            return
    # closed without a byte: a master with spark.ssl.rpc.enabled does that to a plain request
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=TIMEOUT) as raw:
        raw.settimeout(timeout)
        try:
            sock = context.wrap_socket(raw)
        except (ssl.SSLError, OSError):
            raise _NotSpark(f"{host}:{port} closed the connection without answering a Spark RPC request, "
                            "in plain TCP and in TLS") from None
        with sock:
            if not _verdict(host, port, _exchange(sock, deadline), timeout, tls=True):
                raise _NotSpark(f"{host}:{port} closed the connection without answering a Spark RPC request, "
                                "in plain TCP and in TLS")


def check_reachable(master: str, pairs: list[tuple[str, int]], timeout: float = TIMEOUT,
                    probe: bool = False) -> None:
    """Raise SNetUsageError with the causes unless one of ``pairs`` accepts a TCP connection (and, with
    ``probe``, answers as Spark does)."""
    causes, not_spark = [], []
    for host, port in pairs:
        try:
            _connect(host, port, timeout)
            if probe:
                probe_spark(host, port)
            return
        except _Unreachable as e:
            causes.append(str(e))
        except _NotSpark as e:
            not_spark.append(str(e))
        except OSError as e:  # the probe's connection failed where the check's had worked
            causes.append(f"cannot connect to {host}:{port}: {e.strerror or e}")
    if not_spark and not causes:
        raise SNetUsageError(f"{master} is not a Spark master: {'; '.join(not_spark)}")
    kind = "Spark Connect server" if master.startswith("sc://") else \
        "Kubernetes API server" if master.startswith("k8s://") else "Spark master"
    raise SNetUsageError(f"cannot reach the {kind} {master}: {'; '.join(causes + not_spark)}")


def check_master(master: str, timeout: float = TIMEOUT) -> None:
    """Every check of the module docstring; raises SNetUsageError (exit 2) at the first failure."""
    pairs = addresses(master)
    if not master.startswith("sc://"):
        check_java()
    if pairs:
        check_reachable(master, pairs, timeout, probe=master.strip().startswith("spark://"))


def _java_causes(error: BaseException) -> list[str]:
    """The class names of a py4j error's Java exception and its causes (empty for other errors)."""
    names: list[str] = []
    cause = getattr(error, "java_exception", None)
    while cause is not None and len(names) < 20:
        names.append(str(cause.getClass().getName()))
        cause = cause.getCause()
    return names


def check_master_endpoint(jvm, master: str, timeout: float = LOOKUP_TIMEOUT) -> None:
    """Raise SNetUsageError when no address of the ``spark://`` URL ``master`` has a master's endpoint
    (``jvm``: the py4j view of the JVM about to run the session)."""
    pairs = addresses(master)
    if not master.strip().startswith("spark://") or not pairs:
        return
    try:
        spark = jvm.org.apache.spark
        conf = spark.SparkConf().set("spark.rpc.lookupTimeout", f"{timeout:g}s")
        config = jvm.java.lang.Class.forName("org.apache.spark.internal.config.package$")
        security = spark.SecurityManager(conf, jvm.scala.Option.empty(),
                                         config.getField("MODULE$").get(None).AUTH_SECRET_FILE())
        env = spark.rpc.RpcEnv.create("snetPreflight", "127.0.0.1", 0, conf, security, True)
    except Exception:  # classes of another Spark version, say: the session's start will tell
        return
    missing = []
    try:
        for host, port in pairs:
            try:
                env.setupEndpointRef(spark.rpc.RpcAddress(host, port), "Master")
                return
            except Exception as e:
                if not any(name.endswith("RpcEndpointNotFoundException") for name in _java_causes(e)):
                    return  # not a clear "no master here": let Spark try
                missing.append(f"{host}:{port}")
    finally:
        try:
            env.shutdown()
        except Exception:
            pass
    where = " and ".join(missing)
    one = len(missing) == 1
    raise SNetUsageError(f"{master} is not a Spark master: {where} answer{'s' if one else ''} in Spark's RPC "
                         f"protocol but {'has' if one else 'have'} no master endpoint (a worker's or a driver's "
                         "port?); a master's RPC port is the one its log names in 'Starting Spark master at "
                         "spark://HOST:PORT', 7077 by default")
