"""Builds the counting allocator (counting.c) with the C compiler and headers of the running CPython.

Used by tests/runtime/test_allocations.py and bench/allocations.py; the
library is then loaded by ``measure.py`` in a process of its own.
"""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "counting.c"


def build(folder: Path) -> Path:
    """``counting.so`` built into ``folder``; its path."""
    lib = Path(folder) / "counting.so"
    cc = sysconfig.get_config_var("CC") or "cc"
    subprocess.run([*cc.split(), "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(SOURCE), "-o", str(lib)], check=True)
    return lib
