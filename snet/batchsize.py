"""The sizes of a split executor's batches, chosen while the run goes on (:class:`SplitBatchSizer`).

A split executor (:mod:`snet.splitexec`) sends its records to the replicas
in batches: one round trip to the processes or one Spark job each.  Where
the options give no batch size, the executor's sizer chooses it after
every batch, from the time a record took (under ``--box-concurrency auto``)
and from the bytes a record moved (always), and says why under ``-v``.
"""

from __future__ import annotations

import logging
from collections import deque

log = logging.getLogger("snet")


class SplitBatchSizer:
    """Batch sizes chosen while the run goes on, where the options give none: under ``--box-concurrency auto``
    by the time a batch takes and its bytes, else the executor's default size kept to its bytes.

    A batch runs as one round trip to the executor, and the run's other
    stages get its outputs only when all of it is done: a large batch
    spreads the executor's fixed cost per batch over many records, a small
    one lets outputs flow (and stages after the split work) while the next
    batch runs.  So the size aims at a batch that takes ``seconds`` of wall
    time, long beside the executor's fixed cost per batch (a pipe's round
    trip for split processes, a job's start on Spark) and short beside a
    run: after each batch, ``seconds`` over the time a record took (a
    moving mean of the batches so far, each weighed by its records), as a
    power of two between ``FEWEST`` and ``MOST``.  The first batch is the
    executor's :attr:`SplitExecutor.first_batch`.

    Quick records of many bytes would make such a batch large in memory (the
    records, their pickles and their outputs are all held until it is done):
    where the runners say how many bytes a batch moved
    (:meth:`SplitRunner.bytes_moved`), the size is also kept to
    ``MOST_BYTES`` over a moving mean of the bytes a record moved, in and out;
    before the first batch, over twice the pickle of the run's first record
    (:meth:`first_record`).  Without ``auto`` (``seconds`` None) that is all:
    the size is the executor's default (``first``), or fewer records where
    they are large.  Each change is logged (``-v``) with its reason.
    """

    FEWEST = 8
    MOST = 65_536
    MOST_BYTES = 64 << 20  # pickled records in and out of one batch, about

    def __init__(self, seconds: float | None, first: int, where: str = "in the split executor"):
        self.seconds, self.where, self.default = seconds, where, first
        self.per_record: float | None = None  # a moving mean, seconds a record
        self.bytes_per_record: float | None = None  # a moving mean, bytes a record moved (None: not known)
        # the sizes set in turn, the latest 64: the first batch's, then each change (the last may have been
        # set after the run's last batch)
        self.sizes: deque[int] = deque([first], maxlen=64)

    def next_size(self, records: int, seconds: float, moved: int = 0) -> int:
        """The size of the next batch, after one of ``records`` records took ``seconds`` and moved ``moved``
        bytes to and from the executor (0: not known)."""
        # recent batches count most: a batch's weight grows with its records, up to half
        weight = min(0.5, records / (records + 64))
        measured = seconds / records
        if self.per_record is None:
            self.per_record = measured
        else:
            self.per_record += weight * (measured - self.per_record)
        if moved:
            if self.bytes_per_record is None:
                self.bytes_per_record = moved / records
            else:
                self.bytes_per_record += weight * (moved / records - self.bytes_per_record)
        if self.seconds is None:
            wanted, reason = float(self.default), f"the default, {(self.bytes_per_record or 0) / 1024:,.0f} KiB a " \
                                                  f"record in and out"
        else:
            wanted = self.seconds / self.per_record if self.per_record > 0 else self.MOST
            reason = f"{self.per_record * 1e6:,.3g} µs a record, batches of about {self.seconds:g} s"
        if self.bytes_per_record and self.MOST_BYTES / self.bytes_per_record < wanted:
            wanted = self.MOST_BYTES / self.bytes_per_record
            reason = (f"{self.bytes_per_record / 1024:,.0f} KiB a record in and out, at most "
                      f"{self.MOST_BYTES >> 20} MiB a batch")
        size = self.default if self.seconds is None and wanted >= self.default else self._power(wanted)
        if size != self.sizes[-1]:
            self._say(self.sizes[-1], size, reason)
            self.sizes.append(size)
        return size

    def first_record(self, moved: int) -> int:
        """The first batch's size, given the bytes the run's first record would move (twice its pickle, as if
        its outputs were as large): at most ``MOST_BYTES`` of such records."""
        first = self.sizes[0]
        if not moved:
            return first
        self.bytes_per_record = float(moved)  # (until the runners say what the batches moved)
        if self.MOST_BYTES / moved < first:
            size = self._power(self.MOST_BYTES / moved)
            self._say(first, size, f"the first record: {moved / 1024:,.0f} KiB in and out, at most "
                                   f"{self.MOST_BYTES >> 20} MiB a batch")
            self.sizes[0] = first = size
        return first

    def chosen(self) -> tuple[int, ...]:
        """The sizes set in turn (the first batch's, then each change), for the statistics; none where the
        default size was kept all along."""
        return () if self.seconds is None and list(self.sizes) == [self.default] else tuple(self.sizes)

    def _power(self, wanted: float) -> int:
        size = self.FEWEST
        while size * 2 <= wanted and size < self.MOST:
            size *= 2
        return size

    def _say(self, old: int, new: int, reason: str) -> None:
        log.info("info: batch size%s %s: %s -> %s (%s)", " auto" if self.seconds is not None else "", self.where,
                 f"{old:,}", f"{new:,}", reason)
