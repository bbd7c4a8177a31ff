"""What a run ships to the executors: the program, the boxes, the snet package.

The executors need three things the driver has:

* **the property graph** (frozen dataclasses: it pickles as is) and the id of
  the split whose replicas they run;
* **the box functions**.  A box module loaded from a ``.py`` path
  (``--boxes net.py`` or the ``net.snet`` -> ``net.py`` rule) is shipped as a
  file (``SparkContext.addPyFile`` / ``addArtifacts``) and loaded on the
  executor from its original path if that exists (``local[N]``, shared file
  systems) or else from the shipped copy.  Any other function is pickled with
  cloudpickle: by reference when its module is installed (stdlib,
  site-packages), by value otherwise (``__main__``, notebooks, test modules,
  closures), so user code that is not installed on the executors still runs;
* **the snet package itself**, as a zip of the driver's pure-Python package
  added with ``addPyFile``, so executors run exactly the driver's version
  even where the project is not installed.  The FRONT engine's compiled
  extension is not needed on executors: replicas run in the reference
  engine's machinery.  The zip also holds the pure-Python packages that
  machinery imports (``SHIPPED_PACKAGES``: attrs, for the run options and
  statistics).

:class:`RunContext` bundles the first two; it travels once per run
(a broadcast on classic Spark, the UDF closure on Spark Connect).
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable

from snet.spg.nodes import PropertyGraph

_PATH_LOADED_PREFIX = "snet_boxes_"  # module names given by snet.core.boxes.load_module_from_path


@dataclass(frozen=True, slots=True)
class BoxFile:
    """A box found as attribute ``attribute`` of a module loaded from ``path``."""

    path: str
    shipped_name: str  # the unique file name of the shipped copy
    attribute: str


@dataclass(slots=True)
class RunContext:
    graph: PropertyGraph
    split_node_id: int
    files: dict[str, BoxFile] = field(default_factory=dict)
    functions: dict[str, Callable] = field(default_factory=dict)
    skip_errors: bool = False  # on_error other than "stop": replicas skip failing records and report them

    def bind(self) -> dict[str, Callable]:
        """The box table on an executor."""
        from snet.core.boxes import load_module_from_path

        table = dict(self.functions)
        for name, entry in self.files.items():
            path = entry.path
            if not os.path.isfile(path):
                from pyspark import SparkFiles
                path = SparkFiles.get(entry.shipped_name)
            table[name] = getattr(load_module_from_path(path), entry.attribute)
        return table


def shipped_name(path: str) -> str:
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:10]
    return f"snetbox_{digest}_{os.path.basename(path)}"


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


def _pickle_by_value(module: ModuleType | None) -> bool:
    """True for user code that executors cannot be expected to import."""
    if module is None or module.__name__ == "__main__":
        return False  # cloudpickle already pickles __main__ by value
    top = module.__name__.split(".")[0]
    if top in ("snet", "pyspark", "builtins"):
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return False  # built-in or namespace module: by reference
    return not os.path.abspath(path).startswith(_installed_roots())


def make_context(graph: PropertyGraph, split_node_id: int, boxes: dict[str, Callable],
                 skip_errors: bool = False) -> RunContext:
    """Decide, per box used by the graph, how it travels."""
    context = RunContext(graph, split_node_id, skip_errors=skip_errors)
    for name in sorted(graph.used_boxes()):
        function = boxes[name]
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        path = getattr(module, "__file__", None)
        if module is not None and module.__name__.startswith(_PATH_LOADED_PREFIX) and path:
            attribute = name if getattr(module, name, None) is function else getattr(function, "__name__", "")
            if getattr(module, attribute, None) is function:
                context.files[name] = BoxFile(os.path.abspath(path), shipped_name(path), attribute)
                continue
        context.functions[name] = function
    return context


def dump_context(context: RunContext) -> bytes:
    """cloudpickle the context, user modules by value (see the module docstring)."""
    from pyspark import cloudpickle

    modules = []
    for function in context.functions.values():
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        if _pickle_by_value(module) and module not in modules:
            modules.append(module)
    registered = []
    try:
        for module in modules:
            try:
                cloudpickle.register_pickle_by_value(module)
                registered.append(module)
            except ValueError:
                pass
        return cloudpickle.dumps(context, protocol=5)
    finally:
        for module in registered:
            cloudpickle.unregister_pickle_by_value(module)


_ZIP: str | None = None
SHIPPED_PACKAGES = ("snet", "attr", "attrs")  # snet and the pure-Python packages the executors import from it


def package_zip() -> str:
    """A zip of the driver's snet package and ``SHIPPED_PACKAGES`` (pure Python), built once per process."""
    global _ZIP
    if _ZIP is not None and os.path.isfile(_ZIP):
        return _ZIP
    import importlib

    folder = tempfile.mkdtemp(prefix="snet-spark-")
    target = os.path.join(folder, "snet.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for package in SHIPPED_PACKAGES:
            root = os.path.dirname(os.path.abspath(importlib.import_module(package).__file__))
            for directory, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in files:
                    if name.endswith((".py", ".lark")):
                        full = os.path.join(directory, name)
                        z.write(full, os.path.join(package, os.path.relpath(full, root)))
    _ZIP = target
    return target
