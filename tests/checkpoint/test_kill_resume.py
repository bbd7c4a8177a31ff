"""Kill-and-resume: SIGKILL at seeded moments, resume with the same command, compare with an uninterrupted run.

Ten networks (a stateless pipeline, ``!!`` with a per-tag synchro-cell,
a stateful star, a stateful feedback loop, the sieve, Fibonacci, a
sync-star pairing, a filter with ``||``, initialisers in split replicas,
a pipeline whose failing records go to ``--errors``, which must hold each
failure once)
on the reference engine and on FRONT with 1 and 4 workers (a FRONT run
may be resumed with another number of workers: both are used in turn).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from checkpoint_harness import (ENGINES, ERRORS, NETWORKS, SPLIT_PIPELINE, STAR_SPLIT, child_env, command,
                                kill_and_resume, run_once, same_errors, same_output)

CONFIGS = {"reference": [ENGINES["reference"]], "front-w1": [ENGINES["front-w1"], ENGINES["front-w4"]],
           "front-w4": [ENGINES["front-w4"], ENGINES["front-w1"]]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The output of each network run without checkpoints (reference engine), by name."""
    outputs = {}
    for net in NETWORKS + [STAR_SPLIT]:
        folder = tmp_path_factory.mktemp(f"plain-{net.name}")
        net.write_input(folder)
        done = run_once(command(net, folder, ENGINES["reference"], checkpoint=False))
        assert done.returncode == 0, done.stderr
        outputs[net.name] = (folder / "out.jsonl").read_text()
        if net.errors:
            outputs[net.name, ERRORS] = (folder / ERRORS).read_text()
    return outputs


def _check(net, config, tmp_path, uninterrupted, kills, seed):
    net.write_input(tmp_path)
    want = uninterrupted[net.name]
    counts = kill_and_resume(net, tmp_path, CONFIGS[config], kills, seed, len(want.encode()))
    same_output(net, (tmp_path / "out.jsonl").read_text(), want)
    same_errors(net, tmp_path, uninterrupted.get((net.name, ERRORS)))
    assert counts["killed"] >= 1, counts
    assert counts["resumed_at"], counts  # some run went on from a snapshot taken midway
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("net", NETWORKS, ids=lambda n: n.name)
def test_killed_runs_resume_to_the_uninterrupted_output(net, config, tmp_path, uninterrupted):
    counts = _check(net, config, tmp_path, uninterrupted, kills=2, seed=sum(map(ord, net.name + config)))
    print(net.name, config, counts)


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("net", NETWORKS, ids=lambda n: n.name)
def test_many_kills(net, config, tmp_path, uninterrupted):
    _check(net, config, tmp_path, uninterrupted, kills=7, seed=1000 + len(net.name) + len(config))


@pytest.mark.parametrize("step", ["state", "manifest"])
@pytest.mark.parametrize("config", ["reference", "front-w4"])
def test_a_kill_inside_the_snapshot_write_loses_nothing(step, config, tmp_path, uninterrupted):
    net = next(n for n in NETWORKS if n.name == "split_sync")
    net.write_input(tmp_path)
    engine = CONFIGS[config][0]
    killed = run_once(command(net, tmp_path, engine), env=child_env(SNET_CHECKPOINT_TEST_KILL=f"{step}:3"))
    assert killed.returncode == -9, killed.stderr  # killed by the hook, inside the third snapshot's write
    leftovers = sorted(p.name for p in (tmp_path / "ck").iterdir())
    assert any(name.endswith(".tmp") for name in leftovers), leftovers
    done = run_once(command(net, tmp_path, engine))
    assert done.returncode == 0, done.stderr
    same_output(net, (tmp_path / "out.jsonl").read_text(), uninterrupted[net.name])
    assert not any(p.name.endswith(".tmp") for p in (tmp_path / "ck").iterdir())


@pytest.mark.slow
def test_a_stateless_split_in_split_processes_resumes(tmp_path):
    """``!!`` over a stateless operand in two split processes, killed and resumed: the same output, in order."""
    net = SPLIT_PIPELINE
    plain = tmp_path / "plain"
    plain.mkdir()
    net.write_input(plain)
    done = run_once(command(net, plain, ENGINES["reference"], checkpoint=False))
    assert done.returncode == 0, done.stderr
    want = (plain / "out.jsonl").read_text()
    run = tmp_path / "run"
    run.mkdir()
    net.write_input(run)
    processes = ["--engine", "front", "-w", "2", "--split-processes", "2"]
    counts = kill_and_resume(net, run, [processes], 3, 11, len(want.encode()))
    same_output(net, (run / "out.jsonl").read_text(), want)
    assert counts["killed"] >= 1, counts
    assert counts["resumed_at"], counts  # some run went on from a snapshot taken midway


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["reference", "front-w2"])
@pytest.mark.parametrize("name", ["split_sync", "init_split", "star_split"])
def test_a_split_with_state_in_split_processes_resumes(name, engine, tmp_path, uninterrupted):
    """Per-tag synchro-cells, and initialisers fired once per replica, kept in split processes: killed and
    resumed, with 2 processes, 3, and none (the replicas' state is saved at the paths a run without split
    processes gives them, so any of these may resume from another's snapshot): the uninterrupted output.
    ``star_split``: the split is inside a star, so each replica of the star has replicas of the split, saved
    at the paths ``((star, k), (split, value), ...)``."""
    net = next(n for n in NETWORKS + [STAR_SPLIT] if n.name == name)
    net.write_input(tmp_path)
    base = ENGINES["reference"] if engine == "reference" else ["--engine", "front", "-w", "2"]
    # (small batches: the outputs, and the snapshots between batches, come all through the run)
    configs = [base + ["--split-processes", "2", "--process-batch", "16"],
               base + ["--split-processes", "3", "--process-batch", "16"], base]
    counts = kill_and_resume(net, tmp_path, configs, 4, sum(map(ord, name + engine)), len(uninterrupted[name]))
    same_output(net, (tmp_path / "out.jsonl").read_text(), uninterrupted[name])
    assert counts["killed"] >= 1, counts
    assert counts["resumed_at"], counts
