"""Box timeouts and retries do not reach the splits that run on Spark: the run says so, and runs."""

from __future__ import annotations

import logging

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import handmade  # noqa: E402

from snet.backends import RunOptions, start  # noqa: E402

pytestmark = pytest.mark.spark


def test_a_guarded_box_inside_a_spark_split_is_named_in_a_warning(spark_options, caplog):
    def work(v, k):
        return {"v": v, "<k>": k}

    records = [{"v": i, "<k>": i % 4} for i in range(12)]
    options = spark_options(box_timeout=30, box_retries=2)
    with caplog.at_level(logging.WARNING, logger="snet"):
        outputs = list(start(options.pop("engine"), handmade.box_split(), {"work": work}, records,
                             RunOptions(**options)))
    assert sorted(o["v"] for o in outputs) == list(range(12))
    assert ("box 'work' has a timeout or retries, which do not apply inside the splits that run on Spark"
            in caplog.text)
