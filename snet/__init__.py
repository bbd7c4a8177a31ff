"""S-Net: declarative coordination of Python box functions.

The public surface is small on purpose: load a network, run it, or keep a
session open; everything else is reached through the ``snet`` command.
"""

from snet._version import __version__

__all__ = ["__version__"]
