"""One local Spark for every Spark test of the session.

The master is ``local[2,2]``: two cores, and two attempts per task, so that
the retry test sees Spark retry a task (plain ``local[2]`` never retries).
Every run in these tests asks for this master and reuses the one session
(snet.spark.cluster.session reuses an active session), so the JVM starts once.
Spark tests are skipped only where Java or pyspark is missing (the ``test``
extra leaves PySpark out; the ``spark`` and ``all`` extras bring it), and each
skip says which; a few tests here need neither and always run.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

MASTER = "local[2,2]"


def spark_missing() -> str | None:
    """Why a local Spark cannot run here, or None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return "needs pyspark, which the spark extra installs (pip install -e '.[spark]' or '.[all]')"
    if shutil.which("java") is None:
        return "needs Java 17 for a local Spark (no java on PATH)"
    return None


@pytest.fixture(scope="session")
def spark_installed() -> None:
    """Skip, saying why, where pyspark or Java is missing (for tests that start Spark in a subprocess)."""
    missing = spark_missing()
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def spark(spark_installed):
    from snet.spark.cluster.session import get_session

    return get_session(MASTER, {"spark.default.parallelism": "2"})


# The local engine that runs the rest of the network around the Spark splits.
ENGINES = {"reference": {"engine": "reference"}, "front": {"engine": "front", "workers": 2}}


@pytest.fixture(params=sorted(ENGINES))
def spark_options(spark, request):
    """``spark_options(**overrides)``: run keyword arguments for a Spark run in this session.

    Every test that uses it runs twice: with the reference engine and with
    the FRONT engine (two workers) around the splits.
    """
    def options(**overrides):
        base = {"spark_master": MASTER, "spark_splits": "all", **ENGINES[request.param]}
        base.update(overrides)
        return base
    return options
