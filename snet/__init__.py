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
    from snet.api import Network, Session, load
    from snet.errors import (SNetBindingError, SNetBoxError, SNetCompileError, SNetError, SNetRecordError,
                             SNetNotDistributable, SNetRuntimeError, SNetUsageError)

__all__ = ["__version__", "load", "Network", "Session", "SNetError", "SNetCompileError", "SNetBindingError",
           "SNetRuntimeError", "SNetBoxError", "SNetRecordError", "SNetUsageError",
           "SNetNotDistributable"]


def __getattr__(name):
    # The API pulls in the front end and the engines; import it on first use
    # so that `import snet` stays cheap (the CLI and engines import
    # submodules) and the `snet` command can guard its own imports against
    # Ctrl-C (snet/__main__.py).
    if name in ("load", "Network", "Session"):
        from snet import api
        return getattr(api, name)
    if name.startswith("SNet") and name in __all__:
        from snet import errors
        return getattr(errors, name)
    raise AttributeError(f"module 'snet' has no attribute {name!r}")
