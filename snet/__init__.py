"""S-Net: declarative coordination of Python box functions.

The public surface is small on purpose: load a network, run it, or keep a
session open; everything else is reached through the ``snet`` command.

    import snet
    net = snet.load("net.snet", boxes=my_module)
    for out in net.run(records, workers=4):
        ...
"""

import sys as _sys
from typing import TYPE_CHECKING

from snet import shipped_native as _shipped_native

_shipped_native.activate(_sys.modules[__name__])  # imported from a shipped zip: its compiled modules, if usable

from snet._version import __version__  # noqa: E402

if TYPE_CHECKING:  # what type checkers see; at run time these load on first use (below)
    from snet.aio import AsyncSession
    from snet.api import Network, Session, load
    from snet.errors import (SNetBindingError, SNetBoxError, SNetCompileError, SNetError, SNetInterrupted,
                             SNetNotDistributable, SNetOptionError, SNetRecordError, SNetRuntimeError,
                             SNetSyntaxError, SNetUsageError)
    from snet.execution import Execution
    from snet.options import CompileOptions, RunOptions
    from snet.spg.nodes import PropertyGraph
    from snet.stats import BoxStats, RunStats, SparkStats

# Every public name, and the module it is loaded from on first use.
_HOMES = {
    "load": "snet.api", "Network": "snet.api", "Session": "snet.api", "AsyncSession": "snet.aio",
    "Execution": "snet.execution", "RunStats": "snet.stats", "BoxStats": "snet.stats", "SparkStats": "snet.stats",
    "RunOptions": "snet.options", "CompileOptions": "snet.options", "PropertyGraph": "snet.spg.nodes",
    **{name: "snet.errors" for name in (
        "SNetError", "SNetCompileError", "SNetSyntaxError", "SNetBindingError", "SNetRuntimeError", "SNetBoxError",
        "SNetRecordError", "SNetInterrupted", "SNetUsageError", "SNetOptionError", "SNetNotDistributable")},
}

# Written out, not computed, so that type checkers see what is exported.
__all__ = ["__version__", "load", "Network", "Session", "AsyncSession", "Execution", "RunStats", "BoxStats",
           "SparkStats", "RunOptions", "CompileOptions", "PropertyGraph", "SNetError", "SNetCompileError",
           "SNetSyntaxError", "SNetBindingError", "SNetRuntimeError", "SNetBoxError", "SNetRecordError",
           "SNetInterrupted", "SNetUsageError", "SNetOptionError", "SNetNotDistributable"]


def __getattr__(name):
    # The API pulls in the front end and the engines; import it on first use
    # so that `import snet` stays cheap (the CLI and engines import
    # submodules) and the `snet` command can guard its own imports against
    # Ctrl-C (snet/__main__.py).
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'snet' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(home), name)


def __dir__():
    return sorted({*globals(), *__all__})
