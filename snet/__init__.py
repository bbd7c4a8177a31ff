"""S-Net: declarative coordination of Python box functions.

The public surface is small on purpose: load a network, run it, or keep a
session open; everything else is reached through the ``snet`` command.

    import snet
    net = snet.load("net.snet", boxes=my_module)
    for out in net.run(records, workers=4):
        ...
"""

from snet._version import __version__
from snet.errors import (SNetBindingError, SNetBoxError, SNetCompileError, SNetError, SNetRecordError,
                         SNetRuntimeError, SNetUsageError)

__all__ = ["__version__", "load", "Network", "Session", "SNetError", "SNetCompileError", "SNetBindingError",
           "SNetRuntimeError", "SNetBoxError", "SNetRecordError", "SNetUsageError"]


def __getattr__(name):
    # The API pulls in the front end and the engines; import it on first use
    # so that `import snet` stays cheap (the CLI and engines import submodules).
    if name in ("load", "Network", "Session"):
        from snet import api
        return getattr(api, name)
    raise AttributeError(f"module 'snet' has no attribute {name!r}")
