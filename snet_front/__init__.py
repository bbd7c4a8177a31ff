"""The FRONT runtime in Cython: a lazy entity graph run by work-stealing workers.

Only :mod:`snet.backends.front` uses this package; see ``runtime.pyx`` for
the design and docs/runtime.md for the reasoning behind it.
"""

from snet_front.runtime import Runtime

__all__ = ["Runtime"]
