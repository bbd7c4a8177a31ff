# cython: language_level=3
"""C11 atomics and the shared counters block (includes/atomics.h); the debug build's counters (includes/debug.h)."""

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


# The counters of the debug build (includes/debug.h): compiled out unless SNET_FRONT_DEBUG is 1.
cdef extern from "debug.h" nogil:
    const int SNET_FRONT_DEBUG
    ctypedef struct snet_debug_counters:
        long runtimes_made
        long runtimes_freed
        long entities_made
        long entities_freed
        long licences_made
        long licences_freed
    snet_debug_counters snet_debug
    void snet_debug_count(long *p, long n)
