# cython: language_level=3
"""C11 atomics and the shared counters block (includes/atomics.h)."""

cdef extern from "atomics.h" nogil:
    ctypedef struct snet_counters:
        long refs
        long created
        long alive
        long peak
        long reclaimed
    long snet_atomic_add(long *p, long v)
    long snet_atomic_load(long *p)
    void snet_atomic_store(long *p, long v)
    int snet_try_lock(int *p)
    void snet_unlock(int *p)
    int snet_is_locked(int *p)
    int snet_flag_load(int *p)
    void snet_flag_store(int *p, int v)
    void snet_atomic_max(long *p, long v)
    double snet_now()
    snet_counters *snet_counters_new()
    void snet_counters_retain(snet_counters *c)
    void snet_counters_release(snet_counters *c)
