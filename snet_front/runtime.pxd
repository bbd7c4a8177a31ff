# cython: language_level=3
"""The declarations of the FRONT runtime's one extension module.

The module is built from runtime.pyx, which includes core.pxi, entities.pxi,
combinators.pxi and workers.pxi: one compiled module, so one copy of the code
Cython adds to every module and direct C calls between the parts.
"""

from libc.math cimport frexp

from snet_front.atomics cimport (snet_counters, snet_try_lock, snet_unlock, snet_atomic_add, snet_atomic_load,
                                 snet_flag_load, snet_flag_store)


# ---- core.pxi: records in flight, contexts, the entity base, the per-run network state

cdef class Group:
    # Invariant: count >= number of live records that carry this group
    # (in inboxes, being processed, or waiting in a box's reorder buffer);
    # it reaches 0 exactly once, and whoever brings it there wakes `owner`.
    cdef long count
    cdef Entity owner  # the collector that orders this group (None: a request's group)
    cdef list queue  # records of this group that arrived before it became the head
    cdef object request  # a snet.requests.Request: the group of every record from one tracked input


cdef class GStack:
    """An immutable cons list of the deterministic groups a record belongs to, innermost first."""
    cdef Group group
    cdef GStack next
    cdef long depth  # a star's depth mark (its `group` is the star's mark group): the replica the record is in


cdef class Tagged:
    """A record together with its group stack (records outside det regions travel bare)."""
    cdef object rec
    cdef GStack stack


cdef class WakeUp:
    """The item that wakes a collector whose head group may have ended (its class is the test)."""
    pass


cdef class Instance:
    """One instance (top level, star replica, split replica): its eagerly built entities."""
    cdef dict eager  # node id -> entity built at instance creation (paths to initialisers); None: none yet
    cdef list members  # every entity built in a reclaimable split replica (None: not tracked)
    cdef Entity entry  # a split replica's entry entity
    cdef Instance root  # the split replica this instance is part of (itself, or a star incarnation's)
    cdef Entity owner  # a split replica's split
    cdef object key  # a split replica's tag value
    cdef Group mark  # a looping star's operand instance: the depth mark its entities' inboxes order by


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
    # Forwards everything unchanged from now on: writers may bypass it.  Set
    # once, by the lock holder, with snet_flag_store; a reader that misses it
    # only forwards through the entity instead of skipping it.
    cdef int identity
    cdef int cap  # concurrent boxes: at most `cap` calls in flight (0: not a concurrent box; -1: level())
    cdef long running  # calls in flight (concurrent boxes)
    cdef int node
    cdef object inbox  # collections.deque: thread-safe appends/pops
    cdef Network rt
    cdef Ctx ctx
    cdef Entity out
    cdef snet_counters *counters

    cdef void setup(self, Network rt, int node, Ctx ctx)
    cdef int invoke(self, Writer w, object item) except -1
    cdef int complete(self, Writer w, object done) except -1
    cdef Entity resolve_out(self)
    cdef Entity branch_exit(self)
    cdef Entity entry(self)
    cdef Entity junction_out(self)
    cdef bint settled(self)
    cdef int level(self)
    cdef void hint_fresh(self, Instance replica)
    cdef int emit(self, Writer w, object outs, GStack st, bint cont) except -1


cdef class DepthInbox:
    """A looping star's incarnation 1 inbox: deepest replica first, FIFO within one (core.pxi)."""
    cdef Group mark
    cdef dict buckets  # depth -> deque of items, only non-empty ones
    cdef list depths  # heap of the negated depths in `buckets`
    cdef object top  # the deque of the deepest depth (None: empty)
    cdef long top_depth
    cdef list spare  # emptied queues, reused for the next depth
    cdef Py_ssize_t n
    cdef int lock
    cdef int push(self, object item) except -1
    cdef object pop(self)


cdef DepthInbox new_depth_inbox(Group mark)


cdef inline int inbox_append(object inbox, object item) except -1:
    """Append to an entity's inbox: a deque, or a looping star's DepthInbox (called without a method lookup)."""
    if type(inbox) is DepthInbox:
        return (<DepthInbox>inbox).push(item)
    inbox.append(item)
    return 0


cdef inline object inbox_popleft(object inbox):
    """The oldest record of an entity's inbox (the deepest first in a DepthInbox)."""
    if type(inbox) is DepthInbox:
        return (<DepthInbox>inbox).pop()
    return inbox.popleft()


cdef inline bint has_labels(object rec, tuple labels) except -1:
    """True when ``rec`` has every one of ``labels`` (a guard-free pattern matches)."""
    for label in labels:
        if label not in rec:
            return False
    return True


cdef inline int labels_first(object rec, tuple patterns) except -2:
    """The first pattern (label tuples, no guards) ``rec`` matches, or -1: a PatternMatcher's ``raw_first``
    without the Python call."""
    cdef Py_ssize_t i
    for i in range(len(patterns)):
        if has_labels(rec, <tuple>patterns[i]):
            return <int>i
    return -1


cdef class Sink(Entity):
    pass


cdef class Writer:
    """What entities need of the worker that invokes them (workers.pxi implements it)."""
    cdef Network rt
    cdef int wid
    cdef Entity cont_e  # the continuation: an entity locked for us, and its item
    cdef object cont_item
    cdef long n_cont, n_steals, n_stolen, n_invocations, n_inputs, n_moved, scans
    cdef double busy
    cdef double *box_time  # per node: seconds in box calls
    cdef long *box_calls  # per node: box calls
    cdef double *box_cpu  # per node: seconds of this thread's CPU time in calls of automatic boxes
    cdef long *box_hist  # per node, LATENCY_BUCKETS counts: box calls by duration (time_call)
    cdef long ticks  # invocations and unfoldings since the last look at the clock (`safe_point`)
    # The concurrent walk of a fused chain this worker is in: its record's sequence number and group
    # stack, which a fan-out inside it may hand to other workers (chains.pxi, ChainEntity); -1: none
    cdef long walk_seq
    cdef GStack walk_st
    cdef double next_yield  # when the worker next lets other threads take the GIL

    cdef int write(self, Entity dest, object item, bint last) except -1
    cdef bint safe_point(self) except -1
    cdef int add_licences(self, Entity e, long n) except -1
    cdef int drop(self, GStack st) except -1


ctypedef Entity (*EntityFactory)(Network net, int n, Ctx ctx)


cdef class Network:
    """The per-run state that entities and workers share (runtime.pyx adds the Python API)."""
    # The plan, as C arrays (per node id) and the templates themselves
    cdef int nnodes
    cdef int *kind
    cdef int *child0
    cdef int *exit_mode
    cdef int *next_stage
    cdef int *inst_init
    cdef int *det
    cdef int *conc
    cdef int *reclaim  # per split node: its replicas may be reclaimed (docs/runtime.md)
    cdef list nodes  # snet.plan templates: the operators entities are built from
    cdef dict chains  # first node of a fused chain -> the chain's node ids (None: no chain; entities.pxi)
    cdef dict chain_exits  # first node of a fused chain -> the node whose exit its outputs take (chains.pxi)
    cdef dict walks  # box or chain node -> (record shape, its CWalk or None): set once, shared by the replicas
    cdef list children
    cdef list node_names
    cdef object span_of

    # Records in and out
    cdef Entity sink
    cdef object outputs  # for the consumer: records, and Chunks (output_many)
    cdef long n_out  # records ``outputs`` holds, those in its chunks included (atomic)
    cdef long pending
    # Atomic counters: every worker that writes to the sink counts an output
    # (the sink's lock is not taken for that), and the throttle reads both
    # outside the input lock.
    cdef long records_in
    cdef long records_out
    cdef int input_lock
    cdef int input_done  # flag: snet_flag_store / snet_flag_load (atomics.h)
    cdef object input_iter
    cdef object input_checks  # the snet.recordio.inputs.CheckedInputs whose source input_iter is, or None
    cdef set known_fields  # its labels known valid (read_input)
    cdef set known_tags
    cdef long input_index  # records read from it
    cdef object input_peeked  # a record a batch read but left for the one-record path (None: none)
    cdef object input_error
    cdef bint gil  # the interpreter runs with the GIL (Worker.admit_run)
    cdef double input_since  # when the input reader entered the iterator (0: not in it)
    cdef double input_quiet_since  # since when the iterator has said it has nothing yet (0: it had a record)
    cdef bint throttled
    cdef double thr_off, thr_fac
    cdef bint thr_overridden  # the throttle was overridden once to keep a quiescent network going (warned)
    cdef long out_bound  # outputs the consumer has not taken yet, at most, before input stops (0: no bound; atomic)
    cdef long out_bound_least  # ... as the run was given it: ``out_bound`` adapts between this and 16 times it
    cdef double out_empty_at  # when the consumer last found no output waiting
    cdef double out_full_at  # when it first found the bound reached since then (0: it did not)
    cdef int out_full_takes  # takes in a row that found the bound reached, with no wait for outputs between
    cdef long reordered  # outputs made but held in reorder buffers for an earlier call (atomic; emit_in_order)
    cdef Ctx root_ctx
    cdef Entity root_entry

    # Workers and termination
    cdef bint steal_enabled
    cdef int active  # workers with a lower id than this run; the others park (box concurrency auto)
    cdef object park_cond  # parked workers wait on it
    cdef object auto_nodes  # box nodes whose limit is rt.conc[node], changed while the run goes on
    cdef int stop  # flags: snet_flag_store / snet_flag_load (atomics.h)
    cdef int done
    cdef object error
    cdef object fail_lock
    # After a record's failure, the workers finish what is queued (input admission stops) and exit when
    # what they hold waits only at the entities that failed, which stay locked (Worker.loop, docs/runtime.md)
    cdef set failed_entities  # (under fail_lock)
    cdef bint exec_failed  # the split executor raised: its batches run no more
    cdef list workers
    cdef list threads  # the threads of the workers started so far (those below `active`, started when it rises)
    cdef object threads_lock  # guards `threads` and `launched`: the tuner starts workers, close joins them
    cdef bint launched  # start() has run: set_active starts the threads of workers it activates
    cdef object cond
    cdef bint consumer_waiting
    cdef object idle_cond  # idle workers sleep on it; writers wake one when `sleepers` > 0
    cdef long sleepers
    cdef long exited
    cdef double started, finished
    cdef snet_counters *counters

    # Records that stay in a synchro-cell star for ever (snet.core.semantics)
    cdef long parked
    cdef object parked_first  # (node id, record) of the first

    # Bounds on a run that keeps growing (snet.core.limits; checked at unfoldings and safe points)
    cdef long max_held  # records in flight + entities alive + sync-star cells at which the run fails (0: none)
    cdef long mem_limit  # bytes the resident memory may grow by during the run (0: no limit)
    cdef long mem_base  # the resident memory when the run started
    cdef double mem_next  # when the memory is looked at next
    cdef long cells_held  # unfired cells of synchro-cell stars (atomic)
    cdef object unfolding  # (node id, record): the last star replica opened and the record that opened it

    # Unfired synchro-cells holding records (termination warnings)
    cdef dict partial
    cdef int partial_lock  # a lock word (spin_lock) over `partial`, `parked_first`, `parked`'s first change and `unfolding`
    cdef long partial_seq

    # The split executor (snet.splitexec; None without executor splits)
    cdef object executor
    cdef object exec_lock  # guards the executor's own state (new_instance, first_record)
    cdef int exec_word  # a lock word (spin_lock) over the batch filling here, `exec_seq` and `exec_waiting`
    cdef dict exec_columns  # the batch filling: split node -> ([instances], [sequence numbers], [records])
    cdef long exec_seq  # the next record's sequence number
    cdef long exec_filling  # records in `exec_columns`
    cdef long exec_size  # the executor's batch size, read at the run's first record and after each batch (0: none yet)
    cdef dict exec_waiting  # sequence number -> (ExecutorSplitEntity, group stack), or the entity for no stack

    # Calls of async def boxes done on the box loop, for a worker to finish: (entity, what it needs)
    cdef object completions  # collections.deque: appended by the box loop's thread
    cdef long exec_buffered  # records in the batch or in a running batch, not yet emitted
    cdef long exec_bound  # no input is admitted while this many are buffered: two batches (0: no record yet)
    cdef int exec_flushing  # one batch at a time
    cdef double exec_linger  # seconds the input may wait in its iterator before a quiet network flushes

    # Checkpoints (checkpoint.pxi; None unless the run takes them)
    cdef list ckpt_entities  # every synchro-cell and synchro-cell star entity built
    cdef object ckpt_restore  # a resumed run's snet.checkpoint.state.Restore
    cdef set ckpt_fired  # the paths of the instances whose initialisers fired

    cdef Entity enter(self, int n, Ctx ctx)
    cdef Entity exit_target(self, int n, Ctx ctx)
    cdef Entity make(self, int n, Ctx ctx)
    cdef bint admits_input(self)
    cdef bint throttle_holds(self)
    cdef void throttle_overridden(self)
    cdef int output(self, object item) except -1
    cdef int output_many(self, list recs) except -1
    cdef bint tracking  # some input carried a request (snet.requests): workers publish the current one
    cdef void notify(self)
    cdef void notify_consumer(self)
    cdef void wake_idle(self, bint everyone)
    cdef void note_partial(self, object cell, int node, bint fired)
    cdef int park(self, int node, object record) except -1
    cdef void fail(self, object error, bint drain=*)
    cdef int unfolded(self, int node, object record) except -1
    cdef int check_bounds(self, double now) except -1
    cdef long held(self)
    cdef int over_bound(self, long grown) except -1


cdef void register_factory(int kind, EntityFactory factory)
cdef Entity bypass(Entity d)
cdef int first_pattern(object rec, tuple labels, object first, object matcher) except -2
cdef Ctx new_ctx(Entity frame, Instance inst, Ctx tail)
cdef object current_writer()
cdef void set_current_writer(object w)


cdef void yield_cpu()


# The call-time histogram of each box: snet.stats.LATENCY_BOUNDS (1, 1.5, 2, 3, 4 ... µs up to 2**25 µs),
# one bucket more for the longer calls.  tests/runtime checks that the two agree.
cdef enum:
    LATENCY_BUCKETS = 52


cdef inline void time_call(Writer w, int node, double seconds, long times) noexcept:
    """Count ``seconds`` of a box call (``times`` over, for a sampled call) in the worker's time and histogram."""
    cdef int exponent
    cdef double mantissa
    cdef int bucket = 0
    cdef double micros = seconds * 1e6
    w.box_time[node] += seconds * times
    if micros > 1.0:
        mantissa = frexp(micros, &exponent)  # micros = mantissa * 2**exponent, 0.5 <= mantissa < 1
        if mantissa == 0.5:
            bucket = 2 * exponent - 2
        elif mantissa <= 0.75:
            bucket = 2 * exponent - 1
        else:
            bucket = 2 * exponent
        if bucket >= LATENCY_BUCKETS:
            bucket = LATENCY_BUCKETS - 1
    w.box_hist[node * LATENCY_BUCKETS + bucket] += times


cdef enum:
    SPINS_BEFORE_YIELD = 64


cdef inline void spin_lock(int *p):
    """Take a short-held lock word.

    Critical sections may run Python code (which can hand the GIL to
    another thread), so after a few spins the GIL is released while
    yielding: the holder may need it to finish.
    """
    cdef int n = 0
    while not snet_try_lock(p):
        n += 1
        if n >= SPINS_BEFORE_YIELD:
            n = 0
            yield_cpu()


cdef inline bint saturated(Entity e):
    """A concurrent box already running as many calls as it may: take nothing from it now.

    A box whose limit the controller sets (``cap`` -1, docs/runtime.md) reads the level of its node.
    """
    if e.cap == 0:
        return False
    if e.cap > 0:
        return snet_atomic_load(&e.running) >= e.cap
    return snet_atomic_load(&e.running) >= e.level()


cdef inline object make_item(object rec, GStack st):
    if st is None:
        return rec
    cdef Tagged t = Tagged.__new__(Tagged)
    t.rec = rec
    t.stack = st
    return t


cdef inline void spawn(GStack st, long n):
    """Account for ``n`` more live records carrying every group of ``st``."""
    while st is not None:
        snet_atomic_add(&st.group.count, n)
        st = st.next


cdef inline GStack push(Group g, GStack st):
    cdef GStack s = GStack.__new__(GStack)
    s.group = g
    s.next = st
    return s


cdef inline object record_of(object item):
    """The record an item carries (items are bare records or `Tagged`)."""
    return (<Tagged>item).rec if type(item) is Tagged else item


cdef inline object request_of(object item):
    """The tracked input an item comes from (the group at the bottom of its stack), or None."""
    if type(item) is not Tagged:
        return None
    cdef GStack st = (<Tagged>item).stack
    while st.next is not None:
        st = st.next
    return st.group.request


cdef inline GStack stack_of(object item):
    """The group stack an item carries (None for a bare record)."""
    return (<Tagged>item).stack if type(item) is Tagged else None


# ---- combinators.pxi: what the workers and the runtime use of it

cdef int fire(Network rt, Writer w, int n, Ctx ctx, GStack st) except -1
cdef bint executor_due(Network rt)
cdef bint flush_executor(Network rt, Writer w) except -1


# ---- workers.pxi: the worker threads

cdef class Licence:
    cdef Entity entity
    cdef long count


cdef class Worker(Writer):
    cdef list refs  # Licence, head = closest to the output
    cdef double input_cost  # seconds from an input record's read to the end of its walk, a moving mean
    cdef long input_costs  # the walks measured so far
    cdef dict index  # entity -> Licence
    cdef int list_lock
    cdef int steal_lock
    cdef Py_ssize_t cur  # insertion point for new licences (-1: append)
    cdef int victim
    cdef Entity failed_at  # the entity left locked by the invocation that raised (None: none)

    cdef int process(self, Entity e, object item) except -1
    cdef bint work_own(self) except -1
    cdef void sweep(self)
    cdef bint holds_work(self)
    cdef bint holds_live_work(self)
    cdef int loop(self) except -1
    cdef bint try_input(self) except -1
    cdef bint admit_batch(self, Entity chain, long most) except -1
    cdef object admit_next(self)
    cdef bint admit_run(self, Entity dest) except -1
    cdef void note_input_cost(self, double seconds)
    cdef bint try_steal(self) except -1
    cdef bint try_completion(self) except -1
    cdef int park(self) except -1


# ---- runtime.pyx: the Python surface

cdef class Runtime(Network):
    cdef long drain_made  # the workers' invocations when the consumer last saw the drain after a failure move
    cdef double drain_until  # when the consumer stops waiting for a drain that does not move (0: not yet)
    cdef bint draining(self)
    cdef void outputs_drained(self)
    cdef int launch(self, int n) except -1
    cdef bint outputs_taken_at_bound(self)
    cdef int await_output(self, double timeout) except -1
