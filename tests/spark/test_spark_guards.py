"""Box timeouts and retries reach the splits that run on Spark: the tasks call the boxes through them, and the
driver counts what the tasks did."""

from __future__ import annotations

import logging
import threading

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import handmade  # noqa: E402

from snet.backends import RunOptions, start  # noqa: E402

pytestmark = pytest.mark.spark


def test_a_box_inside_a_spark_split_is_timed_out_and_retried_as_in_process(spark_options, caplog, tmp_path):
    marks = str(tmp_path)

    def work(v, k):
        # a box is stateless: each record's attempts are counted in a file of its own
        import os

        mark = os.path.join(marks, f"tries-{v}")
        with open(mark, "a") as f:
            f.write(".")
        with open(mark) as f:
            tries = len(f.read())
        if v == 5 and tries == 1:
            threading.Event().wait()  # the first attempt never returns: abandoned at the timeout, then retried
        if v % 4 == 3 and tries <= 2:
            raise ConnectionError(f"flaky service, attempt {tries}")
        return {"v": v, "<k>": k}

    records = [{"v": i, "<k>": i % 4} for i in range(12)]
    options = spark_options(box_timeout=2, box_retries=(3, 0.01))
    with caplog.at_level(logging.WARNING, logger="snet"):
        execution = start(options.pop("engine"), handmade.box_split(), {"work": work}, records, RunOptions(**options))
        outputs = list(execution)
    assert sorted(o["v"] for o in outputs) == list(range(12))
    assert "do not apply" not in caplog.text
    assert [len((tmp_path / f"tries-{v}").read_text()) for v in range(12)] == \
        [1, 1, 1, 3, 1, 2, 1, 3, 1, 1, 1, 3]
    (split,) = execution.stats().spark.splits.values()
    assert (split.boxes["work"].retries, split.boxes["work"].timeouts) == (3 * 2 + 1, 1)
