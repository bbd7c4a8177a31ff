/* The counters of the FRONT runtime's debug build.
 *
 * Built with SNET_FRONT_DEBUG=1 in the environment (setup.py), the runtime
 * counts, for the whole process, the runtimes, entities and licences it makes
 * and frees; the test suite checks after each test that everything a test
 * made was freed (tests/conftest.py).  In the ordinary build SNET_FRONT_DEBUG
 * is 0 and every count compiles to nothing.
 */
#ifndef SNET_FRONT_DEBUG_H
#define SNET_FRONT_DEBUG_H

#ifndef SNET_FRONT_DEBUG
#define SNET_FRONT_DEBUG 0
#endif

typedef struct {
    long runtimes_made;
    long runtimes_freed;
    long entities_made;
    long entities_freed;
    long licences_made;
    long licences_freed;
} snet_debug_counters;

static snet_debug_counters snet_debug;

static inline void snet_debug_count(long *p, long n) {
#if SNET_FRONT_DEBUG
    __atomic_add_fetch(p, n, __ATOMIC_RELAXED);
#else
    (void)p;
    (void)n;
#endif
}

#endif
