"""``snet run --progress``: how far the run is, while it goes on.

Two faces, chosen by where standard error goes:

* a terminal: a live display (tqdm) redrawn in place a few times a
  second.  When the input is a file of known size it is a bar of the
  bytes *read* (``snet: read: 63%|...| 1.2M/1.9M [...] in 950 rec, out 800
  rec``): the percentage, the rate and the time left are the reading's,
  and the records in and out are counted beside it.  The bar claims no
  more than it knows: the reader's buffer can hold the whole file while
  most records are still to enter the network, so a record total guessed
  from the bytes read would say 100% with records still to come.  From a
  stream it is a count of the records in, with the records out beside it.
  When the records go to the same terminal (standard output and standard
  error both on it), the display is cleared before records are printed
  and drawn again below them (:class:`SharedTerminal`);
* anything else (a file, a pipe, a log collector): a plain line every
  ``interval`` seconds, which a script can parse:
  ``snet progress: 12.0 s, in 120000, out 119800 (10000/s); spark: 3 batches, 12288 records, 2.1 s``
  and a last line ``snet progress: done, ...``.

The figures come from the engine's statistics (cheap counters, read without
stopping the workers) and, for the file position, from the input file's
descriptor (``lseek``, which does not touch the reader's buffer or lock).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
import time
from typing import IO, Any

LIVE_SECONDS = 0.25  # redraw interval of the live display


class InputPosition:
    """How much of an input file has been read: (bytes read, size), or None for a stream."""

    def __init__(self, f: IO | None):
        self.fd = None
        self.size = 0
        if f is None:
            return
        try:
            fd = f.fileno()
            info = os.fstat(fd)
        except (OSError, AttributeError, ValueError):
            return
        if stat.S_ISREG(info.st_mode) and info.st_size > 0:
            self.fd, self.size = fd, info.st_size

    def bytes_read(self) -> int | None:
        """The bytes of the file read so far (at most its size), or None when it cannot be told."""
        if self.fd is None:
            return None
        try:
            return min(os.lseek(self.fd, 0, os.SEEK_CUR), self.size)
        except OSError:
            return None


class _Reporter:
    """Calls ``report`` every ``interval`` seconds on a thread until ``stop``."""

    def __init__(self, execution: Any, interval: float):
        self.execution = execution
        self.interval = interval
        self.started = time.monotonic()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="snet-progress", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(self.interval):
            self.report()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def stats(self):
        try:
            return self.execution.stats()
        except Exception:  # a run being torn down: skip this report
            return None

    def report(self, final: bool = False) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class LineProgress(_Reporter):
    """A plain line on standard error every ``interval`` seconds (see the module docstring)."""

    def __init__(self, execution: Any, interval: float):
        self.last = (time.monotonic(), 0)
        super().__init__(execution, interval)

    def report(self, final: bool = False) -> None:
        stats = self.stats()
        if stats is None:
            return
        now = time.monotonic()
        out = stats.records_out
        then, before = self.last
        rate = (out - before) / (now - then) if now > then else 0.0
        self.last = (now, out)
        line = (f"snet progress: {'done, ' if final else ''}{now - self.started:.1f} s, "
                f"in {stats.records_in}, out {out} ({rate:.0f}/s)")
        spark = stats.spark
        if spark is not None:
            line += (f"; spark: {spark.batches} batch{'es' if spark.batches != 1 else ''}, {spark.records} records, "
                     f"{spark.seconds:.1f} s")
        print(line, file=sys.stderr, flush=True)


class LiveProgress(_Reporter):
    """A display redrawn in place on a terminal (see the module docstring)."""

    def __init__(self, execution: Any, position: InputPosition):
        from tqdm import tqdm

        self.position = position
        try:
            size = os.get_terminal_size(sys.stderr.fileno())
            sized = size.columns > 0 and size.lines > 0
        except (OSError, ValueError):
            sized = False
        # A terminal that does not say its size (a fresh pseudo-terminal says 0 x 0) is taken as 100 x 24.
        shape = dict(dynamic_ncols=sized, ncols=None if sized else 100, nrows=None if sized else 24,
                     file=sys.stderr, mininterval=0, leave=True)
        if position.size:  # a bar of the bytes read
            self.bar = tqdm(total=position.size, unit="B", unit_scale=True, unit_divisor=1024, desc="snet: read",
                            **shape)
        else:  # a count of the records in
            self.bar = tqdm(total=None, unit=" rec", desc="snet: in", **shape)
        # The command's log lines (warnings, -v, Spark batches) go above the display, not through it.
        self.redirected = [(h, h.setStream(_AboveTheBar(self.bar))) for h in command_handlers()]
        super().__init__(execution, LIVE_SECONDS)

    def report(self, final: bool = False) -> None:
        stats = self.stats()
        if stats is None:
            if final:
                self._close()
            return
        bar = self.bar
        read = self.position.bytes_read()
        if read is not None:
            bar.n = read
            postfix = f"in {stats.records_in:,} rec, out {stats.records_out:,} rec"
        else:
            bar.n = stats.records_in
            postfix = f"out {stats.records_out:,}"
        spark = stats.spark
        if spark is not None:
            postfix += f", spark {spark.batches} batches"
        bar.set_postfix_str(postfix, refresh=False)
        bar.refresh()
        if final:
            self._close()

    def _close(self) -> None:
        self.bar.close()
        for handler, stream in self.redirected:
            handler.setStream(stream)
        self.redirected = []


class _AboveTheBar:
    """A stream for a logging handler that prints each line above the live display."""

    def __init__(self, bar: Any):
        self.bar = bar

    def write(self, text: str) -> None:
        text = text.rstrip("\n")
        if text:
            self.bar.write(text, file=sys.stderr)

    def flush(self) -> None:
        pass


class SharedTerminal(io.RawIOBase):
    """Standard output's bytes when it is the terminal the live display is drawn on.

    The records are held here and printed at the writer's flushes (and once
    ``LIMIT`` bytes are held, up to the last whole line), each time with the
    display cleared first and drawn again below them, under tqdm's lock, so
    a record line never runs into the display, nor the display into a
    record line.
    """

    LIMIT = 1 << 16

    def __init__(self, out: IO[bytes]):
        super().__init__()
        self.out = out
        self.held = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.held += data
        if len(self.held) >= self.LIMIT:
            end = self.held.rfind(b"\n") + 1
            if end:
                self._print(end)
        return len(data)

    def flush(self) -> None:
        if self.held:
            self._print(len(self.held))

    def _print(self, end: int) -> None:
        from tqdm import tqdm

        with tqdm.external_write_mode(file=sys.stderr):
            self.out.write(self.held[:end])
            self.out.flush()
        del self.held[:end]


def record_destination(output: str | None, progress: float | None) -> Any:
    """Where ``snet run`` writes the records: `output`, or a :class:`SharedTerminal` over standard output.

    The latter when a live display is to be drawn on standard error and
    standard output is the same terminal.
    """
    if progress is None or output not in (None, "-") or not live_terminal():
        return output
    buffer = stdout_on_the_display()
    return output if buffer is None else SharedTerminal(buffer)


def stdout_on_the_display() -> Any:
    """Standard output's byte stream, flushed, when it is the terminal standard error draws on; else None.

    Records written there must then go above a live display
    (:class:`SharedTerminal`, or ``--top``'s table), not through it.
    """
    try:
        same = os.isatty(1) and os.path.samestat(os.fstat(1), os.fstat(2))
    except OSError:
        same = False
    buffer = getattr(sys.stdout, "buffer", None)
    if not same or buffer is None:
        return None
    sys.stdout.flush()
    return buffer


def live_terminal() -> bool:
    """Whether ``--progress`` draws a live display: standard error is a terminal that can redraw."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def command_handlers() -> list:
    """The handlers ``snet run`` put on the ``snet`` and ``snet.spark`` loggers."""
    import logging

    return [h for name in ("snet", "snet.spark") for h in logging.getLogger(name).handlers
            if getattr(h, "snet_warnings", False) or getattr(h, "snet_progress", False)]


def start_progress(execution: Any, interval: float, input_file: IO | None) -> _Reporter:
    """The progress display that suits standard error: live on a terminal, lines elsewhere."""
    if live_terminal():
        return LiveProgress(execution, InputPosition(input_file))
    return LineProgress(execution, interval)
