"""The checkpoint directory: one manifest naming one state file, replaced atomically.

Layout of ``DIR``::

    manifest.json          what the last snapshot is: positions, digests, its state file
    state-000042.pickle    the engine's state at that snapshot (pickled records)
    lock                   held (``flock``) by the ``snet run`` that uses the directory, with its pid

A snapshot is written in this order, each step durable before the next:

1. ``state-N.pickle.tmp`` written, ``fsync``-ed, renamed to ``state-N.pickle``;
2. ``manifest.json.tmp`` written, ``fsync``-ed, renamed over ``manifest.json``,
   and the directory ``fsync``-ed: this rename is the commit;
3. the previous state file removed.

A run killed at any point leaves a manifest that names a complete state
file: the old one before the commit, the new one after it.  Leftover
``.tmp`` files and state files no manifest names are removed when the
directory is opened.

Two runs on one directory would remove each other's state files and cut
back each other's output: ``snet run`` holds an exclusive ``flock`` on
``DIR/lock`` for as long as it runs (``exclusive=True``), and a second
one is refused while the first lives.  The kernel lets go of the lock
when the process ends, however it ends, so a killed run leaves nothing
that stops its resume.

The state file is a pickle (the records held in synchro-cells carry any
Python value), so a checkpoint directory is trusted input, as a pickled
record file is: load only your own.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import sys
from typing import Any

from snet.errors import SNetRuntimeError, SNetUsageError
from snet.gcpause import gc_paused

MANIFEST = "manifest.json"
LOCK = "lock"
FORMAT = "snet-checkpoint"
VERSION = 1
# Test hook only: "state:N" or "manifest:N" kills the process with SIGKILL during the N-th snapshot's
# write, after that file's temporary copy is complete and before its rename (tests/checkpoint).
KILL_HOOK = "SNET_CHECKPOINT_TEST_KILL"


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class CheckpointStore:
    """The snapshots of one run in directory ``path``.

    ``manifest`` is the committed manifest (None: no snapshot yet, a fresh run).
    """

    def __init__(self, path: str, reset: bool = False, exclusive: bool = False):
        self.path = path
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:
            raise SNetUsageError(f"cannot make the checkpoint directory {path}: {e.strerror or e}") from None
        if not os.path.isdir(path):
            raise SNetUsageError(f"--checkpoint {path} is not a directory")
        self._lock_fd = self._lock() if exclusive else None
        if reset:
            self._remove(keep=None)
        self.manifest = self._read_manifest()
        self._remove(keep=self.manifest["state"] if self.manifest else None)
        self.seq = self.manifest["seq"] if self.manifest else 0
        hook = os.environ.get(KILL_HOOK, "")
        step, _, number = hook.partition(":")
        self._kill_at = (step, int(number)) if number.isdigit() else None

    def _lock(self) -> int:
        """Take the directory's lock for this process (kept until it ends); another run holding it is refused."""
        import fcntl

        where = os.path.join(self.path, LOCK)
        fd = os.open(where, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            raise SNetUsageError(f"another run uses the checkpoint in {self.path}"
                                 f"{f' (process {holder})' if holder else ''}: two runs on one directory would "
                                 f"overwrite each other's snapshots and output; wait for it to end, or use another "
                                 f"directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    def _read_manifest(self) -> dict | None:
        where = os.path.join(self.path, MANIFEST)
        try:
            with open(where, "rb") as f:
                manifest = json.loads(f.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise SNetUsageError(f"cannot read the checkpoint manifest {where}: {e} "
                                 f"(--checkpoint-reset starts afresh)") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise SNetUsageError(f"{where} is not a checkpoint manifest of this version of snet "
                                 f"(--checkpoint-reset starts afresh)")
        return manifest

    def _remove(self, keep: str | None) -> None:
        """Remove temporary files and state files other than ``keep`` (None with no manifest: all of them)."""
        for name in os.listdir(self.path):
            if name.endswith(".tmp") or (name.startswith("state-") and name != keep) or (
                    keep is None and name == MANIFEST):
                try:
                    os.remove(os.path.join(self.path, name))
                except FileNotFoundError:
                    pass

    def load_state(self) -> Any:
        """The engine state the committed manifest names (checked against its digest)."""
        assert self.manifest is not None
        where = os.path.join(self.path, self.manifest["state"])
        try:
            with open(where, "rb") as f:
                data = f.read()
        except OSError as e:
            raise SNetUsageError(f"cannot read the checkpoint state {where}: {e.strerror or e} "
                                 f"(--checkpoint-reset starts afresh)") from None
        if hashlib.sha256(data).hexdigest() != self.manifest["state_sha256"]:
            raise SNetUsageError(f"the checkpoint state {where} does not match its manifest "
                                 f"(--checkpoint-reset starts afresh)")
        with gc_paused():  # a state of many records: collections would walk them again and again
            return pickle.loads(data)

    def commit(self, state: Any, manifest: dict) -> int:
        """Write a snapshot (see the module's docstring); returns the state file's size in bytes."""
        try:
            with gc_paused():
                data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise SNetRuntimeError(f"cannot take a checkpoint: a record held in the network has a value that "
                                   f"pickle cannot store ({e})") from None
        self.seq += 1
        name = f"state-{self.seq:06d}.pickle"
        final = os.path.join(self.path, name)
        _write_durably(final + ".tmp", data)
        self._test_kill("state")
        os.replace(final + ".tmp", final)
        manifest = {"format": FORMAT, "version": VERSION, **manifest, "seq": self.seq, "state": name,
                    "state_sha256": hashlib.sha256(data).hexdigest(), "state_bytes": len(data)}
        where = os.path.join(self.path, MANIFEST)
        _write_durably(where + ".tmp", json.dumps(manifest, indent=1, sort_keys=True).encode())
        self._test_kill("manifest")
        os.replace(where + ".tmp", where)
        _fsync_dir(self.path)
        previous = self.manifest
        self.manifest = manifest
        if previous is not None and previous["state"] != name:
            try:
                os.remove(os.path.join(self.path, previous["state"]))
            except FileNotFoundError:
                pass
        return len(data)

    def _test_kill(self, step: str) -> None:
        if self._kill_at == (step, self.seq):
            os.kill(os.getpid(), signal.SIGKILL)


def file_digest(path: str, limit: int | None = None) -> str:
    """The SHA-256 of a file's first ``limit`` bytes (None: all of it)."""
    h = hashlib.sha256()
    left = limit
    with open(path, "rb") as f:
        while left is None or left > 0:
            chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            if left is not None:
                left -= len(chunk)
    return h.hexdigest()


def box_file_digests(network: Any) -> dict[str, str]:
    """The digest of every file a box function of ``network`` was loaded from (``NET.py``, box modules)."""
    boxes = {}
    for function in network.boxes.values():
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        origin = getattr(module, "__file__", None)
        if origin and os.path.isfile(origin):
            boxes[os.path.abspath(origin)] = file_digest(origin)
    return boxes
