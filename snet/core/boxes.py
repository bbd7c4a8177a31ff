"""Binding declared boxes to Python functions, and calling them.

Binding (interfaces.md §2) happens once, before any record is read: every
box the file declares must be found in the box modules, and each must accept
as many positional arguments as its input tuple has labels.  All problems
are collected and reported together (exit 2).

Calling is the hottest path of every engine, so :class:`BoxCaller` does the
whole of language.md §6.3 with no Python-level helper calls on the common
path (the module is compiled by Cython; ``boxes.pxd`` makes the helpers C
methods).  Its entry ``hop`` (a C-level entry for the FRONT box entity)
takes the value of a one-argument box with one dict look-up and calls the
box with it, checks a result dict against up to four output variants label
by label (past four, by the result's labels as a tuple, remembered per
shape), checks tag values, and adds inherited labels by copying the input
record's table and deleting the labels not inherited.  The first record
shape a box sees is recognised by walking the record's labels, other
shapes by their labels as a tuple (remembered per shape), so the common
case builds no tuple, set or list; a lone output record is returned as
itself, not in a list.

Records are never modified after they are made (see :mod:`snet.records`), so
a result dict may be passed on as the output record itself when nothing is
inherited, and inherited values are shared, not copied.
"""

from __future__ import annotations

import inspect
import operator
import os
import sysconfig
import threading
import traceback
from types import CoroutineType, ModuleType
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from snet.core.aloop import run_coroutine, submit as submit_coroutine
from snet.core.batching import Settled
from snet.core.boxfiles import (BoxFileLoader, BoxSpec, load_module_from_path,  # noqa: F401 (names of this module)
                                 resolve_box_sources)
from snet.core.guard import BoxTimeout
from snet.errors import SNetBindingError, SNetBoxError, SNetError
from snet.records import describe, format_labels
from snet.source import render
from snet.spg.nodes import BoxDeclaration, BoxNode, PropertyGraph

Record = dict


# On a free-threaded CPython 3.13, ``d.copy()`` of a dict with deleted entries (what flow inheritance
# leaves: labels deleted, others added) locks ``d`` a second time inside its own critical section; the
# nested lock spins 40 ``sched_yield`` calls and parks once per copy, about 1,000 times the cost of the
# copy, even in a single thread.  ``dict(d)`` locks ``d`` once.  The GIL build keeps the faster ``copy``.
_FREE_THREADED_BUILD = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _lookup(namespace: Any, name: str) -> Any:
    if isinstance(namespace, Mapping):
        return namespace.get(name)
    return getattr(namespace, name, None)


def label_parameter(label: str) -> str:
    """The parameter name a label binds to by name: ``x`` for a field, ``n`` for ``<n>`` and ``<#n>``."""
    # (no negative indices: this module is compiled with wraparound off)
    if label.startswith("<#"):
        return label[2:len(label) - 1]
    if label.startswith("<"):
        return label[1:len(label) - 1]
    return label


class ArgumentBinding(NamedTuple):
    """How a box function receives the values of its input labels (interfaces.md §2)."""

    positional: tuple  # labels whose values are passed by position, in this order
    keywords: tuple  # (parameter, label) pairs passed by keyword
    by_name: bool
    note: str | None  # a warning for a likely slip, or None


_NAMED_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def argument_binding(box: str, labels: Sequence[str], function: Callable) -> ArgumentBinding:
    """Bind by name when the parameters are named after the labels, else by position.

    By name: every label's name (``<n>`` and ``<#n>`` as ``n``) is a
    parameter that can be given by keyword, and every parameter without a
    default is a label's.  The values are then passed by position for the
    longest run of leading parameters that are labels (no cost per call
    over a positional box), and by keyword after it.  Otherwise they are
    passed by position in the order of the declaration.  The note warns of
    a likely slip: names that are the labels in another order (their
    meaning changed from position to name), or names that match some
    labels but not all (passed by position, so a name may receive another
    label's value).
    """
    labels = tuple(labels)
    positional = ArgumentBinding(labels, (), False, None)
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return positional  # builtins without a signature: by position
    names = {label_parameter(label): label for label in labels}
    if len(names) != len(labels):  # a field and a tag of the same name: only positions tell them apart
        order = [p.name for p in parameters if p.kind in _NAMED_KINDS][:len(labels)]
        if any(name in names and name != label_parameter(label) for name, label in zip(order, labels)):
            pairs = ", ".join(f"{param} = {label}" for param, label in zip(order, labels))
            return positional._replace(note=(
                f"box '{box}' has parameters named after its input labels ({', '.join(labels)}) in other "
                f"positions, but a field and a tag share a name, so the values are passed by position "
                f"({pairs})"))
        return positional
    named = [p.name for p in parameters if p.kind in _NAMED_KINDS]
    required = {p.name for p in parameters if p.default is p.empty and p.kind in _NAMED_KINDS}
    order = [p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL
             and p.kind is not inspect.Parameter.VAR_KEYWORD]
    label_names = tuple(names)
    if names and set(names) <= set(named) and required <= set(names):
        passed: list[str] = []
        keywords: list[tuple[str, str]] = []
        prefix = True  # still in the leading run of parameters that are labels
        for p in parameters:
            if p.name in names and p.kind in _NAMED_KINDS:
                if prefix and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                    passed.append(names[p.name])
                else:
                    keywords.append((p.name, names[p.name]))
            else:
                prefix = False
        note = None
        in_order = tuple(n for n in order if n in names)
        if in_order != label_names:
            note = (f"box '{box}' has its parameters ({', '.join(in_order)}) in another order than its input labels "
                    f"({', '.join(labels)}): the values are passed by name")
        return ArgumentBinding(tuple(passed), tuple(keywords), True, note)
    shared = [n for n in order[:len(labels)] if n in names]
    if shared and tuple(order[:len(labels)]) != label_names:  # (all named, in order: each gets its own label)
        pairs = ", ".join(f"{param} = {label}" for param, label in zip(order, labels))
        return positional._replace(note=(
            f"box '{box}' has parameters named after some of its input labels ({', '.join(labels)}) but not "
            f"all: the values are passed by position ({pairs}); name every parameter after a label to pass "
            f"them by name"))
    return positional


def _binding_problem(function: Callable, binding: ArgumentBinding) -> str | None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None  # builtins without a signature: trust them
    try:
        signature.bind(*binding.positional, **{param: label for param, label in binding.keywords})
    except TypeError as e:
        return str(e)
    return None


def bind_boxes(graph: PropertyGraph, namespaces: Sequence[Any],
               warnings: list[str] | None = None) -> dict[str, Callable]:
    """Find every declared box; check it can be called with its input labels.

    Args:
        warnings: if given, receives the rendered warnings about argument
            binding (see :func:`argument_binding`).

    Returns:
        box name -> Python callable.

    Raises:
        SNetBindingError: naming every missing box and every arity mismatch.
    """
    table: dict[str, Callable] = {}
    missing: list[BoxDeclaration] = []
    problems: list[str] = []
    for decl in graph.boxes:
        if decl.name in table:
            continue
        function = None
        for namespace in namespaces:
            function = _lookup(namespace, decl.name)
            if function is not None:
                break
        if function is None:
            missing.append(decl)
            continue
        if not callable(function):
            problems.append(f"{_error_at(decl)}box '{decl.name}' is bound to a {type(function).__name__}, not a function")
            continue
        binding = argument_binding(decl.name, decl.arguments, function)
        if binding.note is not None and warnings is not None:
            warnings.append(render(decl.span, "warning", binding.note))
        problem = _binding_problem(function, binding)
        if problem is not None:
            problems.append(f"{_error_at(decl)}box '{decl.name}' cannot be called with its "
                            f"{len(decl.arguments)} input label(s) {format_labels(decl.arguments)}: {problem}")
            continue
        table[decl.name] = function
    if missing:
        names = ", ".join(f"'{d.name}'" for d in missing)
        where = ", ".join(_describe_namespace(n) for n in namespaces)
        where = f" in {where}" if where else ": no box module (give --boxes, or put NET.py beside NET.snet)"
        lines = [f"error: declared box{'es' if len(missing) > 1 else ''} {names} not found{where}"]
        provided = _provided_names(namespaces)
        lines += [f"{_error_at(d)}box '{d.name}' is declared here{_near(d.name, provided)}" for d in missing]
        problems.insert(0, "\n".join(lines))
    if problems:
        raise SNetBindingError("\n".join(problems))
    return table


def _provided_names(namespaces: Sequence[Any]) -> list[str]:
    """The public callables the box modules offer, for suggesting a misspelt box."""
    names: list[str] = []
    for namespace in namespaces:
        items = namespace.items() if isinstance(namespace, Mapping) else vars(namespace).items() \
            if hasattr(namespace, "__dict__") else ()
        names += [n for n, v in items if isinstance(n, str) and not n.startswith("_") and callable(v)]
    return names


def _near(name: str, provided: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, provided, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _describe_namespace(namespace: Any) -> str:
    if isinstance(namespace, ModuleType):
        path = getattr(namespace, "__file__", None)
        return f"module {path}" if path and namespace.__name__.startswith("snet_boxes_") else \
            f"module {namespace.__name__}"
    if isinstance(namespace, Mapping):
        return "the given mapping"
    return type(namespace).__name__


def _error_at(decl: BoxDeclaration) -> str:
    """``FILE:LINE:COL: error: `` for a declaration with a place, as every message about the .snet file starts."""
    return f"{decl.span.location}: error: " if decl.span is not None else "error: "


def chain_outputs(callers: tuple, records: list) -> list:
    """The outputs of ``records`` through the box callers ``callers`` one after another (a serial chain).

    Each record goes through the chain depth first, as the reference engine
    takes it: a box's outputs go on through the rest of the chain one after
    another, before the next input record.  The callers' ``hop`` does the
    whole of a call (argument checks, result types, flow inheritance, error
    messages); compiled, this loop calls it at C level, so a record that
    stays one record through the chain costs no Python-level call between
    the boxes.  The callers must not defer ``async def`` calls.
    """
    out: list[Record] = []
    n = len(callers)
    for record in records:
        i = 0
        while i < n:
            caller = callers[i]
            record = caller.hop(record)
            i += 1
            if type(record) is not dict:  # none or several outputs: each through the rest of the chain
                _chain_rest(callers, i, record, out)
                break
        else:
            out.append(record)
    return out


def _chain_rest(callers: tuple, start: int, records: list, out: list) -> None:
    """``records`` through ``callers[start:]`` into ``out`` (the general path of :func:`chain_outputs`)."""
    n = len(callers)
    for record in records:
        i = start
        while i < n:
            caller = callers[i]
            record = caller.hop(record)
            i += 1
            if type(record) is not dict:
                _chain_rest(callers, i, record, out)
                break
        else:
            out.append(record)


def filter_output(record: Record, pattern: frozenset, labels: tuple, out: dict) -> dict:
    """A filter's output record: ``out`` over the labels ``record`` passes on (language.md §6.5).

    What passes on is every label of ``record`` outside the filter's
    ``pattern`` (``labels``: the same, as a tuple), binding tags excepted;
    ``out``'s labels are set over them, in the order ``{**passed, **out}``
    gives.  ``out`` itself when nothing passes on.  Compiled, the record's
    labels are read without an iterator and the output is the record's
    table copied whole, so the output record is all a filter allocates
    besides its explicit part (``out``).
    """
    binding = False
    passes = False
    for k in record:
        if k[1:2] == "#":
            binding = True
        elif k not in pattern:
            passes = True
    if not passes:
        return out
    if _FREE_THREADED_BUILD:  # (copy() of a dict with deleted entries locks it twice there: see above)
        passed = {}
        passed.update(record)
    else:
        passed = record.copy()
    for k in labels:
        if k in passed:
            del passed[k]
    if binding:
        for k in [k for k in passed if k[1:2] == "#"]:
            del passed[k]
    passed.update(out)
    return passed


_pid = os.getpid()  # this process; a forked child sets its own (below)


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def end_forked_child(box: str) -> None:
    """End a child that a box forked and that returned from the box call into the run.

    Only the process that started a run runs its network: a child that went
    on would process the rest of the input a second time and write every
    output again.  A box may fork a child that does its own work and ends
    with ``os._exit``; one that returns ends here, at once, flushing nothing
    of the parent's (status 1, a message on standard error).
    """
    try:
        os.write(2, (f"snet: box '{box}' forked process {os.getpid()}, which returned from the box call; a forked "
                     f"child never runs the network, so it ends here (end a child with os._exit)\n").encode())
    finally:
        os._exit(1)


def _no_arguments(record: Record) -> tuple[()]:
    """The positional argument values of a box that takes none (by keyword only, or an initialiser)."""
    return ()


class Deferred:
    """A call that finishes outside the workers, handed to an engine that overlaps such calls (``BoxCaller.defer``).

    ``work`` is what the call needs: an ``async def`` box's coroutine, or a
    box process's argument values.  The engine starts it with
    ``submit(work, entity, seq, item)``, which queues it for the box loop or
    the box's processes; its outcome comes back to ``entity.deliver`` with
    ``seq`` and ``item``, in a batch of finished calls (snet.core.batching).
    """

    __slots__ = ("work", "submit")

    def __init__(self, work: Any, submit: Callable = submit_coroutine):
        self.work = work
        self.submit = submit


class BoxCaller:
    """Calls one box and turns its results into output records (language.md §6.3)."""

    # Compiled by Cython as an extension type: snet/core/boxes.pxd declares its attributes.

    #: at most this many record shapes (label sequences) are remembered per box
    SHAPES = 256
    #: a box with at most this many output variants has its results checked label by label
    MATCHED = 4

    def __init__(self, node: BoxNode, function: Callable):
        self.name = node.name
        self.function = function
        self.arguments = tuple(node.arguments)
        binding = argument_binding(node.name, self.arguments, function)
        passed = binding.positional
        self.arity = len(passed)
        # the positional argument values of a record: one value for one label, a tuple for several
        take: Callable[[Record], Any] = operator.itemgetter(*passed) if passed else _no_arguments
        self.take = take
        # parameters passed by keyword (binding by name, when they do not follow in label order)
        self.kwnames = tuple(param for param, _ in binding.keywords)
        self.kwtake = operator.itemgetter(*[label for _, label in binding.keywords]) if binding.keywords else None
        # the hot path's argument extraction: the label of a box's only argument, or None;
        # the labels of a box's two arguments, or None
        self.label = passed[0] if len(passed) == 1 and not binding.keywords else None
        self.pair = passed if len(passed) == 2 and not binding.keywords else None
        self.consumed = frozenset(node.arguments)
        # variant label set -> the labels in it whose values must be ints
        self.variants = {frozenset(v): tuple(l for l in v if l.startswith("<")) for v in node.variants}
        # up to MATCHED variants are checked label by label (no tuple, no set built per result):
        # their labels and their tag labels, in the same order; None past that
        vlabels: tuple[tuple[str, ...], ...] | None = None
        vtags: tuple[tuple[str, ...], ...] | None = None
        if len(self.variants) <= self.MATCHED:
            vlabels = tuple(tuple(v) for v in self.variants)
            vtags = tuple(self.variants.values())
        self.vlabels = vlabels
        self.vtags = vtags
        # result shape (its labels in order) -> the tag labels to check: a result's variant is
        # found with one tuple, not a set, once its shape has been seen (past MATCHED variants)
        self.results: dict = {}
        self.declared = tuple(node.variants)
        self.span = node.span
        self.initialiser = node.initialiser
        # record shape (its labels in order) -> the labels its outputs do not inherit, in that
        # order (None: they inherit none)
        self.dropped: dict = {}
        # (labels, labels not inherited) of the first record shape seen: a record of that shape is
        # recognised by walking its labels, no tuple built.  Set by the first call and not
        # replaced by later shapes (one attribute holding the pair: a concurrent call reads
        # either nothing or a whole pair).
        shape: tuple[tuple[str, ...], tuple[str, ...] | None] | None = None
        self.shape = shape
        # an engine that overlaps async calls sets this: a coroutine is returned as a Deferred (and a
        # batched box process's Deferred is passed on)
        self.defer = False

    def __call__(self, record: Record) -> list:
        """Process one input record; returns its output records in order."""
        outs = self.hop(record)
        return [outs] if type(outs) is dict else outs

    def hop(self, record: Record, mode: int = 0) -> Any:
        """Process one input record: a lone output record as itself, else the list of them (or a Deferred).

        ``mode`` is for a fused chain of stages (FRONT's chain entity,
        docs/runtime.md "Fusion"), whose records between stages nobody else
        sees: 0, the output record is a new dict or the box's result itself;
        1, ``record`` is the chain's own and becomes the output record,
        changed in place (no copy); 2, the output record is a dict the
        chain may change (a copy of a result that inherits nothing).

        The entry of an engine's hot path (the FRONT box entity calls it at C
        level): a box of one or two arguments has their values taken with one
        dict look-up each and is called with them directly; a result that is one dict is
        checked against the output variants label by label and inherits
        what the first record shape seen leaves it, with no tuple, set
        or list built on the way.  Everything else takes the general path.
        """
        if type(record) is not dict:
            record = dict(record)
        pid = _pid
        label = self.label
        if label is not None:
            try:
                value = record[label]
            except KeyError:
                raise self._lacks(label, record) from None
            try:
                result = self.function(value)
            except SNetError:
                raise
            except BaseException as e:  # SystemExit, GeneratorExit...: the box's failure, not the run's end
                raise self._raised(e, record) from e
        elif self.pair is not None:
            first, second = self.pair
            try:
                value = record[first]
                other = record[second]
            except KeyError as e:
                raise self._lacks(e.args[0], record) from None
            try:
                result = self.function(value, other)
            except SNetError:
                raise
            except BaseException as e:
                raise self._raised(e, record) from e
        else:
            result = self._call(record)
        if _pid != pid:  # the box forked, and this is the child coming back: it must not run the network
            end_forked_child(self.name)
        return self._settle(result, record, mode)

    def outputs_of(self, result: Any, record: Record) -> Any:
        """What :meth:`hop` gives for ``record`` once the box has returned ``result`` (a fused chain's
        compiled walk calls the box itself and hands over what it cannot take: snet.core.chains)."""
        return self._settle(result, record, 0)

    def _settle(self, result: Any, record: Record, mode: int) -> Any:
        """The outputs of the box's ``result`` for ``record``: one record as itself, else a list (``mode``: hop's)."""
        if type(result) is dict:
            return self._output(result, record, mode)
        outs = self._finish(result, record)
        if type(outs) is list and len(outs) == 1:
            return outs[0]
        return outs

    def raised(self, error: BaseException, record: Record) -> BaseException:
        """The error :meth:`hop` raises when the box raised ``error`` on ``record``."""
        if isinstance(error, SNetError):
            return error
        return self._raised(error, record)

    def simple_form(self) -> tuple | None:
        """``(argument labels, output labels, tag labels)`` of a box whose calls a compiled walk may make
        itself (snet.core.chains): at most two arguments passed by position, one output variant; else None."""
        if self.kwtake is not None or len(self.declared) != 1:
            return None
        arguments: tuple[str, ...]
        if self.label is not None:
            arguments = (self.label,)
        elif self.pair is not None:
            arguments = tuple(self.pair)
        elif self.arity == 0:
            arguments = ()
        else:
            return None
        outputs = tuple(self.declared[0])
        return arguments, outputs, tuple(label for label in outputs if label.startswith("<"))

    def _call(self, record: Record) -> Any:
        """Call the box on ``record``'s input labels (any binding); its raw result."""
        args: tuple[Any, ...]
        try:
            if self.arity == 1:
                args = (self.take(record),)
            elif self.arity:
                args = self.take(record)
            else:
                args = ()
            kwargs = None
            if self.kwtake is not None:
                values = self.kwtake(record)
                kwargs = dict(zip(self.kwnames, (values,) if len(self.kwnames) == 1 else values))
        except KeyError as e:
            raise self._lacks(e.args[0], record) from None
        try:
            return self.function(*args) if kwargs is None else self.function(*args, **kwargs)
        except SNetError:
            raise
        except BaseException as e:  # SystemExit, GeneratorExit...: the box's failure, not the run's end
            raise self._raised(e, record) from e

    def resume(self, outcome: Any, record: Record) -> list:
        """The outputs of a deferred call (see ``defer``) from its outcome: the box's result, or a
        :class:`~snet.core.batching.Settled` (a failure, or a result wrapped)."""
        if type(outcome) is Settled:
            try:
                result = outcome.result()
            except SNetError:
                raise
            except BaseException as e:
                raise self._raised(e, record) from e
        else:
            result = outcome
        if type(record) is not dict:
            record = dict(record)
        if type(result) is dict:
            return [self._output(result, record)]
        return self._finish(result, record)

    def _finish(self, result: Any, record: Record) -> Any:
        """Turn what the box function returned into output records (language.md §6.3)."""
        try:
            if result is None:
                return []
            if type(result) is Deferred and self.defer:  # a box process's call, batched (snet.core.processes)
                return result
            if type(result) is CoroutineType:  # an async def box
                if self.defer:  # the engine awaits it and comes back with resume()
                    return Deferred(result)
                result = run_coroutine(result)  # awaited on the runtime's own loop (aloop.py)
                if result is None:
                    return []
            results: Sequence[Any]
            if type(result) is list:  # (the common case first: a list is read, not copied)
                results = result
            elif type(result) is dict:
                results = (result,)
            elif isinstance(result, Mapping):
                results = (dict(result),)
            elif isinstance(result, (str, bytes)) or not isinstance(result, Iterable):
                raise self._not_records(result, record)
            else:
                results = list(result)  # inside the try: a generator's exception is the box's
        except SNetError:
            raise
        except BaseException as e:  # SystemExit, GeneratorExit...: the box's failure, not the run's end
            raise self._raised(e, record) from e
        outputs = []
        for res in results:
            if type(res) is not dict:
                if not isinstance(res, Mapping):
                    raise self._not_records(res, record)
                res = dict(res)
            outputs.append(self._output(res, record))
        return outputs

    def _output(self, res: dict, record: Record, mode: int = 0) -> dict:
        """The output record of the result ``res`` of ``record``: its variant checked, the rest inherited.

        ``mode``: as :meth:`hop`'s.
        """
        vlabels = self.vlabels
        vtags = self.vtags
        if vlabels is not None and vtags is not None:  # (both set, or neither)
            tags = None
            n = len(res)
            for i in range(len(vlabels)):
                labels = vlabels[i]
                if len(labels) == n:
                    for label in labels:
                        if label not in res:
                            break
                    else:
                        tags = vtags[i]
                        break
            if tags is None:
                raise self._bad_variant(res, record)
        else:
            tags = self.results.get(tuple(res))
            if tags is None:
                tags = self._variant_tags(res, record)
        for t in tags:
            v = res[t]
            if type(v) is not int and not (isinstance(v, int) and not isinstance(v, bool)):
                raise SNetBoxError(
                    f"box '{self.name}' emitted {t} = {v!r} ({type(v).__name__}), not an int", self.span)
        drop = self._dropped(record)
        if mode == 1:  # the chain's own record: it becomes the output, in place
            if drop is None:
                record.clear()
            else:
                for label in drop:
                    if label not in res:
                        del record[label]
            record.update(res)
            return record
        if drop is None:
            # nothing to inherit: the result is the record (a copy when the chain will change it)
            return res if mode == 0 else dict(res)
        # A clean dict's table is copied whole: cheaper than inserting the labels kept.  On
        # free-threaded builds an update into a new dict instead (Cython compiles both
        # ``copy()`` and ``dict(record)`` of a typed dict to the copy that locks twice).
        if _FREE_THREADED_BUILD:
            out = {}
            out.update(record)
        else:
            out = record.copy()
        # A dropped label the result sets again is overwritten in place, not deleted first: the
        # copy stays a clean table (no deleted slot), which the next hop's copy() copies whole.
        for label in drop:
            if label not in res:
                del out[label]
        for label, v in res.items():
            out[label] = v
        return out

    def _variant_tags(self, result: dict, record: Record) -> tuple:
        """The tag labels of the output variant `result` fits (and remember its shape), or raise."""
        tags = self.variants.get(frozenset(result))
        if tags is None:
            raise self._bad_variant(result, record)
        if len(self.results) < self.SHAPES:
            self.results[tuple(result)] = tags
        return tags

    def _dropped(self, record: Record) -> tuple | None:
        """The labels of `record` its outputs do not inherit (consumed ones, binding tags); None: it inherits none.

        The first record shape seen is recognised by walking the record's labels, no tuple built.
        """
        shape = self.shape
        if shape is not None:
            labels = shape[0]
            if len(record) == len(labels):
                i = 0
                for k in record:
                    if k is not labels[i] and k != labels[i]:
                        break
                    i += 1
                else:
                    return shape[1]
        labels = tuple(record)
        if labels in self.dropped:
            drop = self.dropped[labels]
        else:
            drop = self._shape_dropped(labels)
        if shape is None:
            self.shape = (labels, drop)
        return drop

    def _shape_dropped(self, labels: tuple) -> tuple | None:
        """What ``_dropped`` tells of a record with these labels (remembered for SHAPES shapes)."""
        consumed = self.consumed
        dropped = tuple(k for k in labels if k in consumed or k[:2] == "<#")
        drop = None if len(dropped) == len(labels) else dropped
        if len(self.dropped) < self.SHAPES:
            self.dropped[labels] = drop
        return drop

    def fire(self) -> list:
        """Run an initialiser: no arguments, outputs carry only their own labels."""
        return self({})

    def _raised(self, error: BaseException, record: Record) -> SNetBoxError:
        """The box error for what the box raised; a Ctrl-C (KeyboardInterrupt in the main thread) is raised as is.

        Python delivers SIGINT to the main thread only, so a KeyboardInterrupt
        raised in any other thread (a FRONT worker, a session's thread) is the
        box's own doing: a box failure like any other, skipped under
        ``on_error="skip"``.
        """
        if isinstance(error, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise error
        detail = getattr(error, "__snet_traceback__", None)  # raised in a box process (processes.py)
        if detail is None:
            tb = error.__traceback__
            # Skip this module's frames, the timeout/retry stand-in's (snet.core.guard) and a split
            # process's box wrapper (snet.splitworker): the user wants the box's own frames.  (Compiled,
            # the frame names the .py source, not __file__, so the module is told by its globals.)
            while tb is not None and tb.tb_frame.f_globals.get("__name__") in (__name__, "snet.core.guard",
                                                                               "snet.core.chains",
                                                                               "snet.splitworker"):
                tb = tb.tb_next
            detail = "".join(traceback.format_exception(type(error), error, tb))
        # the attempts of a box given a timeout or retries (snet.core.guard), when there were several
        attempts = getattr(error, "__snet_attempts__", 1)
        tries = f" (the last of {attempts} attempts)" if attempts > 1 else ""
        if isinstance(error, BoxTimeout):
            return SNetBoxError(f"box '{self.name}' {error}{tries} (input record {describe(record)})", self.span, "")
        kind = getattr(error, "kind", None) if type(error).__name__ == "RemoteBoxException" else None
        return SNetBoxError(
            f"box '{self.name}' raised {kind or type(error).__name__}: {error}{tries} "
            f"(input record {describe(record)})", self.span, detail)

    def _lacks(self, label: str, record: Record) -> SNetBoxError:
        return SNetBoxError(f"box '{self.name}' cannot take record {describe(record)}: it lacks {label}", self.span)

    def _bad_variant(self, result: Mapping, record: Record) -> SNetBoxError:
        keys = "{" + ", ".join(sorted(map(str, result))) + "}"
        variants = " | ".join(format_labels(v) for v in self.declared) or "none"
        return SNetBoxError(
            f"box '{self.name}' emitted a record with labels {keys}, which fits none of its output "
            f"variants {variants} (input record {describe(record)})", self.span)

    def _not_records(self, result: Any, record: Record) -> SNetBoxError:
        return SNetBoxError(
            f"box '{self.name}' returned {type(result).__name__}, not None, a mapping or an iterable of "
            f"mappings (input record {describe(record)})", self.span)
