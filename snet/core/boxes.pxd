# Declarations that let Cython compile snet/core/boxes.py (pure Python source)
# with BoxCaller as an extension type: attribute reads on the hot path are
# struct reads, not dictionary look-ups, and the hot path's methods are C
# calls (``hop`` is also the C-level entry of the FRONT box entity).  The .py
# file stays valid Python and runs uncompiled where no build has been made.

cimport cython


cdef class BoxCaller:
    cdef readonly str name
    cdef readonly object function
    cdef readonly tuple arguments
    cdef readonly frozenset consumed
    cdef readonly dict variants
    cdef readonly tuple declared
    cdef readonly object span
    cdef readonly bint initialiser
    cdef object take
    cdef tuple kwnames
    cdef object kwtake
    cdef object label
    cdef tuple pair
    cdef Py_ssize_t arity
    cdef tuple vlabels
    cdef tuple vtags
    cdef dict results
    cdef dict dropped
    cdef tuple shape
    cdef public bint defer

    cpdef object hop(self, object record, int mode=*)
    cdef object _call(self, dict record)
    @cython.locals(outputs=list)
    cdef object _settle(self, object result, dict record, int mode)
    cdef object _finish(self, object result, dict record)
    @cython.locals(vlabels=tuple, vtags=tuple, labels=tuple, tags=tuple, i=Py_ssize_t, n=Py_ssize_t, drop=tuple, out=dict)
    cdef dict _output(self, dict res, dict record, int mode=*)
    @cython.locals(shape=tuple, labels=tuple, i=Py_ssize_t, drop=tuple)
    cdef tuple _dropped(self, dict record)


@cython.locals(out=list, n=Py_ssize_t, i=Py_ssize_t, caller=BoxCaller)
cpdef list chain_outputs(tuple callers, list records)
@cython.locals(n=Py_ssize_t, i=Py_ssize_t, caller=BoxCaller)
cdef void _chain_rest(tuple callers, Py_ssize_t start, list records, list out) except *
@cython.locals(k=str, binding=bint, passes=bint, passed=dict)
cpdef dict filter_output(dict record, frozenset pattern, tuple labels, dict out)
