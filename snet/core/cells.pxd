# Declarations that let Cython compile snet/core/cells.py (pure Python source)
# with the cell and the sync-star index as extension types: their state is read
# as struct fields, and FRONT's synchro-cell entities (snet_front/entities.pxi)
# call the methods below as C calls.  The .py file stays valid Python and runs
# uncompiled where no build has been made.

cimport cython


cdef bint _FREE_THREADED_BUILD


@cython.final
cdef class SyncCell:
    cdef readonly object shape
    cdef readonly Py_ssize_t replica
    cdef readonly list slots
    cdef readonly list empty
    cdef readonly bint fired

    cdef void fill(self, object shape, Py_ssize_t replica) except *
    cpdef object accept(self, object record)
    @cython.locals(slots=list, stored=bint, i=Py_ssize_t)
    cpdef object take(self, object record, object hits)
    cpdef Py_ssize_t filled(self)
    cpdef Py_ssize_t stored_records(self)
    cpdef object saved(self)
    @cython.locals(i=Py_ssize_t)
    cpdef restore(self, object slots)


@cython.locals(cell=SyncCell)
cpdef SyncCell new_cell(object shape, Py_ssize_t replica=*)

@cython.locals(merged=dict, record=dict, j=Py_ssize_t)
cdef dict merged_record(list slots, tuple later)

@cython.locals(out=list, i=Py_ssize_t, first=Py_ssize_t)
cpdef object patterns_matched(object record, tuple labels, object all_patterns)


@cython.final
cdef class SyncStarIndex:
    cdef readonly object shape
    cdef readonly dict cells
    cdef readonly list waiting
    cdef readonly Py_ssize_t replicas
    cdef public Py_ssize_t probes

    @cython.locals(best=SyncCell, cell=SyncCell)
    cpdef SyncCell find(self, object hits, Py_ssize_t after)
    @cython.locals(best=SyncCell, cell=SyncCell)
    cdef SyncCell first_waiting(self, object hits, Py_ssize_t after)
    @cython.locals(k=Py_ssize_t)
    cdef SyncCell first_after(self, Py_ssize_t after)
    @cython.locals(cell=SyncCell, i=Py_ssize_t)
    cpdef SyncCell open(self)
    @cython.locals(before=list)
    cpdef object offer(self, SyncCell cell, object record, object hits)
    # (Py_ssize_t, not int: the debug build's line tracing converts the return value, and Cython 3.3 names
    # its int converter without defining it when an earlier module of the same build defined its own)
    cdef Py_ssize_t unlist(self, Py_ssize_t slot, SyncCell cell) except -1
    cpdef Py_ssize_t unfired(self)
    cpdef tuple saved(self)
    @cython.locals(cell=SyncCell, made=list)
    cpdef list restore(self, Py_ssize_t replicas, list cells)
