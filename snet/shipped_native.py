"""The compiled modules of a shipped snet zip, unpacked where Python can load them.

A Spark run ships the driver's snet to the executors as a zip on their
``sys.path`` (:func:`package_zip`, the end of this module).  Python imports pure
modules from a zip but not extension modules, so the zip also holds the
driver's compiled modules (``snet/core/boxes`` and ``snet_front``, with the
driver's extension suffix, e.g. ``.cpython-311-x86_64-linux-gnu.so``) and a
manifest (:data:`MANIFEST`: the suffix, the compiled members, a digest of
the whole zip).

When ``snet`` itself is imported from such a zip (``snet/__init__.py``
calls :func:`activate`), and this interpreter loads modules with the
driver's suffix (same Python version, ABI and platform), the zip is
extracted once into a folder named by the digest beside the zip (Spark's
folder of added files; a temporary folder where that is not writable), and
that folder takes over: ``snet.__path__`` points into it and it comes first
on ``sys.path``, so every snet module after ``snet/__init__`` -- the
compiled box caller and FRONT included -- is the driver's, loaded from the
file system.  Two Python workers of one executor may get there at once:
each extracts into a folder of its own and renames it into place; the
first rename wins and the others use its folder.

Otherwise (another Python, another platform, a zip without compiled
modules) nothing is extracted: the executor runs the zip's pure-Python
modules, as correct and slower, and with a compiled zip says so once on
its standard error (the task log).

Only the standard library is used here: this runs inside ``import snet``.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
import uuid
import zipfile
import zipimport

MANIFEST = "snet/_shipped_native.json"  # inside the zip
NATIVE_FOLDERS = ("snet/core/", "snet_front/")  # where the compiled modules of the zip live

# what activate() did in this process: None (snet not from a shipped zip), "extracted", "pure-python"
state: dict = {"mode": None, "folder": None, "note": None}


def usable(manifest: dict, suffixes: list[str] | None = None) -> list[str]:
    """The compiled members of ``manifest`` this interpreter can load (``suffixes``: its extension
    suffixes, ``importlib.machinery.EXTENSION_SUFFIXES`` by default); none when the driver's suffix is
    not one of them."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES if suffixes is None else suffixes
    suffix = manifest.get("suffix") or ""
    if not suffix or suffix not in suffixes:
        return []
    return [m for m in manifest.get("native", ()) if m.endswith(suffix) and m.startswith(NATIVE_FOLDERS)]


def extract(archive: str, digest: str, parent: str | None = None) -> str:
    """The folder holding the contents of ``archive``, extracted once per ``digest`` under ``parent``
    (the archive's folder, else the temporary folder); safe against concurrent extractions."""
    parents = [parent] if parent else [os.path.dirname(os.path.abspath(archive)), tempfile.gettempdir()]
    last_error: OSError | None = None
    for where in parents:
        target = os.path.join(where, f"snet-native-{digest[:20]}")
        if os.path.isdir(target):
            return target  # only ever made by the rename below: complete
        partial = f"{target}.part-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            with zipfile.ZipFile(archive) as z:
                z.extractall(partial)
            try:
                os.rename(partial, target)
            except OSError:
                if not os.path.isdir(target):
                    raise
                shutil.rmtree(partial, ignore_errors=True)  # another worker's rename came first
            return target
        except OSError as e:
            shutil.rmtree(partial, ignore_errors=True)
            last_error = e
    raise last_error  # type: ignore[misc]


def manifest_of(archive: str) -> dict | None:
    try:
        with zipfile.ZipFile(archive) as z:
            return json.loads(z.read(MANIFEST))
    except (KeyError, OSError, ValueError, zipfile.BadZipFile):
        return None


def activate(package) -> None:
    """Called by ``snet/__init__.py`` with the ``snet`` module; acts only when it came from a zip."""
    loader = getattr(getattr(package, "__spec__", None), "loader", None)
    archive = getattr(loader, "archive", None)
    if archive is None or not isinstance(loader, zipimport.zipimporter):
        return
    manifest = manifest_of(archive)
    if manifest is None or not manifest.get("native"):
        state["mode"] = "pure-python"
        return
    if not usable(manifest):
        note(f"snet: the shipped compiled modules are for '{manifest.get('suffix')}', which this Python "
             f"({sys.version.split()[0]}, '{importlib.machinery.EXTENSION_SUFFIXES[0]}') cannot load: "
             f"running snet's pure-Python modules")
        state["mode"] = "pure-python"
        return
    try:
        folder = extract(archive, manifest["digest"])
    except OSError as e:
        note(f"snet: cannot extract the shipped compiled modules ({e}): running snet's pure-Python modules")
        state["mode"] = "pure-python"
        return
    package.__path__[:] = [os.path.join(folder, "snet")]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.invalidate_caches()
    state.update(mode="extracted", folder=folder)


def note(text: str) -> None:
    state["note"] = text
    print(text, file=sys.stderr, flush=True)


# -- on the driver: the zip made ------------------------------------------------

_ZIP: str | None = None
SHIPPED_PACKAGES = ("snet", "attr", "attrs")  # snet and the pure-Python packages the executors import from it
NATIVE_PACKAGES = ("snet_front",)  # shipped only with its compiled modules (FRONT in tasks)


def native_suffix() -> str | None:
    """The extension suffix of the driver's compiled box caller (``.cpython-311-x86_64-linux-gnu.so``),
    None when the driver runs the pure-Python one or the suffix names no interpreter (``.so``, ``.abi3.so``)."""
    from snet.core import boxes

    path = getattr(boxes, "__file__", "") or ""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return suffix if path.endswith(suffix) and ".cpython-" in suffix else None


def _package_files(package: str, suffix: str | None) -> list[tuple[str, str]]:
    """``(path, member)`` of ``package``'s sources, package data and (with ``suffix``) compiled modules."""
    import importlib

    module = importlib.import_module(package)
    # a package's folder; snet's is its extracted folder where it came from a shipped zip
    folders = list(getattr(module, "__path__", []))
    if folders:
        root = os.path.abspath(folders[0])
    elif module.__file__ is not None:
        root = os.path.dirname(os.path.abspath(module.__file__))
    else:
        raise RuntimeError(f"cannot ship {package} to the executors: it has no folder or file")
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".lark")) or (suffix and name.endswith(suffix)):
                full = os.path.join(directory, name)
                found.append((full, os.path.join(package, os.path.relpath(full, root)).replace(os.sep, "/")))
    return found


def package_zip() -> str:
    """A zip of the driver's snet package and ``SHIPPED_PACKAGES``, built once per process.

    Where the driver runs the compiled box caller, the zip also holds the
    compiled modules of ``snet/core`` and ``snet_front`` of the driver's
    extension suffix and a manifest: executors of the same Python and
    platform extract the zip once and run them (:mod:`snet.shipped_native`),
    others run the pure-Python modules.
    """
    global _ZIP
    if _ZIP is not None and os.path.isfile(_ZIP):
        return _ZIP
    import hashlib
    import importlib.util

    suffix = native_suffix()
    members = [entry for package in SHIPPED_PACKAGES for entry in _package_files(package, suffix)]
    if suffix is not None:
        for package in NATIVE_PACKAGES:
            if importlib.util.find_spec(package) is not None:
                members += _package_files(package, suffix)
    native = [m for _, m in members if suffix and m.endswith(suffix) and m.startswith(NATIVE_FOLDERS)]
    digest = hashlib.sha256()
    folder = tempfile.mkdtemp(prefix="snet-spark-")
    target = os.path.join(folder, "snet.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for full, member in members:
            with open(full, "rb") as f:
                data = f.read()
            digest.update(f"{member}\0{len(data)}\0".encode())
            digest.update(data)
            z.writestr(member, data)
        if native:
            z.writestr(MANIFEST, json.dumps({"suffix": suffix, "native": native, "digest": digest.hexdigest()}))
    _ZIP = target
    return target
