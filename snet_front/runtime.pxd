# cython: language_level=3
"""The FRONT runtime's Python surface (see runtime.pyx)."""

from snet_front.core cimport Network


cdef class Runtime(Network):
    pass
