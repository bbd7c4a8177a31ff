"""Box files: the modules that hold box functions, found and imported (interfaces.md §2).

A box module is named on the command line (``--boxes``), given to the API
(``boxes=``), or found beside the network (``NET.py``).  A file is imported
under a name made from its path, the same in every process (a box process
or a Spark task loads it under its parent's name, so objects of its
classes pickle by reference both ways).  :mod:`snet.core.boxes` binds the
declared boxes to the functions found here.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import marshal
import os
import sys
import traceback
import zlib
from types import ModuleType
from typing import Any, Iterable, Mapping

from snet.errors import SNetBindingError, SNetError

BoxSpec = Any  # a module, a dotted name, a path to a .py file, a mapping name -> callable, or a list of these


def load_module_from_path(path: str) -> ModuleType:
    """Import a ``.py`` file as a module; its folder goes on ``sys.path`` so it can import siblings."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SNetBindingError(f"box module file not found: {path}")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stem = os.path.splitext(os.path.basename(path))[0]
    # the same name in every process (a box process loads the file under its parent's name, so objects of
    # its classes pickle by reference both ways), and two files of one name in two folders never collide
    name = f"snet_boxes_{stem}_{zlib.crc32(os.fsencode(path)):08x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path, loader=BoxFileLoader(name, path))
    if spec is None or spec.loader is None:
        raise SNetBindingError(f"cannot load box module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (SNetError, KeyboardInterrupt):
        del sys.modules[name]
        raise
    except BaseException as e:  # SystemExit too: a box module must not end the run with its own status
        del sys.modules[name]
        raise _import_failed(path, e) from e
    return module


class BoxFileLoader(importlib.machinery.SourceFileLoader):
    """Loads a box file as Python's own loader does, its code passed through ``marshal`` as a ``.pyc``'s is.

    On free-threaded CPython 3.13, code compiled from source in the running
    process keeps constants whose reference counts every call changes, so
    the calls of one box from several workers contend on them; code read
    from a ``.pyc`` does not.  Without a ``.pyc`` (``PYTHONDONTWRITEBYTECODE``,
    a read-only folder, a first run) a box function that does fixed work
    scaled 1.17× on two threads, against 2.05× for the same file read from its
    ``.pyc``; the round trip through ``marshal`` gives the latter in every case.
    """

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]
        return marshal.loads(marshal.dumps(super().source_to_code(data, path, _optimize=_optimize)))


def _import_failed(what: str, error: BaseException) -> SNetBindingError:
    detail = "".join(traceback.format_exception(error))
    return SNetBindingError(f"box module {what} failed to import: {type(error).__name__}: {error}\n{detail}")


def resolve_box_sources(specs: BoxSpec | None, net_path: str | None = None) -> list[Any]:
    """Turn box specifications into a list of namespaces (modules or mappings).

    Args:
        specs: what the user gave (``--boxes`` values or the ``boxes=`` argument).
        net_path: the ``.snet`` file; without specs, ``NET.py`` beside it is used if present.
    """
    if specs is None or (isinstance(specs, (list, tuple)) and not specs):
        if net_path is not None:
            candidate = os.path.splitext(net_path)[0] + ".py"
            if os.path.isfile(candidate):
                return [load_module_from_path(candidate)]
        return []
    if isinstance(specs, (str, ModuleType, Mapping)) or not isinstance(specs, Iterable):
        specs = [specs]
    namespaces: list[Any] = []
    for spec in specs:
        if isinstance(spec, str):
            namespaces.append(_module_named(spec))
        else:
            namespaces.append(spec)
    return namespaces


def _module_named(spec: str) -> ModuleType:
    """The module a ``--boxes`` text names: a ``.py`` path, else ``SPEC.py`` in the current folder, else an import.

    A plain name (no dot) prefers the file in the current folder to an
    installed module of the same name, as ``python3 -m`` would (its current
    folder comes first on ``sys.path``), whether ``snet`` runs as a console
    script or as ``python3 -m snet``.  A dotted name is only imported.
    """
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        return load_module_from_path(spec)
    local = spec + ".py"
    if "." not in spec and os.path.isfile(local):
        return load_module_from_path(local)
    try:
        return importlib.import_module(spec)
    except ImportError as e:
        tried = "" if "." in spec else f"no file {os.path.join(os.getcwd(), local)}, and "
        raise SNetBindingError(f"cannot find box module '{spec}': {tried}importing '{spec}' failed: {e}") from e
    except (SNetError, KeyboardInterrupt):
        raise
    except BaseException as e:
        raise _import_failed(f"'{spec}'", e) from e


__all__ = ["BoxFileLoader", "BoxSpec", "load_module_from_path", "resolve_box_sources"]
