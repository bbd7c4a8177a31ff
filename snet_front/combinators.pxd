# cython: language_level=3
"""What the workers and the runtime use of the combinators module (see combinators.pyx)."""

from snet_front.core cimport Network, Writer, Ctx, GStack

cdef int fire(Network rt, Writer w, int n, Ctx ctx, GStack st) except -1
cdef bint executor_due(Network rt)
cdef bint flush_executor(Network rt, Writer w) except -1
