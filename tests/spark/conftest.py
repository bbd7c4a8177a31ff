"""One local Spark for every Spark test of the session.

The master is ``local[2,2]``: two cores, and two attempts per task, so that
the retry test sees Spark retry a task (plain ``local[2]`` never retries).
Every run in these tests asks for this master and reuses the one session
(snet.spark.session reuses an active session), so the JVM starts once.
Spark tests are skipped only where Java or pyspark is missing.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

MASTER = "local[2,2]"


def spark_available() -> bool:
    return shutil.which("java") is not None and importlib.util.find_spec("pyspark") is not None


@pytest.fixture(scope="session")
def spark():
    if not spark_available():
        pytest.skip("Spark tests need Java and pyspark")
    from snet.spark.session import get_session

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
