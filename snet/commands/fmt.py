"""``snet fmt [--check | --diff] FILE.snet...``: rewrite programs in the canonical layout.

Every file is read and formatted (:func:`snet.syntax.formatter.format_text`)
before any is written: if one does not parse (or is nested too deeply to
print), its positioned error is printed, nothing is written, and the exit
status is 2.  A folder stands for the ``.snet`` files under it.

* Without an option, each file whose text changes is replaced atomically
  (a temporary file in the same folder, given the file's mode, renamed over
  it), so an interrupted run leaves each file either old or new.
* ``--check`` writes nothing, prints a unified diff of each file that would
  change (and its name on standard error) and exits with 1 if any would
  (0 if none).
* ``--diff`` writes nothing and prints the diffs; the exit status is 0.

A summary line goes to standard error: how many files were (or would be)
reformatted and how many were left unchanged.  ``snet fmt -`` reads the
program from standard input and writes it formatted to standard output
(with ``--check`` or ``--diff``, the diff instead), for editors that format
through a command.
"""

from __future__ import annotations

import argparse
import difflib
import os
import stat
import sys
import tempfile
from pathlib import Path

from snet.errors import SNetCompileError, SNetUsageError
from snet.syntax.reading import read_program

EXIT_WOULD_CHANGE = 1


def fmt_command(args: argparse.Namespace) -> int:
    from snet.syntax.formatter import format_text

    if "-" in args.files:
        return _standard_streams(args)
    paths = expand(args.files)
    texts = [(path, read(path)) for path in paths]
    results: list[tuple[str, str, str]] = []
    failed = 0
    for path, old in texts:
        try:
            results.append((path, old, format_text(old, path, dialect=args.dialect)))
        except SNetCompileError as error:
            failed += 1
            for d in error.diagnostics:
                print(d.render(), file=sys.stderr)
    if failed:
        print(f"error: nothing written: {failed} of {_files(len(paths))} "
              f"{'does' if failed == 1 else 'do'} not parse", file=sys.stderr)
        return 2
    changed = [(path, old, new) for path, old, new in results if new != old]
    if args.check or args.diff:
        for path, old, new in changed:
            write_diff(path, old, new)
        if args.check:
            for path, _, _ in changed:
                print(f"would reformat {path}", file=sys.stderr)
    else:
        for path, _, new in changed:
            write_atomically(path, new)
    verb = "would be reformatted" if args.check or args.diff else "reformatted"
    print(f"{_files(len(changed))} {verb}, {_files(len(results) - len(changed))} left unchanged", file=sys.stderr)
    return EXIT_WOULD_CHANGE if args.check and changed else 0


def _standard_streams(args: argparse.Namespace) -> int:
    """``snet fmt -``: the program on standard input, formatted on standard output (a diff with an option)."""
    from snet.syntax.formatter import format_text

    if args.files != ["-"]:
        raise SNetUsageError("'-' (standard input) cannot be given with files")
    old = sys.stdin.read()
    try:
        new = format_text(old, "<stdin>", dialect=args.dialect)
    except SNetCompileError as error:
        for d in error.diagnostics:
            print(d.render(), file=sys.stderr)
        return 2
    if args.check or args.diff:
        if new != old:
            write_diff("<stdin>", old, new)
        return EXIT_WOULD_CHANGE if args.check and new != old else 0
    sys.stdout.write(new)
    return 0


def write_diff(path: str, old: str, new: str) -> None:
    """A unified diff from `old` to `new` on standard output."""
    for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     path, f"{path} (formatted)"):
        sys.stdout.write(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")


def _files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def expand(names: list[str]) -> list[str]:
    """The files to format: each name, or the ``.snet`` files under a folder."""
    paths: list[str] = []
    for name in names:
        if os.path.isdir(name):
            paths.extend(str(p) for p in sorted(Path(name).rglob("*.snet")) if p.is_file())
        elif os.path.isfile(name):
            paths.append(name)
        else:
            raise SNetUsageError(f"network file not found: {name}")
    return paths


def read(path: str) -> str:
    """The file's text as written (line ends kept); invalid UTF-8 is a positioned error."""
    try:
        return read_program(path)
    except OSError as e:
        raise SNetUsageError(f"cannot read {path}: {e.strerror or e}") from None


def write_atomically(path: str, text: str) -> None:
    """Replace the file at `path` (a link's target) by `text`, keeping its mode."""
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with_suppressed_unlink(temporary)
        raise


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
