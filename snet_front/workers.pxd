# cython: language_level=3
"""The worker threads (see workers.pyx)."""

from snet_front.core cimport Entity, Writer, GStack


cdef class Licence:
    cdef Entity entity
    cdef long count


cdef class Worker(Writer):
    cdef list refs  # Licence, head = closest to the output
    cdef dict index  # entity -> Licence
    cdef int list_lock
    cdef int steal_lock
    cdef Py_ssize_t cur  # insertion point for new licences (-1: append)
    cdef int victim

    cdef int process(self, Entity e, object item) except -1
    cdef bint work_own(self) except -1
    cdef void sweep(self)
    cdef bint holds_work(self)
    cdef bint try_input(self) except -1
    cdef bint try_steal(self) except -1
    cdef bint try_completion(self) except -1
