"""The compiled modules of a shipped snet zip, unpacked where Python can load them.

A Spark run ships the driver's snet to the executors as a zip on their
``sys.path`` (:func:`snet.spark.cluster.shipping.package_zip`).  Python imports pure
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
