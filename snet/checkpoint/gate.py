"""Snapshots at quiescent points, reached by holding the input.

:class:`Checkpointing` decides when a snapshot is due (every ``interval``
seconds) and takes it; :class:`InputGate` is the input iterator the engine
reads, through which it does so.  When a snapshot is due the gate stops
handing records to the engine (it answers :data:`~snet.requests.NO_INPUT_YET`,
as a session with nothing to feed does) until the run is *quiescent*:

* no record is in flight inside the engine: every record admitted so far
  has left the network, been consumed, or is stored in a synchro-cell (the
  engine's ``quiescent()``), and
* every output that left the network has been handed to the output writer
  (``output.written`` equals the engine's ``records_out()``).

Then the state is a function of the stored records alone: the engine
exports it (``export_state()``), the output is flushed and ``fsync``-ed
(its length is the committed position), the input position is the number
of records the gate handed out and the bytes they came from, and the store
commits all three together.  The gate then hands out the next record.

The engine calls the gate from its input reader: the reference engine
between two inputs, when its work stack is empty, so a due snapshot is
taken at once, unless records wait in a split executor's partial batch:
the gate then says "nothing yet", the engine runs the batch and asks again;
FRONT from whichever worker admits input, which finds the network quiescent
after a few tries once the records in flight have drained.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterator

from snet.errors import SNetRuntimeError
from snet.gcpause import gc_paused
from snet.requests import NO_INPUT_YET

DEFAULT_INTERVAL = 10.0
log = logging.getLogger("snet")


class Checkpointing:
    """The snapshots of one run: when they are due, and taking them.

    Args:
        store: the :class:`~snet.checkpoint.store.CheckpointStore`.
        interval: seconds between two snapshots (None: only when asked for, a session's).
        restore: the engine state to resume from (None: a fresh run); the
            engine takes it over as it builds its instances
            (:class:`snet.checkpoint.state.Restore`), set up before it
            admits any input.
        output: what the outputs are committed to (``lock``, ``written``,
            ``commit()``), see :mod:`snet.checkpoint.files`.
        source: the input (``records``, ``position()``).
        identity: what the manifest records to recognise the run (digests).
        errors: the error file of ``--errors`` (``commit()``), or None.
        failures_before: the records that failed and were skipped before
            the snapshot resumed from (the manifest's ``failures``); each
            snapshot records them plus ``count_failures()``, the run's own.
    """

    def __init__(self, store: Any, interval: float | None, restore: Any, output: Any, source: Any, identity: dict,
                 errors: Any = None, failures_before: int = 0):
        self.store = store
        self.errors = errors  # the error file (`snet.deadletters.DeadLetters`), committed with the output; or None
        self.failures_before = failures_before
        self.count_failures: Callable[[], int] = lambda: 0  # set by whoever runs the execution
        self.interval = interval
        self.restore = restore
        self.output = output
        self.source = source
        self.identity = identity
        self.engine: Any = None
        # the split executor whose replicas' state goes into the snapshots too (``add_state(state)``), or None
        self.executor: Any = None
        self.due = False  # set by the timer thread when a snapshot is due; cleared when one is taken
        self.covering = 0  # the input records the due snapshot must follow (the source's position; `request`)
        self.next_due = float("inf")
        self.wake = threading.Event()  # a snapshot was taken, or the run ended: the timer looks again
        self.stopped = False
        self.lock = threading.Lock()  # one snapshot at a time (FRONT workers take turns at the input anyway)
        self.taken = threading.Event()  # set by each snapshot (`request` waits for it)
        self.snapshots = 0
        self.snapshot_seconds = 0.0
        self.last_bytes = 0
        self.cells_held = 0  # synchro-cells holding records in the final snapshot

    def bind(self, engine: Any) -> None:
        """The engine's checkpoint hooks (``quiescent``, ``export_state``, ``records_out``, ``engine_name``).

        Starts the timer thread, which sets ``due`` every ``interval``
        seconds after the last snapshot: the gate reads one attribute per
        record, not the clock.
        """
        self.engine = engine
        if self.interval is None:  # a session's snapshots: taken when asked for (`request`)
            return
        self.next_due = time.monotonic() + self.interval
        threading.Thread(target=self._timer, name="snet-checkpoint-timer", daemon=True).start()

    def _timer(self) -> None:
        while not self.stopped:
            delay = self.next_due - time.monotonic()
            if delay > 0:
                self.wake.wait(delay)
            else:
                self.due = True
                self.wake.wait()  # until the snapshot is taken (or the run ends)
            self.wake.clear()

    def request(self, covering: int = 0) -> threading.Event:
        """Ask for a snapshot at the engine's next quiescent point once the input has handed out ``covering``
        records (its position: a session's inputs fed before the call, still queued, come first); the event
        is set once it is committed."""
        self.taken.clear()
        self.covering = covering
        self.due = True
        return self.taken

    def stop(self) -> None:
        """End the timer thread (the run is over or closed)."""
        self.stopped = True
        self.wake.set()

    def try_snapshot(self, final: bool = False) -> bool:
        """Take the snapshot if the run is quiescent now (see the module's docstring); False: not yet."""
        engine = self.engine
        with self.lock:
            started = time.perf_counter()
            output = self.output
            with output.lock:
                if output.written != engine.records_out() or not engine.quiescent():
                    return False
                with gc_paused():  # (it builds a list per record held)
                    state = engine.export_state()
                    if self.executor is not None:
                        self.executor.add_state(state)
                if final:  # (for the note at the end of the run)
                    self.cells_held = held_cells(state)
                committed = output.commit()
                # Quiescent: every failure of the records read so far is counted, and in the error file already.
                errors = self.errors.commit() if self.errors is not None else None
                failures = self.failures_before + self.count_failures()
            manifest = {**self.identity, "engine": engine.engine_name, "input": self.source.position(),
                        "output": committed, "errors": errors, "failures": failures, "final": final}
            self.last_bytes = self.store.commit(state, manifest)
            self.snapshots += 1
            self.snapshot_seconds += time.perf_counter() - started
            if self.interval is not None:
                self.next_due = time.monotonic() + self.interval
            self.due = False
            self.covering = 0
            self.wake.set()
            self.taken.set()
            return True

    def finish(self) -> None:
        """The run has ended: commit its final state, so that appending input and running again continues it."""
        self.stop()
        if self.engine is not None and not self.try_snapshot(final=True):
            raise SNetRuntimeError("internal error: the run ended with records in flight; no final checkpoint")
        if self.cells_held:  # (their termination warnings say "discarded": from this run, not from the state)
            log.warning("note: the %d synchro-cell%s holding records %s kept in the checkpoint in %s: records "
                        "appended to the input and run again meet them", self.cells_held,
                        "" if self.cells_held == 1 else "s", "is" if self.cells_held == 1 else "are",
                        self.store.path)
        log.info("info: %d checkpoint%s in %s, %.1f ms each on average; the last holds %d bytes of state",
                 self.snapshots, "" if self.snapshots == 1 else "s", self.store.path,
                 1000 * self.snapshot_seconds / max(1, self.snapshots), self.last_bytes)


def held_cells(state: dict) -> int:
    """The synchro-cells of a snapshot's ``state`` (snet.checkpoint.state) that hold records."""
    return (sum(1 for _, _, slots in state["cells"] if slots is not None and any(r is not None for r in slots))
            + sum(len(cells) for _, _, _, cells in state["sync_stars"]))


class InputGate:
    """The input iterator of a run that takes checkpoints (see the module's docstring).

    Engines look for ``snet_checkpoint`` on the records they are given:
    they import its ``restore`` state before admitting input and ``bind``
    their hooks to it.
    """

    def __init__(self, records: Iterator[dict], checkpointing: Checkpointing):
        self.records = records
        self.snet_checkpoint = checkpointing
        self.source = checkpointing.source

    def __iter__(self) -> "InputGate":
        return self

    def __next__(self) -> Any:
        ck = self.snet_checkpoint
        if ck.due and self.source.taken >= ck.covering and not ck.try_snapshot():
            # The reference engine asks between inputs only: nothing can be in flight then but records waiting in
            # the split executor's partial batch, which it runs when told "nothing yet" (snet.reference)
            if getattr(ck.engine, "synchronous", False) and not ck.engine.batch_waits():
                raise SNetRuntimeError("internal error: the engine asked for input while records were in flight")
            return NO_INPUT_YET
        record = next(self.records)
        if record is not NO_INPUT_YET:  # (a session's input says it has nothing yet)
            self.source.taken += 1
        return record
