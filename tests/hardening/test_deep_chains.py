"""Long entity chains are released without recursion (no crash at the end of a deep star).

A star whose operand never exits for a long time builds one incarnation per
unfolding; the whole chain is dropped when the run ends.  Released link by
link through C recursion, 150,000 and more unfoldings overflowed the C
stack and killed the interpreter after the output was written.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DEEP = "net deep connect [{<n>} -> if <n <= 0> then {<done>} else {<n=n-1>}] * {<done>};\n"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front-w1", "front-w2", "reference"])
def test_a_star_unfolded_200000_times_ends_cleanly(tmp_path, engine):
    net = tmp_path / "deep.snet"
    net.write_text(DEEP)
    name, _, workers = engine.partition("-w")
    args = [sys.executable, "-m", "snet", "run", str(net), "--engine", name]
    if workers:
        args += ["-w", workers]
    done = subprocess.run(args, input=json.dumps({"<n>": 200_000}) + "\n", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [json.loads(line) for line in done.stdout.splitlines()] == [{"<done>": 0}]


def test_dropping_an_embedded_execution_of_a_deep_star_keeps_the_host_alive(tmp_path):
    """Embedded, the crash came at ``del execution`` and took the host process down."""
    script = (
        "import gc, snet\n"
        f"net = snet.load({DEEP!r})\n"
        "execution = net.run([{'<n>': 200000}], workers=1)\n"
        "assert list(execution) == [{'<done>': 0}]\n"
        "del execution\n"
        "gc.collect()\n"
        "print('alive')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "alive"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front", "reference"])
def test_a_million_unfoldings_of_a_stateless_star_in_small_memory(engine):
    """One operand instance serves every unfolding of a stateless star (was 2 GB on FRONT, 256 MB on the reference)."""
    # The peak of this process image (VmHWM): getrusage's maxrss would also count the
    # pytest process the child was forked from.
    script = (
        "import snet\n"
        f"net = snet.load({DEEP!r})\n"
        f"execution = net.run([{{'<n>': 1000000}}], engine={engine!r})\n"
        "assert list(execution) == [{'<done>': 0}]\n"
        "peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "print(int(peak.split()[1]) // 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip()) < 150, f"peak {done.stdout.strip()} MB"


def test_a_stateless_star_keeps_two_incarnations():
    import snet

    net = snet.load(DEEP)
    execution = net.run([{"<n>": 10000}, {"<n>": 5}], workers=2)
    assert list(execution) == [{"<done>": 0}, {"<done>": 0}]
    assert execution.stats().front.entities.created < 10
