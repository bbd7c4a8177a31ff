"""Records handed in by Python code: the check record files get, at the API boundary.

A record read from a file has been checked by its reader; one handed to
``Network.run`` or ``Session.feed`` is checked here, by the same function
(``snet.records.record_problem``) and so in the same words, and refused
where it enters, naming its position in the input.  Unchecked, a float or
a bool in a tag would travel through the network and come out as a tag,
and a string tag or a record that is not a mapping would fail deep inside
an engine with a ``TypeError`` that says neither which record nor why.

``checked_inputs`` wraps the caller's iterable in a :class:`CheckedInputs`,
iterated as a generator, so the error is raised by the input stream itself: engines re-raise an exception of the
input after the outputs produced before it (``snet.backends``), which gives
a bad record the same treatment as a bad line of a record file.

Cost.  The common case is a ``dict`` whose labels were all seen before in
the run: one set lookup per key and a type test per tag, as in the JSON
Lines reader.  ``record_problem`` itself runs only for a record with a
label not seen yet (at most a few thousand are remembered) or a tag that
does not hold an ``int`` -- that is, for the first record of each shape
and for bad records.  FRONT makes the common case's test in its compiled
code, without the generator (:class:`CheckedInputs`).
"""

from __future__ import annotations

from typing import Any, Final, Iterable, Iterator, Mapping

from snet.errors import SNetRecordError
from snet.records import record_problem

_KNOWN_LABELS_MAX: Final = 4096


class InputRecordError(SNetRecordError):
    """A malformed record handed in by Python code: ``input record N: PROBLEM``.

    Attributes:
        index: the record's position in the input, counting from 1.
        problem: what is wrong, without the position.
    """

    def __init__(self, index: int, problem: str):
        self.index = index
        self.problem = problem
        super().__init__(f"input record {index}: {problem}")

    def __reduce__(self):  # keep both fields across pickling (worker processes)
        return (type(self), (self.index, self.problem))


def check_input(record: Any, index: int) -> Mapping:
    """`record` itself if it is a well-formed input record.

    Raises:
        InputRecordError: it is not; the message names `index` and the problem.
    """
    problem = record_problem(record)
    if problem is not None:
        raise InputRecordError(index, problem)
    return record


def checked_inputs(records: Iterable) -> CheckedInputs:
    """The records of `records`, each checked as it is pulled (iterate the result).

    ``iter(records)`` is called at once, so that an argument that is not
    iterable fails in the caller's call rather than later in the engine.

    Raises:
        InputRecordError: when a malformed record is reached, after every
            record before it has been passed on.
    """
    return CheckedInputs(iter(records))


class CheckedInputs:
    """An input whose records are checked as they are pulled: iterate it, as a generator.

    FRONT does not iterate it: it pulls from ``source`` itself and makes the
    common case's test in its own compiled code (every label in ``fields``,
    or in ``tags`` with an ``int``), calling :meth:`check` for the rest, so
    that a record of a known shape costs no Python frame.  Either way the
    same sets are learnt and the same records refused.
    """

    __slots__ = ("source", "fields", "tags", "_records")

    def __init__(self, source: Iterator):
        self.source = source
        self.fields: set = set()  # labels known valid, split by kind
        self.tags: set = set()
        self._records: Iterator[Mapping] | None = None

    def __iter__(self) -> Iterator[Mapping]:
        if self._records is None:
            self._records = self._checked()
        return self._records

    def __next__(self) -> Mapping:
        return next(iter(self))

    def unchecked(self) -> tuple[Iterator, set, set] | None:
        """``(source, fields, tags)`` for an engine that makes the common case's test itself, calling
        :meth:`check` for the rest; None once the records are being iterated here."""
        return None if self._records is not None else (self.source, self.fields, self.tags)

    def _checked(self) -> Iterator[Mapping]:
        fields = self.fields
        tags = self.tags
        check = self.check
        index = 0
        only_fields = fields.issuperset  # a record of known fields alone needs no look at its values
        for record in self.source:
            index += 1
            if type(record) is dict:
                if only_fields(record):
                    yield record
                    continue
                for label, value in record.items():
                    if label in fields or (label in tags and type(value) is int):
                        continue
                    break
                else:
                    yield record
                    continue
            yield check(record, index)

    def check(self, record: Any, index: int) -> Mapping:
        """``record``, the ``index``-th, if it is well-formed (its labels are learnt); else raise.

        What follows when the common case's test fails: the whole check, and
        the labels of a good record remembered (up to a bound) for the next.
        """
        check_input(record, index)
        fields = self.fields
        tags = self.tags
        for label in record:
            known = tags if label[0] == "<" else fields
            if len(known) < _KNOWN_LABELS_MAX:
                known.add(label)
        return record
