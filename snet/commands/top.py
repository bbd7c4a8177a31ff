"""``snet run --top``: the network's boxes and their figures, redrawn live on the terminal.

A table (:mod:`snet.statsview`) drawn with ``rich`` on standard error and
redrawn every ``REFRESH_SECONDS`` from the engine's statistics, the same
snapshots ``--progress``, ``--stats`` and ``--metrics-port`` read, so the
view adds nothing to the engine's hot path: a redraw costs one ``stats()``
call and the drawing, on a thread of its own.  The last table stays on the
terminal when the run ends.

It needs a terminal: when standard error is not one (a file, a pipe, a
log collector) or cannot redraw (``TERM=dumb``) the option is refused
before the run starts, pointing at ``--progress`` (a line every few
seconds) and ``--metrics-port``.  When standard output is the same
terminal, the records are printed above the table (:class:`AboveTheTable`),
and so are the command's log lines and whatever boxes print: the table is
never broken into.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import IO, Any, Iterable

from snet.commands.progress import SharedTerminal, command_handlers, live_terminal, stdout_on_the_display
from snet.errors import SNetUsageError

REFRESH_SECONDS = 0.5  # redraw interval


def refuse_unless_drawable(args: Any) -> None:
    """Raise SNetUsageError (before the run) when ``--top`` cannot draw: not a terminal, or no rich."""
    if not getattr(args, "top", False):
        return
    if getattr(args, "progress", None) is not None:
        raise SNetUsageError("--top and --progress both draw on standard error: give one of them")
    if not live_terminal():
        raise SNetUsageError("--top draws a live view on standard error, which is not a terminal here; "
                             "use --progress for a line every few seconds, --stats for a summary at the end, "
                             "or --metrics-port to serve the figures")
    try:
        import rich  # noqa: F401
    except ImportError:
        raise SNetUsageError("--top needs the rich package: pip install rich") from None


class TopView:
    """The live view of one ``snet run``: made before the output is opened, started with the execution."""

    def __init__(self, names: Iterable[str], console: Any = None):
        """``console``: the rich Console to draw on (None: standard error's)."""
        from rich.console import Console

        self.names = tuple(names)
        self.console = console if console is not None else Console(
            file=sys.stderr, force_terminal=True, highlight=False, emoji=False, **_size_if_unknown())
        self.live: Any = None
        self.execution: Any = None
        self.previous: Any = None
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self.redirected: list = []

    def destination(self, output: str | None) -> Any:
        """Where the records go: `output`, or :class:`AboveTheTable` when standard output is this terminal."""
        if output not in (None, "-"):
            return output
        buffer = stdout_on_the_display()
        return output if buffer is None else AboveTheTable(buffer, self.console)

    def start(self, execution: Any) -> "TopView":
        """Draw the view of ``execution`` and keep redrawing it until :meth:`stop`."""
        from rich.live import Live

        self.execution = execution
        # Boxes that print, and the command's log lines, go above the table (snet run sends standard
        # output to standard error while the run goes on: both are redirected).
        self.live = Live(self._renderable(), console=self.console, auto_refresh=False, transient=False,
                         redirect_stdout=True, redirect_stderr=True)
        self.live.start(refresh=True)
        self.redirected = [(h, h.setStream(_AboveTheTableLines(self.console))) for h in command_handlers()]
        self.thread = threading.Thread(target=self._loop, name="snet-top", daemon=True)
        self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.done.wait(REFRESH_SECONDS):
            self.report()

    def _renderable(self) -> Any:
        from rich.text import Text

        from snet.statsview import rich_table

        stats = None
        if self.execution is not None:
            try:
                stats = self.execution.stats()
            except Exception:  # a run being torn down: keep the last table
                return None
        if stats is None:
            return Text("snet: starting")
        table = rich_table(stats, self.previous, self.names)
        self.previous = stats
        return table

    def report(self, final: bool = False) -> None:
        """Redraw now; ``final``: the last time, then leave the table on the terminal."""
        if self.live is None:
            return
        shown = self._renderable()
        if shown is not None:
            self.live.update(shown, refresh=True)
        if final:
            self.live.stop()
            self.live = None
            for handler, stream in self.redirected:
                handler.setStream(stream)
            self.redirected = []

    def stop(self) -> None:
        """Stop redrawing (``report(final=True)`` draws the last table)."""
        self.done.set()
        if self.thread is not None:
            self.thread.join()


class AboveTheTable(SharedTerminal):
    """Standard output's bytes when it is the terminal the table is drawn on: printed above the table.

    As :class:`~snet.commands.progress.SharedTerminal` holds them for the
    live display of ``--progress``: at each flush of the writer the held
    lines are printed through the console, which puts them above the table.
    """

    def __init__(self, out: IO[bytes], console: Any):
        super().__init__(out)
        self.console = console

    def _print(self, end: int) -> None:
        text = bytes(self.held[:end]).decode("utf-8", "replace")
        del self.held[:end]
        self.console.print(text, end="", markup=False, highlight=False, emoji=False, soft_wrap=True)


class _AboveTheTableLines:
    """A stream for a logging handler: each line printed above the table."""

    def __init__(self, console: Any):
        self.console = console

    def write(self, text: str) -> None:
        text = text.rstrip("\n")
        if text:
            self.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def flush(self) -> None:
        pass


def _size_if_unknown() -> dict:
    """Rich's console size when the terminal does not say its own (a fresh pseudo-terminal says 0 x 0)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {}
    except (OSError, ValueError):
        pass
    return {"width": 100, "height": 24}


__all__ = ["AboveTheTable", "TopView", "refuse_unless_drawable"]
