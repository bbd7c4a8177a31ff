# cython: language_level=3
"""Typed declarations of the FRONT runtime (see runtime.pyx for the design)."""

cdef extern from "atomics.h" nogil:
    ctypedef struct snet_counters:
        long refs
        long created
        long alive
        long peak
    long snet_atomic_add(long *p, long v)
    long snet_atomic_load(long *p)
    void snet_atomic_store(long *p, long v)
    int snet_try_lock(int *p)
    void snet_unlock(int *p)
    int snet_is_locked(int *p)
    void snet_atomic_max(long *p, long v)
    double snet_now()
    snet_counters *snet_counters_new()
    void snet_counters_retain(snet_counters *c)
    void snet_counters_release(snet_counters *c)


cdef class Group:
    # Invariant: count >= number of live records that carry this group
    # (in inboxes, being processed, or waiting in a box's reorder buffer);
    # it reaches 0 exactly once, and whoever brings it there wakes `owner`.
    cdef long count
    cdef Collector owner
    cdef list queue  # records of this group that arrived before it became the head


cdef class GStack:
    """An immutable cons list of the deterministic groups a record belongs to, innermost first."""
    cdef Group group
    cdef GStack next


cdef class Tagged:
    """A record together with its group stack (records outside det regions travel bare)."""
    cdef object rec
    cdef GStack stack


cdef class Instance:
    """One instance (top level, star replica, split replica): its eagerly built entities."""
    cdef dict eager  # node id -> entity built at instance creation (paths to initialisers)


cdef class Ctx:
    """The stack of future collectors of the paper, as a cons list of frames."""
    cdef Entity frame  # where records leaving the innermost operand go (via branch_exit)
    cdef Instance inst
    cdef Ctx tail


cdef class Entity:
    # Invariant: `lock` is held by the one worker invoking this entity (for
    # a concurrent box only while it takes a record off the inbox).
    cdef int lock
    cdef int jlock  # guards the lazily resolved shared out target of junctions
    cdef bint identity  # forwards everything unchanged from now on: writers may bypass it
    cdef int cap  # concurrent boxes: at most `cap` calls in flight (0: not a concurrent box)
    cdef long running  # calls in flight (concurrent boxes)
    cdef int node
    cdef object inbox  # collections.deque: thread-safe appends/pops
    cdef Runtime rt
    cdef Ctx ctx
    cdef Entity out
    cdef snet_counters *counters

    cdef void setup(self, Runtime rt, int node, Ctx ctx)
    cdef int invoke(self, Worker w, object item) except -1
    cdef Entity resolve_out(self)
    cdef Entity branch_exit(self)
    cdef Entity entry(self)
    cdef Entity junction_out(self)
    cdef int emit_list(self, Worker w, object outs, GStack st, bint cont) except -1


cdef class Collector(Entity):
    cdef object groups  # deque of Group in entry order
    cdef list stray
    cdef bint barrier_only
    cdef Group new_group(self)
    cdef int release(self, Worker w) except -1


cdef class Licence:
    cdef Entity entity
    cdef long count


cdef class Worker:
    cdef Runtime rt
    cdef int wid
    cdef list refs  # Licence, head = closest to the output
    cdef dict index  # entity -> Licence
    cdef int list_lock
    cdef int steal_lock
    cdef Py_ssize_t cur  # insertion point for new licences (-1: append)
    cdef Entity cont_e
    cdef object cont_item
    cdef int victim
    cdef long n_cont, n_steals, n_stolen, n_invocations, n_inputs, n_moved, scans
    cdef double busy
    cdef double *box_time
    cdef long *box_calls

    cdef int write(self, Entity dest, object item, bint last) except -1
    cdef int add_licences(self, Entity e, long n) except -1
    cdef int drop(self, GStack st) except -1
    cdef int process(self, Entity e, object item) except -1
    cdef bint work_own(self) except -1
    cdef void sweep(self)
    cdef bint holds_work(self)
    cdef bint try_input(self) except -1
    cdef bint try_steal(self) except -1


cdef class Runtime:
    cdef int nnodes
    cdef int *kind
    cdef int *child0
    cdef int *exit_mode
    cdef int *next_stage
    cdef int *inst_init
    cdef int *det
    cdef int *conc
    cdef list ops
    cdef list children
    cdef list node_names
    cdef list sync_nodes
    cdef object span_of

    cdef Entity sink
    cdef object outputs
    cdef long pending
    cdef long records_in
    cdef long records_out
    cdef int input_lock
    cdef bint input_done
    cdef object input_iter
    cdef object input_error
    cdef bint throttled
    cdef double thr_off, thr_fac
    cdef bint steal_enabled
    cdef bint stop
    cdef bint done
    cdef object error
    cdef object fail_lock
    cdef list workers
    cdef list threads
    cdef Ctx root_ctx
    cdef Entity root_entry
    cdef snet_counters *counters
    cdef dict partial
    cdef object partial_lock
    cdef long partial_seq
    cdef object cond
    cdef bint consumer_waiting
    cdef long exited
    cdef double started, finished
    # Splits on Spark (snet.spark.splits.SparkSplits; None without them)
    cdef object spark
    cdef object spark_lock  # guards the batch buffer and `spark_waiting`
    cdef dict spark_waiting  # batch sequence number -> (SparkSplitEntity, group stack)
    cdef long spark_buffered  # records in the batch or in a running batch, not yet emitted
    cdef int spark_flushing  # one batch at a time
    cdef double spark_linger  # seconds the input may wait in its iterator before a quiet network flushes
    cdef double input_since  # when the input reader entered the iterator (0: not in it)

    cdef Entity enter(self, int n, Ctx ctx)
    cdef Entity exit_target(self, int n, Ctx ctx)
    cdef Entity make(self, int n, Ctx ctx)
    cdef Collector new_collector(self, int n, Ctx ctx)
    cdef int fire(self, Worker w, int n, Ctx ctx, GStack st) except -1
    cdef int output(self, object item) except -1
    cdef void notify(self)
    cdef void note_partial(self, object cell, int node, bint fired)
    cdef bint spark_due(self)
    cdef bint flush_spark(self, Worker w) except -1
