# cython: language_level=3
"""Node kinds and exit modes of the plan, as the runtime dispatches on them.

The single declaration of these numbers on the Cython side; ``snet.plan.Kind``
and ``snet.plan.Exit`` are the Python side, and tests/runtime/test_plan_kinds.py
fails when the two disagree (``snet_front.runtime.NODE_KINDS`` and
``EXIT_MODES`` expose these values to Python for that test).
"""

cdef enum:
    K_NET = 0
    K_SERIAL = 1
    K_IDENT = 2
    K_INITBOX = 3
    K_BOX = 4
    K_FILTER = 5
    K_SYNC = 6
    K_PAR = 7
    K_STAR = 8
    K_SYNCSTAR = 9
    K_SPLIT = 10
    K_FEEDBACK = 11
    K_EXECSPLIT = 12
    NKINDS = 13

# Where records leaving a node go.
cdef enum:
    X_NEXT = 0  # enter the next serial stage
    X_UP = 1  # leave the parent too
    X_POP = 2  # ask the innermost frame (the enclosing combinator instance)
    X_SINK = 3  # the network's output
