"""``net.run(records, checkpoint=DIR)``: checkpoints in the embedding API.

The records must be replayable: a list or tuple of records, or the path
of a record file (JSON Lines or S-Net XML, by its extension); an iterator
or generator cannot be read again from a position and is refused.  The
outputs count as committed when the caller has taken them from the
execution: a snapshot records how many were taken, and a resumed run
yields only the outputs that come after the snapshot.  Outputs a caller
took after the last snapshot and lost in a crash come again on the resume;
``snet run`` commits its output file with each snapshot and so writes each
output exactly once.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from typing import Any

from snet.checkpoint.files import open_input
from snet.checkpoint.gate import DEFAULT_INTERVAL, Checkpointing, InputGate
from snet.checkpoint.store import MANIFEST, CheckpointStore, box_file_digests, file_digest
from snet.errors import SNetUsageError
from snet.execution import Execution
from snet.options import DEFAULT_ENGINE

RESET_HINT = "pass checkpoint_reset=True to start afresh"


class ListInput:
    """A list of records, resumed by position; the digest covers the records read (pickled)."""

    def __init__(self, records: list | tuple, committed: dict | None):
        self.all = records
        self.taken = committed["records"] if committed else 0
        self.hasher = hashlib.sha256()
        if committed:
            if len(records) < self.taken:
                raise SNetUsageError(f"the records hold fewer than the {self.taken} the run had read; {RESET_HINT}")
            for record in records[:self.taken]:
                self._hash(record)
            if self.hasher.hexdigest() != committed["sha256"]:
                raise SNetUsageError(f"the records before position {self.taken} changed since the checkpoint; "
                                     f"{RESET_HINT}")
        self.records = self._read()

    def _hash(self, record: Any) -> None:
        self.hasher.update(pickle.dumps(dict(record), protocol=4))

    def _read(self):
        for record in self.all[self.taken:]:
            self._hash(record)
            yield record

    def position(self) -> dict:
        return {"format": "list", "records": self.taken, "sha256": self.hasher.hexdigest()}

    def close(self) -> None:
        pass


class TakenOutputs:
    """The outputs the caller has taken: what a snapshot of an API run commits."""

    def __init__(self, total: int):
        self.lock = threading.Lock()
        self.written = 0
        self.total = total

    def commit(self) -> dict:
        return {"records": self.total}


class CheckpointedExecution(Execution):
    """An execution whose outputs are counted as taken and whose end commits a final snapshot."""

    def __init__(self, inner: Execution, checkpointing: Checkpointing, source: Any):
        super().__init__()
        self.inner = inner
        self.checkpointing = checkpointing
        self.output = checkpointing.output
        self.source = source
        self.warnings = inner.warnings
        self.error_policy = inner.error_policy
        self.guards = inner.guards
        checkpointing.count_failures = lambda: inner.failures

    def __next__(self) -> dict:
        try:
            record = next(self.inner)
        except StopIteration:
            self.checkpointing.finish()
            self.source.close()
            raise
        # Only this thread changes the counts, and a snapshot compares `written` with the engine's outputs
        # before it reads `total`: no lock (a snapshot that reads between the two finds them unequal).
        output = self.output
        output.total += 1
        output.written += 1
        return record

    def ready(self) -> bool:
        return self.inner.ready()

    def close(self) -> None:
        self.checkpointing.stop()
        self.inner.close()
        self.source.close()

    def stats(self):
        return self.inner.stats()


def _identity(network: Any, engine: str) -> dict:
    boxes = box_file_digests(network)
    drawing = network.to_dot() + network.signature
    return {"network": {"sha256": hashlib.sha256(drawing.encode()).hexdigest()}, "boxes": boxes, "engine": engine}


class SessionInput:
    """A session's input: its records come from the callers, so a snapshot counts them and no more."""

    def __init__(self, committed: dict | None):
        self.taken = committed["records"] if committed else 0
        self.start = self.taken  # (where this session's own inputs begin)

    def position(self) -> dict:
        return {"format": "session", "records": self.taken}

    def close(self) -> None:
        pass


class SessionOutputs:
    """A session's outputs go to their requests as they leave the network: none waits to be committed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checkpointing: Any = None
        self.total = 0

    @property
    def written(self) -> int:
        return self.checkpointing.engine.records_out()

    def commit(self) -> dict:
        return {"records": self.total}


class MemoryStore:
    """Keeps the last snapshot's state in memory: the store of :func:`run_with_state`."""

    path = "memory"

    def __init__(self) -> None:
        self.state: Any = None

    def commit(self, state: Any, manifest: dict) -> int:
        self.state = state
        return 0


def run_with_state(start: Any, records: list, state: Any) -> tuple[list, Any]:
    """Run records from a state to their end: (the outputs, the state then), for a caller that keeps the state.

    ``start(records)`` starts an engine over ``records`` (an engine takes a
    checkpoint's gate as its input, :mod:`snet.checkpoint.gate`); ``state``
    is what an earlier call returned, or None for a fresh network.  A Spark
    stream keeps each tag's state so between micro-batches
    (:mod:`snet.spark.stream`).
    """
    from snet.recordio.inputs import checked_inputs

    source = ListInput(records, None)
    store = MemoryStore()
    checkpointing = Checkpointing(store, None, state, TakenOutputs(0), source, {})
    records_read: Any = checked_inputs(source.records)
    gate = InputGate(records_read, checkpointing)
    execution = CheckpointedExecution(start(gate), checkpointing, source)
    try:
        outputs = list(execution)
    finally:
        execution.close()
    return outputs, store.state


def require_snapshot(directory: str) -> None:
    """Refuse ``net.session(resume=DIR)`` when ``DIR`` holds no snapshot to resume from."""
    if not os.path.isdir(directory):
        raise SNetUsageError(f"resume={directory!r}: there is no such directory, so no snapshot to resume from "
                             f"(checkpoint=DIR starts afresh when DIR holds none)")
    if not os.path.isfile(os.path.join(directory, MANIFEST)):
        raise SNetUsageError(f"resume={directory!r}: the directory holds no snapshot (none was taken there, or "
                             f"it was reset); checkpoint=DIR starts afresh when DIR holds none")


def session_checkpointing(network: Any, options: Any, directory: str, reset: bool) -> Checkpointing:
    """The snapshots of a session in ``directory``, restored from its last one (``session.checkpoint()``)."""
    store, now, restore = _open_store(network, options, directory, reset)
    outputs = SessionOutputs()
    manifest = store.manifest
    checkpointing = Checkpointing(store, None, restore, outputs, SessionInput(manifest["input"] if manifest else None),
                                  now)
    outputs.checkpointing = checkpointing
    return checkpointing


def _open_store(network: Any, options: Any, directory: str, reset: bool) -> tuple:
    """The store, the run's identity and the state to restore (None: a fresh run); a changed run is refused."""
    engine = options.engine or DEFAULT_ENGINE
    store = CheckpointStore(os.fspath(directory), reset=reset)
    now = _identity(network, engine)
    manifest = store.manifest
    if manifest is not None:
        if manifest["network"] != now["network"]:
            raise SNetUsageError(f"the network changed since the checkpoint in {directory}; {RESET_HINT}")
        for path, digest in sorted(manifest["boxes"].items()):
            if now["boxes"].get(path) != digest:
                raise SNetUsageError(f"the box file {path} changed since the checkpoint in {directory}; {RESET_HINT}")
        if manifest["engine"] != engine:
            raise SNetUsageError(f"the checkpoint in {directory} was taken by the {manifest['engine']} engine")
    return store, now, store.load_state() if manifest is not None else None


def run_checkpointed(network: Any, records: Any, options: Any, directory: str, interval: float | None,
                     reset: bool) -> Execution:
    """Start ``network`` over replayable ``records`` with snapshots in ``directory`` (see the module's docstring)."""
    from snet.recordio import detect_format
    from snet.recordio.inputs import checked_inputs

    if interval is not None and not interval > 0:
        raise SNetUsageError(f"checkpoint_interval takes a positive number of seconds, not {interval}")
    # (the records first: a run refused for them makes no directory)
    if isinstance(records, (str, os.PathLike)):
        if not os.path.isfile(os.fspath(records)):
            raise SNetUsageError(f"input file not found: {os.fspath(records)}")
    elif not isinstance(records, (list, tuple)):
        raise SNetUsageError(f"checkpoint= needs records that can be read again from a position: a list, a tuple "
                             f"or a record file's path, not {type(records).__name__} (a generator or iterator "
                             f"cannot be replayed)")
    store, now, restore = _open_store(network, options, directory, reset)
    manifest = store.manifest
    committed = manifest["input"] if manifest else None
    source: Any
    if isinstance(records, (str, os.PathLike)):
        path = os.fspath(records)
        source = open_input(path, detect_format(path, None), committed, allow_pickle=False)
    else:
        source = ListInput(records, committed)
    output = TakenOutputs(manifest["output"]["records"] if manifest else 0)
    checkpointing = Checkpointing(store, interval if interval is not None else DEFAULT_INTERVAL, restore, output,
                                  source, now, failures_before=manifest.get("failures", 0) if manifest else 0)
    records_read: Any = checked_inputs(source.records)
    gate = InputGate(records_read, checkpointing)
    return CheckpointedExecution(network.execute(gate, options), checkpointing, source)


__all__ = ["run_checkpointed", "run_with_state"]
