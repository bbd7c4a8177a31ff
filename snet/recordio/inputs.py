"""Records handed in by Python code: the check record files get, at the API boundary.

A record read from a file has been checked by its reader; one handed to
``Network.run`` or ``Session.feed`` is checked here, by the same function
(``snet.records.record_problem``) and so in the same words, and refused
where it enters, naming its position in the input.  Unchecked, a float or
a bool in a tag would travel through the network and come out as a tag,
and a string tag or a record that is not a mapping would fail deep inside
an engine with a ``TypeError`` that says neither which record nor why.

``checked_inputs`` wraps the caller's iterable in a generator, so the error
is raised by the input stream itself: engines re-raise an exception of the
input after the outputs produced before it (``snet.backends``), which gives
a bad record the same treatment as a bad line of a record file.

Cost.  The common case is a ``dict`` whose labels were all seen before in
the run: one set lookup per key and a type test per tag, as in the JSON
Lines reader.  ``record_problem`` itself runs only for a record with a
label not seen yet (at most a few thousand are remembered) or a tag that
does not hold an ``int`` -- that is, for the first record of each shape
and for bad records.
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


def checked_inputs(records: Iterable) -> Iterator[Mapping]:
    """The records of `records`, each checked as it is pulled.

    ``iter(records)`` is called at once, so that an argument that is not
    iterable fails in the caller's call rather than later in the engine.

    Raises:
        InputRecordError: when a malformed record is reached, after every
            record before it has been passed on.
    """
    return _checked(iter(records))


def _checked(records: Iterator) -> Iterator[Mapping]:
    fields: set = set()  # labels known valid, split by kind
    tags: set = set()
    index = 0
    only_fields = fields.issuperset  # a record of known fields alone needs no look at its values
    for record in records:
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
        check_input(record, index)
        for label in record:
            known = tags if label[0] == "<" else fields
            if len(known) < _KNOWN_LABELS_MAX:
                known.add(label)
        yield record
