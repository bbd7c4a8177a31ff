"""The exceptions of snet and the exit status each one maps to.

The command line turns every :class:`SNetError` into a message on standard
error and its :attr:`SNetError.exit_status` (interfaces.md §1): 2 when the
program never started, 1 for a failure at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from snet.source import Span, render

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_STARTUP = 2


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One positioned error or warning about a `.snet` file."""

    severity: str  # "error" or "warning"
    span: Span | None
    message: str

    def render(self) -> str:
        return render(self.span, self.severity, self.message)


class SNetError(Exception):
    """Base of every error snet reports to a user."""

    exit_status = EXIT_RUNTIME


class SNetCompileError(SNetError):
    """The program has errors (syntax, names, types); it never starts.

    Carries every error found, not only the first, and the warnings seen on
    the way.
    """

    exit_status = EXIT_STARTUP

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        super().__init__("\n".join(d.render() for d in errors or self.diagnostics))


class SNetSyntaxError(SNetCompileError):
    """A lexical or syntax error in a `.snet` file."""


class SNetUsageError(SNetError):
    """Bad command line, unreadable file, unknown net: exit 2."""

    exit_status = EXIT_STARTUP


class SNetNotDistributable(SNetUsageError):
    """The network keeps state that cannot be partitioned over Spark tasks (docs/spark.md): exit 2.

    ``span`` is the position of the construct that holds the state.
    """

    def __init__(self, message: str, span: Span | None = None):
        self.message = message
        self.span = span
        super().__init__(f"{span.location}: error: {message}" if span is not None else f"error: {message}")


class SNetOptionError(SNetUsageError):
    """A run option out of its range (see :mod:`snet.options`): exit 2.

    The message is the option's label followed by ``rest``; :attr:`option`
    is the option's name in the API, so that a caller that spells it
    differently (the command line: ``-w/--workers``) can relabel it.
    """

    def __init__(self, option: str, rest: str, label: str | None = None):
        self.option = option
        self.rest = rest
        super().__init__((label or option) + rest)

    def relabelled(self, label: str) -> "SNetOptionError":
        """The same error, naming the option as ``label``."""
        return SNetOptionError(self.option, self.rest, label)


class SNetBindingError(SNetError):
    """Declared boxes that no box module provides, or that cannot take their inputs."""

    exit_status = EXIT_STARTUP


class SNetRuntimeError(SNetError):
    """A failure while the network runs (language.md §10): exit 1.

    Args:
        message: what went wrong, naming the construct and the labels.
        span: the construct's position in the source, if known.
    """

    exit_status = EXIT_RUNTIME

    def __init__(self, message: str, span: Span | None = None, detail: str = ""):
        self.message = message
        self.span = span
        self.detail = detail  # e.g. a box's traceback, printed after the first line
        super().__init__(message)

    def render(self) -> str:
        first = render(span=None, severity="error", message=self.message)
        if self.span is not None:
            first = f"{self.span.location}: error: {self.message}"
        return first + ("\n" + self.detail.rstrip() if self.detail else "")

    def __str__(self) -> str:
        return self.render()


class SNetBoxError(SNetRuntimeError):
    """A box function raised, or returned something that fits no output variant."""


class SNetRecordError(SNetRuntimeError):
    """A malformed input record: names the file, the line and the problem."""


class SNetInterrupted(SNetRuntimeError):
    """The run was interrupted (Ctrl-C)."""
