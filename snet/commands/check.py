"""``snet check NET.snet``: parse, resolve and type-check; print the signature.

Output (standard output): the signature of the net to run, as
:meth:`snet.typesys.types.TypeChecker.signature_text` writes it, e.g.
``{a, c} -> {d}``.  With ``-v``, every net of the file instead, one per line
as ``name: signature`` in source order (nested nets included, after the net
that holds them), also when the file has several top-level nets and no
``--net`` chooses one.  Warnings go to standard error.  The declared boxes
are also bound, from ``--boxes`` or else from ``NET.py`` beside
``NET.snet`` as ``snet run`` binds them, so that missing boxes are reported
as ``snet run`` would report them; with no box module at all the program is
only type-checked.

Exit status: 0 when the program is correct (warnings allowed); errors are
raised as :class:`~snet.errors.SNetError` and mapped to 2 by the CLI.  With
``--strict``, every warning (the front end's and, with ``--boxes``, the
binding's) is reported as an error and the exit status is 2; the signature is
then not printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from snet.errors import EXIT_STARTUP, SNetBindingError, SNetOptionError, SNetUsageError
from snet.options import CompileOptions
from snet.source import render
from snet.warningsummary import summarise


def compile_options(args: argparse.Namespace) -> CompileOptions:
    """``--dialect`` and ``--net-path`` as :class:`CompileOptions`; errors name the command-line option."""
    dialect = getattr(args, "dialect", None) or "standard"
    net_path = tuple(getattr(args, "net_path", None) or ())
    if net_path and dialect != "rts":
        raise SNetUsageError("--net-path: binds declared-only nets of the rts dialect only; add --dialect rts")
    try:
        return CompileOptions(dialect=dialect, net_path=net_path)
    except SNetOptionError as e:
        raise e.relabelled("--" + e.option.replace("_", "-")) from None


def check_command(args: argparse.Namespace) -> int:
    from snet.spg.build import compile_analysis
    from snet.syntax.reading import read_program

    path = args.net_file
    if not os.path.isfile(path):
        raise SNetUsageError(f"network file not found: {path}")
    try:
        text = read_program(path)
    except OSError as e:
        raise SNetUsageError(f"cannot read {path}: {e}") from None
    verbose = getattr(args, "verbose", False)
    strict = getattr(args, "strict", False)
    analysis, graph = compile_analysis(text, path, getattr(args, "net", None), require_run=not verbose,
                                       options=compile_options(args))
    quiet = getattr(args, "quiet", False)
    rendered: Sequence[str]
    if strict:
        rendered = [render(w.span, "error", w.message) for w in analysis.warnings]
    else:
        # The graph holds the warnings already rendered; render them here only without a graph (-v).
        rendered = graph.warnings if graph is not None else [w.render() for w in analysis.warnings]
    for warning in () if quiet and not strict else summarise(rendered):
        print(warning, file=sys.stderr)
    failed = strict and bool(rendered)
    warnings = _bind(graph, args.boxes, path, quiet, strict) if graph is not None else []
    failed = failed or (strict and bool(warnings))
    if failed:
        count = len(rendered) + len(warnings)
        treated = "warning treated as an error" if count == 1 else "warnings treated as errors"
        print(f"{path}: {count} {treated} (--strict)", file=sys.stderr)
        return EXIT_STARTUP
    if verbose:
        for name, _depth, signature in analysis.net_signatures():
            print(f"{name}: {signature}")
    else:
        assert graph is not None, "require_run: a net was chosen, or compile_analysis raised"
        print(graph.signature)
    return 0


def _bind(graph, boxes: list[str] | None, path: str, quiet: bool, strict: bool) -> list[str]:
    """Bind the declared boxes as ``snet run`` would, when there is a box module to bind from; the warnings.

    The box modules are those of ``--boxes``, or else ``NET.py`` beside
    ``NET.snet`` (and ``X.py`` beside each linked ``X.snet``), so a box
    function missing from them is the error ``snet run`` would give.  With
    no box module at all the program is only type-checked.

    Raises:
        SNetBindingError: a declared box no module provides.
    """
    from snet.api import linked_box_sources
    from snet.core.boxes import bind_boxes
    from snet.inlinecode import with_inline_boxes

    sources = linked_box_sources(graph, boxes, path)
    if not boxes and not sources:
        return []
    warnings: list[str] = []

    def show_binding_warnings() -> None:
        for warning in () if quiet and not strict else summarise(warnings):
            if strict:
                warning = warning.replace(": warning: ", ": error: ", 1)
            print(warning, file=sys.stderr)

    try:
        bind_boxes(graph, with_inline_boxes(graph, sources), warnings)
    except SNetBindingError:
        show_binding_warnings()  # before the error they may explain
        raise
    show_binding_warnings()
    return warnings
