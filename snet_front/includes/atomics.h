/* Thin wrappers over the GCC/Clang __atomic builtins used by the FRONT runtime.
 *
 * Everything here is callable without the GIL.  Lock words are plain ints:
 * 0 = free, 1 = held; only try-locks are used on hot paths (a busy entity is
 * skipped, never waited for), so no lock is ever held across a blocking wait.
 */
#ifndef SNET_FRONT_ATOMICS_H
#define SNET_FRONT_ATOMICS_H

#include <stdlib.h>
#include <time.h>
#include <sched.h>

static inline long snet_atomic_add(long *p, long v) { return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST); }
static inline long snet_atomic_load(long *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void snet_atomic_store(long *p, long v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static inline int snet_try_lock(int *p) {
    int expected = 0;
    return __atomic_compare_exchange_n(p, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static inline void snet_unlock(int *p) { __atomic_store_n(p, 0, __ATOMIC_RELEASE); }
static inline int snet_is_locked(int *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* One-way flags (bint fields: ended, stopped, dissolved) that other threads
 * test without a lock.  The release store publishes everything its writer did
 * before it; a reader that sees the flag through the acquire load sees that
 * too.  Under the GIL the GIL's own hand-over ordered these; on a free-threaded
 * build nothing else does (on x86 both compile to plain moves). */
static inline int snet_flag_load(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void snet_flag_store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Raise *p to at least v (for the peak entity count). */
static inline void snet_atomic_max(long *p, long v) {
    long cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static inline double snet_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Entity counters outlive the runtime object if entities are freed after it
 * (cycle collection order is arbitrary), so they live in a small reference-
 * counted block of their own: each entity holds one reference. */
typedef struct {
    long refs;
    long created;
    long alive;
    long peak;
    long reclaimed;  /* entities dropped with reclaimed split replicas */
} snet_counters;

static inline snet_counters *snet_counters_new(void) {
    snet_counters *c = (snet_counters *)calloc(1, sizeof(snet_counters));
    if (c) c->refs = 1;
    return c;
}
static inline void snet_counters_retain(snet_counters *c) { __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED); }
static inline void snet_counters_release(snet_counters *c) {
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) free(c);
}

#endif
