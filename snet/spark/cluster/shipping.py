"""What a run ships to the executors: the program, the boxes, the snet package.

:class:`RunContext` holds the graph and how each box travels: a box module
loaded from a path with its folder's zip (:func:`folder_zip`,
:func:`load_shipped_module`), any other function by cloudpickle (by value
when its module is not installed).  :func:`ship` adds the zips and the snet
package's (:func:`snet.shipped_native.package_zip`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable

from snet.spg.nodes import PropertyGraph

_PATH_LOADED_PREFIX = "snet_boxes_"  # module names given by snet.core.boxes.load_module_from_path


@dataclass(frozen=True, slots=True)
class BoxFile:
    """A box found as attribute ``attribute`` of a module loaded from ``path``; ``shipped_name`` is the zip of
    the module's folder (:func:`folder_zip`), ``member`` the module's path inside it."""

    path: str
    shipped_name: str
    attribute: str
    member: str = ""
    module_name: str = ""  # the driver's name of the module: objects of its classes unpickle on both sides


@dataclass(slots=True)
class RunContext:
    graph: PropertyGraph
    split_node_id: int
    files: dict[str, BoxFile] = field(default_factory=dict)
    functions: dict[str, Callable] = field(default_factory=dict)
    skip_errors: bool = False  # on_error other than "stop": replicas skip failing records and report them
    shipped_only: bool = False  # load box files from the shipped zips even where the driver's path exists
    guards: dict = field(default_factory=dict)  # the boxes' timeouts and retries (snet.core.guard.Guard by name)

    def bind(self) -> dict[str, Callable]:
        """The box table on an executor."""
        from snet.core.boxes import load_module_from_path

        table = dict(self.functions)
        for name, entry in self.files.items():
            if not self.shipped_only and os.path.isfile(entry.path):
                module = load_module_from_path(entry.path)  # local[N], a shared file system: the file itself
            else:
                module = load_shipped_module(entry)
            table[name] = getattr(module, entry.attribute)
        return table


MAX_FOLDER_BYTES = 64 << 20  # a box folder bigger than this is shipped all the same, with a warning


def folder_files(folder: str) -> list[str]:
    """What Python can import from ``folder``: its ``.py`` files, and its packages (folders with
    ``__init__.py``) recursively; relative paths, sorted."""
    found = []
    for directory, dirs, files in os.walk(folder):
        relative = os.path.relpath(directory, folder)
        if relative != "." and not os.path.isfile(os.path.join(directory, "__init__.py")):
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                found.append(os.path.normpath(os.path.join(relative, name)))
    return found


def shipped_name(path: str) -> str:
    """The zip name of the folder of box file ``path``: unique per folder and per content."""
    folder = os.path.dirname(os.path.abspath(path))
    digest = hashlib.sha1(folder.encode())
    for relative in folder_files(folder):
        info = os.stat(os.path.join(folder, relative))
        digest.update(f"{relative}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return f"snetboxes_{digest.hexdigest()[:12]}_{os.path.basename(folder) or 'root'}.zip"


def folder_zip(path: str, target_folder: str) -> str:
    """Zip the folder of box file ``path`` (see :func:`folder_files`) into ``target_folder``; the zip's path.
    On the executors' ``sys.path``, it lets the box's sibling modules import there as on the driver."""
    import logging

    folder = os.path.dirname(os.path.abspath(path))
    target = os.path.join(target_folder, shipped_name(path))
    total = 0
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for relative in folder_files(folder):
            full = os.path.join(folder, relative)
            total += os.path.getsize(full)
            z.write(full, relative.replace(os.sep, "/"))
    if total > MAX_FOLDER_BYTES:
        logging.getLogger("snet.spark").warning(
            "the box folder %s holds %d MB of Python files, all shipped to every executor; a folder of its own "
            "for the box module ships less", folder, total >> 20)
    return target


def load_shipped_module(entry: BoxFile) -> ModuleType:
    """The box module of ``entry`` on an executor, from the shipped zip of its folder, under the driver's name
    for it (so that pickled references to it resolve)."""
    import importlib.machinery
    import importlib.util

    from snet.core.boxes import load_module_from_path

    name = entry.module_name
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        from pyspark import SparkFiles
        archive = SparkFiles.get(entry.shipped_name)
    except Exception:  # not in a Spark task: the driver's own file
        archive = None
    if archive is None or not os.path.isfile(archive):
        return load_module_from_path(entry.path)
    if archive not in sys.path:
        sys.path.insert(0, archive)
    with zipfile.ZipFile(archive) as z:
        source = z.read(entry.member)
    origin = f"{archive}/{entry.member}"
    spec = importlib.machinery.ModuleSpec(name, None, origin=origin)  # no loader: the source is run below
    module = importlib.util.module_from_spec(spec)
    module.__file__ = origin
    sys.modules[name] = module
    try:
        exec(compile(source, origin, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module



def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


def _pickle_by_value(module: ModuleType) -> bool:
    """True for user code that executors cannot be expected to import."""
    if module.__name__ == "__main__":
        return False  # cloudpickle already pickles __main__ by value
    top = module.__name__.split(".")[0]
    if top in ("snet", "pyspark", "builtins"):
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return False  # built-in or namespace module: by reference
    return not os.path.abspath(path).startswith(_installed_roots())


def shipped_only(setting: str | None) -> bool:
    """The ``snet.boxes`` setting (``auto``, the default, or ``shipped``) as ``RunContext.shipped_only``."""
    from snet.errors import SNetUsageError

    if setting in (None, "auto", "shipped"):
        return setting == "shipped"
    raise SNetUsageError(f"snet.boxes must be 'auto' (the box file where it exists, else the shipped zip) "
                         f"or 'shipped', not '{setting}'")


def make_context(graph: PropertyGraph, split_node_id: int, boxes: dict[str, Callable], skip_errors: bool = False,
                 shipped_only: bool = False, guards: dict | None = None) -> RunContext:
    """Decide, per box used by the graph, how it travels."""
    context = RunContext(graph, split_node_id, skip_errors=skip_errors, shipped_only=shipped_only, guards=guards or {})
    for name in sorted(graph.used_boxes()):
        function = boxes[name]
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        path = getattr(module, "__file__", None)
        if module is not None and module.__name__.startswith(_PATH_LOADED_PREFIX) and path:
            attribute = name if getattr(module, name, None) is function else getattr(function, "__name__", "")
            if getattr(module, attribute, None) is function:
                context.files[name] = BoxFile(os.path.abspath(path), shipped_name(path), attribute,
                                              os.path.basename(path), module.__name__)
                continue
        context.functions[name] = function
    return context


def dump_context(context: RunContext) -> bytes:
    """cloudpickle the context, user modules by value (see the module docstring)."""
    from pyspark import cloudpickle

    modules = []
    for function in context.functions.values():
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        if module is not None and _pickle_by_value(module) and module not in modules:
            modules.append(module)
    registered = []
    try:
        already = set(getattr(cloudpickle, "list_registry_pickle_by_value", lambda: ())())
        for module in modules:
            if module.__name__ in already:
                continue  # registered by the caller: leave it registered
            with contextlib.suppress(ValueError):  # (a module it cannot take goes by reference)
                cloudpickle.register_pickle_by_value(module)
                registered.append(module)
        return cloudpickle.dumps(context, protocol=5)
    finally:
        for module in registered:
            cloudpickle.unregister_pickle_by_value(module)


_SHIPPED: dict[int, set[str]] = {}  # id(SparkContext or session) -> files already added
_SHIP_LOCK = threading.Lock()


def ship(session, context: RunContext, connect: bool) -> None:
    """Add the snet package zip and the zips of the box files' folders to ``session``, once per session."""
    from snet.shipped_native import package_zip

    with _SHIP_LOCK:
        owner = session.sparkContext if not connect else session
        done = _SHIPPED.setdefault(id(owner), set())
        # a folder is zipped once per session and content (its name says which: shipped_name)
        names = {entry.shipped_name: entry.path for entry in context.files.values()
                 if entry.shipped_name not in done}
        folder = tempfile.mkdtemp(prefix="snet-boxes-") if names else ""
        for path in [package_zip()] + [folder_zip(path, folder) for path in names.values()]:
            if (name := os.path.basename(path)) in done:
                continue
            if connect:
                session.addArtifacts(path, pyfile=True)
            else:
                session.sparkContext.addPyFile(path)
            done.add(name)


def shipped_context(session, graph: PropertyGraph, split_node_id: int, boxes: dict[str, Callable],
                    skip_errors: bool = False, shipped_only: bool = False, guards: dict | None = None) -> bytes:
    """The run's context (:func:`make_context`), what it needs added to ``session`` (:func:`ship`), as the
    bytes its tasks unpickle."""
    from snet.spark.cluster.session import is_connect_session

    context = make_context(graph, split_node_id, boxes, skip_errors, shipped_only, guards)
    ship(session, context, is_connect_session(session))
    return dump_context(context)
