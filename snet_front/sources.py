"""The digest of the sources the compiled modules are built from.

``setup.py`` builds it into the runtime (``snet_front.runtime.SOURCES_DIGEST``)
and the test suite compares it with the sources on disk before any test runs:
a ``.pxi`` edited without a rebuild would otherwise be tested as the old
compiled module, silently.  This file imports nothing of snet, so that
``setup.py`` can load it before anything is built.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: The sources of ``snet_front.runtime`` and of the compiled parts of ``snet.core`` (the box caller, the
#: synchro-cells), relative to the tree's root.
PATTERNS = ("snet_front/*.pyx", "snet_front/*.pxi", "snet_front/*.pxd", "snet_front/includes/*.h",
            "snet/core/boxes.py", "snet/core/boxes.pxd", "snet/core/cells.py", "snet/core/cells.pxd")


def sources_digest(root: str | Path) -> str:
    """A SHA-256 over the names and contents of the compiled modules' sources under `root`."""
    root = Path(root)
    digest = hashlib.sha256()
    for path in sorted({p for pattern in PATTERNS for p in root.glob(pattern)}):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
