"""Checkpoints of runs whose splits run on Spark: the replicas' state, as the driver keeps it between batches,
is in every snapshot; a run killed midway resumes to the uninterrupted output.

The runs are ``snet run`` children (tests/checkpoint/checkpoint_harness.py), each starting its own local
Spark: slow.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import MASTER

sys.path.insert(0, str(Path(__file__).parent.parent / "checkpoint"))

from checkpoint_harness import ENGINES, NETWORKS, STAR_SPLIT, child_env, command, kill_and_resume, run_once, same_output

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPLIT_SYNC = next(n for n in NETWORKS if n.name == "split_sync")
ON_SPARK = ["--spark", MASTER, "--spark-splits", "all", "--spark-batch", "32"]


def _uninterrupted(net, tmp_path: Path) -> str:
    plain = tmp_path / "plain"
    plain.mkdir()
    net.write_input(plain)
    done = run_once(command(net, plain, ENGINES["reference"], checkpoint=False))
    assert done.returncode == 0, done.stderr
    return (plain / "out.jsonl").read_text()


@pytest.mark.parametrize("name", ["split_sync", "init_split", "star_split"])
def test_a_split_with_state_on_spark_resumes(name, tmp_path, spark_installed):
    """Per-tag synchro-cells and initialisers in replicas on Spark, killed twice and resumed: the same output.
    ``star_split``: the split is inside a star, so each replica of the star has its own replicas of the split
    (the snapshot keys their bytes by the star replica's path too)."""
    net = next(n for n in NETWORKS + [STAR_SPLIT] if n.name == name)
    want = _uninterrupted(net, tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    net.write_input(run)
    counts = kill_and_resume(net, run, [["--engine", "front", "-w", "2", *ON_SPARK]], 2, 5, len(want.encode()))
    same_output(net, (run / "out.jsonl").read_text(), want)
    assert counts["killed"] >= 1, counts
    assert counts["resumed_at"], counts


def test_a_snapshot_is_resumed_where_its_replicas_were_kept_only(tmp_path, spark_installed):
    """A snapshot taken with the split on Spark holds the replicas' bytes: a run without Spark is refused, naming
    the split, and the other way round; each goes on as it was taken (the final snapshot holds the replicas
    too: appended input would meet them)."""
    net = SPLIT_SYNC
    want = _uninterrupted(net, tmp_path)
    engine = ["--engine", "front", "-w", "2"]
    for taken, other, says in ((ON_SPARK, [], "as a run on Spark keeps them: resume it with --spark"),
                               ([], ON_SPARK, "as a run without Spark keeps them: resume it without --spark")):
        run = tmp_path / ("spark" if taken else "local")
        run.mkdir()
        net.write_input(run)
        done = run_once(command(net, run, engine + taken))
        assert done.returncode == 0, done.stderr
        refused = run_once(command(net, run, engine + other), env=child_env())
        assert refused.returncode == 2, refused.stderr
        assert f"split_sync.snet:5:33: {run / 'ck'} holds this split's replicas {says}" in refused.stderr
        again = run_once(command(net, run, engine + taken))
        assert again.returncode == 0, again.stderr
        same_output(net, (run / "out.jsonl").read_text(), want)
