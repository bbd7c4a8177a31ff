"""The options of a run, checked once, where they enter.

:class:`RunOptions` is what a user may tune about a run (interfaces.md §1
and §4).  Every way in builds one: ``Network.run`` and ``Network.session``
through :meth:`RunOptions.from_keywords`, ``snet run`` from its parsed
arguments.  The class is frozen and its validators run at construction, so
an engine never sees a value it cannot honour: a bad one is a
:class:`~snet.errors.SNetOptionError` (a usage error, exit status 2) raised
before any thread starts or any record is read, not a hang (a throttle that
admits nothing), a crash (a negative worker count reaching the runtime) or
a silent reinterpretation (0 workers read as "all cores").

Each message starts with the option's name, so that the command line can
put its own spelling of the option in front of the same text
(:meth:`~snet.errors.SNetOptionError.relabelled`).

Checks are on Python values only; turning command-line text into values
(``"10,2"`` into a pair of numbers) is the command line's business.
"""

from __future__ import annotations

import difflib
import numbers
import os
from collections.abc import Mapping
from typing import Any, Callable

import attrs

from snet.core.guard import DEFAULT_BACKOFF
from snet.core.limits import DEFAULT_MAX_HELD, parse_size
from snet.errors import SNetOptionError, SNetUsageError

SEED_RANGE = (-2**31, 2**31 - 1)  # the scheduler takes the seed as a C int


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# -- validators (attrs calls them with the instance, the attribute and the value) ---

def _positive_or_none(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not _is_int(value):
        raise SNetOptionError(attribute.name, f" must be an int >= 1 or None, not {value!r}")
    if value < 1:
        raise SNetOptionError(attribute.name, f" must be at least 1, not {value!r}")


def _flag(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise SNetOptionError(attribute.name, f" must be True or False, not {value!r}")


def _throttle(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not (isinstance(value, tuple) and len(value) == 2 and all(map(_is_number, value))):
        raise SNetOptionError(attribute.name, f" takes (OFFSET, FACTOR), two numbers, not {value!r}")
    offset, factor = value
    if not (offset >= 1 and factor >= 0):  # also refuses NaN
        raise SNetOptionError(attribute.name, f" needs OFFSET >= 1 and FACTOR >= 0, or no input is ever "
                                              f"admitted; not ({offset:g}, {factor:g})")


def _metrics_address(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    from snet.metrics import parse_address  # here: its HTTP server modules load only when the option is given

    try:
        parse_address(value)
    except ValueError as e:
        raise SNetOptionError(attribute.name, f" {e}") from None


AUTO = "auto"  # box concurrency the runtime chooses while the run goes on (snet.autoconc)


def _concurrency(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value == AUTO and isinstance(value, str):
        return
    if value is not None and not _is_int(value):
        raise SNetOptionError(attribute.name, f" must be an int >= 1, 'auto' or None, not {value!r}")
    _positive_or_none(_, attribute, value)


def _concurrency_per_box(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, dict):  # "auto" as valid as a number
        value = {name: 1 if limit == AUTO and isinstance(limit, str) else limit for name, limit in value.items()}
    _per_box(_, attribute, value)


def _per_box(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise SNetOptionError(attribute.name, f" must be a mapping from box name to int, not {value!r}")
    for name, limit in value.items():
        if not isinstance(name, str):
            raise SNetOptionError(attribute.name, f" takes box names as keys, not {name!r}")
        if not _is_int(limit) or limit < 1:
            raise SNetOptionError(attribute.name, f" must be at least 1 for box '{name}', not {limit!r}")


def _seconds_value(value: Any) -> str | None:
    """Why ``value`` is not a timeout (a finite number of seconds > 0), or None."""
    if not _is_number(value) or not 0 < value < float("inf"):
        return f"must be a number of seconds > 0, not {value!r}"
    return None


def _retries_value(value: Any) -> str | None:
    """Why ``value`` is not a retry setting (N >= 0, BACKOFF >= 0 seconds), or None."""
    if not (isinstance(value, tuple) and len(value) == 2 and _is_int(value[0]) and _is_number(value[1])):
        return f"takes N or (N, BACKOFF), not {value!r}"
    if value[0] < 0 or not 0 <= value[1] < float("inf"):
        return f"needs N >= 0 and BACKOFF >= 0 seconds, not {value!r}"
    return None


def _one_value(problem_of: Callable[[Any], str | None]) -> Callable[..., None]:
    """A validator of one setting (None: not given) that `problem_of` explains."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        problem = None if value is None else problem_of(value)
        if problem:
            raise SNetOptionError(attribute.name, f" {problem}")

    return check


def _table_of_values(problem_of: Callable[[Any], str | None]) -> Callable[..., None]:
    """A validator of a table of settings by box name, each explained by `problem_of`."""
    return lambda _, attribute, value: _per_box_values(attribute, value, problem_of)


_timeout, _timeouts = _one_value(_seconds_value), _table_of_values(_seconds_value)
_retry, _retry_table = _one_value(_retries_value), _table_of_values(_retries_value)


def _per_box_values(attribute: attrs.Attribute[Any], value: Any, problem_of: Any) -> None:
    if not isinstance(value, dict):
        raise SNetOptionError(attribute.name, f" must be a mapping from box name to a value, not {value!r}")
    for name, setting in value.items():
        if not isinstance(name, str):
            raise SNetOptionError(attribute.name, f" takes box names as keys, not {name!r}")
        problem = problem_of(setting)
        if problem:
            raise SNetOptionError(attribute.name, f" for box '{name}' {problem}")


def _retries(value: Any) -> Any:
    """``N`` as ``(N, DEFAULT_BACKOFF)``, ``(N, BACKOFF)`` as a pair of int and float; anything else as given."""
    if _is_int(value):
        return int(value), DEFAULT_BACKOFF
    if isinstance(value, (tuple, list)) and len(value) == 2 and _is_int(value[0]) and _is_number(value[1]):
        return int(value[0]), float(value[1])
    return value


def _retries_table(value: Any) -> Any:
    return {name: _retries(v) for name, v in value.items()} if isinstance(value, Mapping) else value


def _timeout_number(value: Any) -> Any:
    return float(value) if _is_number(value) else value


def _timeouts_table(value: Any) -> Any:
    return {name: _timeout_number(v) for name, v in value.items()} if isinstance(value, Mapping) else value


# engine name -> "module:attribute", the engine's snet.execution.Engine (imported when the engine is used).
ENGINES: dict[str, str] = {
    "reference": "snet.reference:ENGINE",
    "front": "snet.backends.front:ENGINE",
}
DEFAULT_ENGINE = "front"  # passes every conformance case with 1, 2 and 4 workers


def engine_names() -> list[str]:
    return sorted(ENGINES)


def _engine(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or value not in ENGINES):
        shown = f"'{value}'" if isinstance(value, str) else repr(value)
        close = difflib.get_close_matches(value, engine_names(), n=1) if isinstance(value, str) else []
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SNetOptionError(attribute.name, f": unknown engine {shown} ({hint}engines: {', '.join(engine_names())})")


def _seed(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    low, high = SEED_RANGE
    if not _is_int(value) or not low <= value <= high:
        raise SNetOptionError(attribute.name, f" must be an int from {low} to {high} or None, not {value!r}")


def _optional_text(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise SNetOptionError(attribute.name, f" must be a non-empty string or None, not {value!r}")


def _spark_conf(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise SNetOptionError(attribute.name, f" must be a mapping from str to str, not {value!r}")


def _on_error(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not ((isinstance(value, str) and value in ("stop", "skip")) or callable(value)):
        raise SNetOptionError(attribute.name, f" must be 'stop', 'skip' or a callable taking an error record, "
                                              f"not {value!r}")


def _one_executor(options: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and options.spark_master:
        raise SNetOptionError(attribute.name, f" cannot be combined with a Spark master ({options.spark_master}): "
                                              f"the splits run either in local processes or on Spark, not both")


def _with_processes(options: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not options.split_processes:
        raise SNetOptionError(attribute.name, f" applies to the splits that run in split processes: give "
                                              f"split_processes (--split-processes) too")


def _with_spark(options: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value and not options.spark_master:
        local = {"spark_splits": "process_splits (--process-splits)",
                 "spark_batch": "process_batch (--process-batch)"}.get(attribute.name)
        also = f"; the splits in split processes take {local}" if local and options.split_processes else ""
        raise SNetOptionError(attribute.name, f" applies to Spark: give spark_master "
                                              f"(--spark MASTER) too{also}")


def _memory_limit(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not _is_int(value) or value < 1:
        raise SNetOptionError(attribute.name, f" must be a size in bytes (an int >= 1, or text such as '512M' "
                                              f"or '2G') or None, not {value!r}")


# -- converters: normalise the accepted shapes, pass anything else on to the validator ---

def _pair(value: Any) -> Any:
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(_is_number, value)):
        return float(value[0]), float(value[1])
    return value


def _size(value: Any) -> Any:
    """``"512M"`` as bytes; an unreadable text is left for the validator to refuse."""
    if isinstance(value, str):
        try:
            return parse_size(value)
        except ValueError:
            return value
    return value


def _dict(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


@attrs.frozen
class RunOptions:
    """What the user may tune about a run; engines ignore what does not apply to them.

    Raises:
        SNetOptionError: at construction, for any value out of its range;
            the message names the option and the value.
    """

    engine: str | None = attrs.field(default=None, validator=_engine)  # None: the default engine
    workers: int | None = attrs.field(default=None, validator=_positive_or_none)  # FRONT threads; None: cores
    # admit input while inputs < offset + factor * outputs
    throttle: tuple[float, float] | None = attrs.field(default=None, converter=_pair, validator=_throttle)
    # concurrent calls per box instance ("auto", or None, the default: the runtime chooses), and per box name
    box_concurrency: int | str | None = attrs.field(default=None, validator=_concurrency)
    box_concurrency_per_box: dict[str, int | str] = attrs.field(factory=dict, converter=_dict,
                                                                validator=_concurrency_per_box)
    steal: bool = attrs.field(default=True, validator=_flag)
    # run the plan's chains of boxes and filters as one entity each (FRONT; docs/runtime.md, "Fusion")
    fuse: bool = attrs.field(default=True, validator=_flag)
    seed: int | None = attrs.field(default=None, validator=_seed)
    stats: bool = attrs.field(default=False, validator=_flag)  # collect statistics (cheap counters always kept)
    spark_master: str | None = attrs.field(default=None, validator=_optional_text)
    spark_conf: dict[str, str] = attrs.field(factory=dict, converter=_dict, validator=[_spark_conf, _with_spark])
    # "auto", "all", or a comma list of positions / net names
    spark_splits: str | None = attrs.field(default=None, validator=[_optional_text, _with_spark])
    spark_batch: int | None = attrs.field(default=None, validator=[_positive_or_none, _with_spark])
    # the replicas of index splits in N local processes (snet.splitproc); not with spark_master
    split_processes: int | None = attrs.field(default=None, validator=[_positive_or_none, _one_executor])
    # which splits run in them: as spark_splits ("auto", "all", positions / net names)
    process_splits: str | None = attrs.field(default=None, validator=[_optional_text, _with_processes])
    process_batch: int | None = attrs.field(default=None, validator=[_positive_or_none, _with_processes])
    # box calls in a pool of worker processes: for every box, and per box name (snet.core.processes)
    box_processes: int | None = attrs.field(default=None, validator=_positive_or_none)
    box_processes_per_box: dict[str, int] = attrs.field(factory=dict, converter=_dict, validator=_per_box)
    # a box process is replaced by a fresh one after this many calls, or once its resident memory passes
    # this many bytes (an int, or a text such as "512M"): a box that leaks is recycled (snet.core.processes)
    box_process_calls: int | None = attrs.field(default=None, validator=_positive_or_none)
    box_process_memory: int | None = attrs.field(default=None, converter=_size, validator=_positive_or_none)
    # "stop" (the default), "skip", or a callable taking an error record (snet.errorpolicy)
    on_error: Any = attrs.field(default="stop", validator=_on_error)
    # a box call abandoned after this many seconds, and a failed call retried N times after BACKOFF seconds,
    # doubling: for every box, and per box name (snet.core.guard)
    box_timeout: float | None = attrs.field(default=None, converter=_timeout_number, validator=_timeout)
    box_timeout_per_box: dict[str, float] = attrs.field(factory=dict, converter=_timeouts_table,
                                                        validator=_timeouts)
    box_retries: tuple[int, float] | None = attrs.field(default=None, converter=_retries, validator=_retry)
    box_retries_per_box: dict[str, tuple[int, float]] = attrs.field(factory=dict, converter=_retries_table,
                                                                    validator=_retry_table)
    # serve the run's figures at http://HOST:PORT/metrics (snet.metrics): a port (on the loopback address;
    # 0: any free port) or "HOST:PORT"
    metrics_port: int | str | None = attrs.field(default=None, validator=_metrics_address)
    # bounds on a run that keeps growing (snet.core.limits): records and state held at once
    # (None: no bound), and growth of the resident memory in bytes (None: no limit)
    max_held: int | None = attrs.field(default=DEFAULT_MAX_HELD, validator=_positive_or_none)
    memory_limit: int | None = attrs.field(default=None, converter=_size, validator=_memory_limit)

    @property
    def auto_concurrency(self) -> bool:
        """Whether the runtime chooses the box concurrency while the run goes on (``"auto"``, or no number given:
        the default), and with it the active workers and the batch sizes of split executors (snet.autoconc)."""
        return self.box_concurrency is None or self.box_concurrency == AUTO

    @classmethod
    def from_keywords(cls, **keywords: Any) -> "RunOptions":
        """The options of ``Network.run(records, **keywords)``.

        As the constructor, and besides: ``box_concurrency`` may also be a
        mapping from box name to number (it becomes
        ``box_concurrency_per_box``), and an unknown keyword is a usage
        error that suggests the option it probably meant.
        """
        if "processes" in keywords:  # the API's name: a number for every box, or a mapping per box
            processes = keywords.pop("processes")
            keywords["box_processes_per_box" if isinstance(processes, Mapping) else "box_processes"] = processes
        unknown = sorted(set(keywords) - set(OPTION_NAMES))
        if unknown:
            raise SNetUsageError(unknown_option_message(unknown[0]))
        per_box = isinstance(keywords.get("box_concurrency"), Mapping)
        if per_box:
            if "box_concurrency_per_box" in keywords:
                raise SNetUsageError("give per-box limits either as box_concurrency or as box_concurrency_per_box, "
                                     "not both")
            keywords["box_concurrency_per_box"] = keywords.pop("box_concurrency")
        guarded = [name for name in ("box_timeout", "box_retries") if isinstance(keywords.get(name), Mapping)]
        for name in guarded:  # a mapping per box name (snet.core.guard)
            if name + "_per_box" in keywords:
                raise SNetUsageError(f"give per-box values either as {name} or as {name}_per_box, not both")
            keywords[name + "_per_box"] = keywords.pop(name)
        try:
            return cls(**keywords)
        except SNetOptionError as e:
            if per_box and e.option == "box_concurrency_per_box":
                raise e.relabelled("box_concurrency") from None
            if e.option.removesuffix("_per_box") in guarded:
                raise e.relabelled(e.option.removesuffix("_per_box")) from None
            raise


OPTION_NAMES: tuple[str, ...] = tuple(a.name for a in attrs.fields(RunOptions))

# -- compiling ---------------------------------------------------------------------

DIALECTS: tuple[str, ...] = ("standard", "rts")  # docs/language.md, "The reference distribution's dialect"


def _dialect(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or value not in DIALECTS:
        shown = f"'{value}'" if isinstance(value, str) else repr(value)
        close = difflib.get_close_matches(value, DIALECTS, n=1) if isinstance(value, str) else []
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SNetOptionError(attribute.name, f": unknown dialect {shown} ({hint}dialects: {', '.join(DIALECTS)})")


def _folders(value: Any) -> Any:
    """One folder or a sequence of them, as a tuple of strings; anything else goes on to the validator."""
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, os.PathLike)) for v in value):
        return tuple(os.fspath(v) for v in value)
    return value


def _net_path(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise SNetOptionError(attribute.name, f" must be a folder or a list of folders, not {value!r}")
    for folder in value:
        if folder and os.path.exists(folder) and not os.path.isdir(folder):
            raise SNetOptionError(attribute.name, f": not a folder: {folder!r}")
        if not folder or not os.path.isdir(folder):
            raise SNetOptionError(attribute.name, f": no such folder: {folder!r}")


@attrs.frozen
class CompileOptions:
    """How a ``.snet`` program is read: its dialect and where declared-only nets are looked for.

    ``dialect`` is ``"standard"`` (the language of docs/language.md, the
    default) or ``"rts"`` (the reference distribution's dialect: inline box
    code, ``type t = t;`` naming an outer ``t``, nets declared by signature
    only and bound from ``NAME.snet``).  ``net_path`` lists the folders
    searched for ``NAME.snet`` after the program's own folder (rts only).

    Raises:
        SNetOptionError: at construction, for an unknown dialect, a
            net-path entry that is not a folder, or a net path with the
            standard dialect.
    """

    dialect: str = attrs.field(default="standard", validator=_dialect)
    net_path: tuple[str, ...] = attrs.field(default=(), converter=_folders, validator=_net_path)

    def __attrs_post_init__(self) -> None:
        if self.net_path and not self.rts:  # silently unused otherwise
            raise SNetOptionError("net_path", ": binds declared-only nets of the rts dialect only; "
                                              "add dialect='rts'")

    @property
    def rts(self) -> bool:
        return self.dialect == "rts"


def unknown_option_message(name: str) -> str:
    close = difflib.get_close_matches(name, OPTION_NAMES, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "options: " + ", ".join(OPTION_NAMES)
    return f"unknown run option '{name}' ({hint})"


__all__ = ["AUTO", "RunOptions", "CompileOptions", "DIALECTS", "OPTION_NAMES", "SEED_RANGE"]
