# Declarations that let Cython compile snet/core/boxes.py (pure Python source)
# with BoxCaller as an extension type: attribute reads on the hot path are
# struct reads, not dictionary look-ups.  The .py file stays valid Python and
# runs uncompiled where no build has been made.

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
    cdef Py_ssize_t arity
    cdef dict results
    cdef dict dropped
    cdef public bint defer
