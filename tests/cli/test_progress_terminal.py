"""``snet run --progress`` on a real pseudo-terminal: what the live display claims, and records beside it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

SNET = [sys.executable, "-m", "snet"]
RECORDS = 300


def on_a_terminal(command, cwd, *, stdout_too: bool):
    """Run `command` with standard error (and standard output if `stdout_too`) on one pseudo-terminal.

    Returns (exit status, everything the terminal received, standard output if it was piped).
    """
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(command, cwd=cwd, stderr=slave, stdout=slave if stdout_too else subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    piped = []
    if not stdout_too:
        import threading
        reader = threading.Thread(target=lambda: piped.append(proc.stdout.read()))
        reader.start()
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=120)
    if not stdout_too:
        reader.join(timeout=120)
    return code, b"".join(chunks).decode("utf-8", "replace"), b"".join(piped).decode()


def screen_lines(drawn: str) -> list[str]:
    """The lines as a terminal shows them: a carriage return goes back to the start of the line and overwrites."""
    shown = []
    for line in drawn.split("\n"):
        cells: list[str] = []
        column = 0
        for ch in line:
            if ch == "\r":
                column = 0
                continue
            if column < len(cells):
                cells[column] = ch
            else:
                cells.append(ch)
            column += 1
        shown.append("".join(cells).rstrip())
    return shown


@pytest.fixture
def slow_net(tmp_path):
    """A box slow enough that the reader has the whole (small) file long before the last record comes out."""
    (tmp_path / "slow.snet").write_text("box slow ((a) -> (a)); net slownet connect slow;\n")
    (tmp_path / "slow.py").write_text("import time\n\ndef slow(a):\n    time.sleep(0.01)\n    return {'a': a}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(RECORDS)))
    return tmp_path


@pytest.mark.slow
def test_the_bar_is_of_the_bytes_read_and_counts_records_in_and_out_beside_it(slow_net):
    code, drawn, out = on_a_terminal(SNET + ["run", "slow.snet", "-i", "in.jsonl", "--progress", "-w", "1"],
                                     slow_net, stdout_too=False)
    assert code == 0, drawn
    assert sorted(json.loads(line)["a"] for line in out.splitlines()) == list(range(RECORDS))
    frames = [frame.strip() for frame in drawn.replace("\n", "\r").split("\r") if frame.strip()]
    assert frames, drawn
    for frame in frames:
        # The percentage is the reading's, said so; never a record total guessed from the bytes read.
        assert frame.startswith("snet: read:"), frames
        assert not re.search(r"\| (\d+)/\1 ", frame), frame
    counted = [re.search(r"in (\d+) rec, out (\d+) rec", frame) for frame in frames]
    counted = [(int(m[1]), int(m[2])) for m in counted if m]
    assert counted[-1] == (RECORDS, RECORDS), frames
    assert frames[-1].startswith("snet: read: 100%|")


@pytest.mark.slow
def test_records_printed_on_the_same_terminal_are_whole_lines_with_the_display_below(slow_net):
    code, drawn, _ = on_a_terminal(SNET + ["run", "slow.snet", "-i", "in.jsonl", "--progress", "-w", "1"],
                                   slow_net, stdout_too=True)
    assert code == 0, drawn
    lines = [line for line in screen_lines(drawn) if line]
    records = [line for line in lines if not line.startswith("snet: ")]
    # Every record line shows the record alone: no display drawn through it, nothing of the display left on it.
    assert sorted(json.loads(line)["a"] for line in records) == list(range(RECORDS)), lines
    assert lines[-1].startswith("snet: read: 100%|") and f"in {RECORDS} rec, out {RECORDS} rec" in lines[-1]
    assert drawn.count("snet: read:") > 1  # drawn again after records were printed
