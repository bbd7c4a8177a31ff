# The FRONT runtime's core: records in flight, contexts, entities, the network state.
#
# The FRONT runtime is a lazy entity graph run by a fixed set of workers.  It
# is one extension module, ``snet_front.runtime``, written in parts that only
# use what comes before them (runtime.pyx includes them in this order):
#
# * ``core`` (this part): records in flight (`Tagged`, group stacks),
#   contexts, the `Entity` base with the out resolution every entity shares,
#   `Writer` (what an entity needs of the worker that invokes it) and
#   `Network`, the per-run state: the plan's tables, lazy entity creation
#   through one factory per node kind, the output channel and failure;
# * ``entities``: the entities of boxes, filters, synchro-cells and the synchro-cell star;
# * ``combinators``: collectors, and the entities of parallel, star, split,
#   executor split and feedback, with the firing of initialisers;
# * ``workers``: licences, the worker loop, input admission, stealing;
# * ``runtime``: `Runtime`, the Python-facing object: start, outputs, termination, statistics.
#
# This is the scheduling core of the FRONT engine (Gijsbers & Grelck 2013,
# in the seed document §4).  What each construct *means* is not decided here:
# every entity calls the operators of its node's template in the plan
# (:mod:`snet.plan`: box callers, compiled filters, routers, pattern matchers, synchro-cell patterns,
# split keys).  This part only decides where a record goes next and which worker moves it.
#
# Entities
# ========
#
# An *entity* is one dynamic instance of a property-graph node: a box, a
# filter, a synchro-cell, a parallel / star / split dispatcher, a feedback
# return point, a collector.  Entities are created when the first record needs
# them (a writer resolves its ``out`` the first time it writes) and share
# everything static through the node id.  Pure wiring (named nets, serial
# composition, ``[]``, an initialiser used as a stage) has no entity: entering
# it just resolves to the next real node.
#
# Each entity carries a *context* (`Ctx`), the paper's stack of future
# collectors: when a dispatcher opens its operand it pushes itself as the
# frame, and whatever entity later leaves that operand pops the frame and asks
# it where to go (`branch_exit`).  A star incarnation's frame is the next
# incarnation, a feedback's is its return point, a parallel's or split's is
# its collector (deterministic or initialiser barrier) or its shared out.
#
# Streams, licences, workers
# ==========================
#
# Every entity has one inbox (a deque; each writer appends in its own order,
# so every input stream stays FIFO; incarnation 1 of a star with a stateless
# operand keeps one FIFO per replica and serves the deepest first,
# `DepthInbox`).  Writing a record gives the *writer* one
# read licence for the destination: a `Licence` (entity, count) in the
# writer's list, ordered output-first (new licences go in front of the one
# being worked on; the scan always restarts from the head).  To use a licence
# a worker try-locks the entity, takes the *oldest* record and invokes the
# entity.  The last write of an invocation continues at the destination at
# once if it is free ("walking the record", `Worker.write`).  An idle worker
# first admits one input record (one worker at a time, optionally throttled),
# then steals half the licences of the first stream with an unlocked
# destination from the head of a victim's list (round robin, one thief per victim).
#
# Determinism
# ===========
#
# A deterministic dispatcher (``||``, ``**``, ``!!``) gives each entering
# record a new `Group` (pushed on the record's group stack) registered in
# order at its `Collector`.  A group counts its live records: outputs of an
# invocation add ``n - 1``, a record consumed without output or parked in a
# synchro-cell subtracts one, a record arriving at the owner collector
# subtracts one.  The collector forwards the head group's records at once,
# queues the others, and moves on when the head's count is zero; whoever
# brings a count to zero elsewhere sends a wake-up item to the collector.
# Nested non-deterministic parts need nothing: the ordering happens at the
# deterministic collector.  Initialisers in a parallel's branches form group
# 0 of that parallel's collector (the barrier that makes their outputs leave first, language.md §6.4).
#
# Termination
# ===========
#
# ``pending`` counts items in inboxes, in continuations and being invoked
# (incremented on every write, decremented after an invocation has written
# its outputs).  The network has terminated when the input has ended and
# ``pending`` is zero: global quiescence, which also covers feedback loops.
# A record's failure leaves its entity locked: the workers admit no more
# input, finish what is queued elsewhere and exit (`Worker.loop`).
#
# The GIL
# =======
#
# Records, operators and boxes are Python objects, so on a build with the
# GIL a worker holds it while it invokes entities.  The GIL is released while
# a worker is idle (sleeping between polls), while it yields in a contended
# spin lock, and by any box that releases it itself (NumPy, I/O,
# ``time.sleep``, C extensions): that is where threads run in parallel on
# CPython 3.11.  On a free-threaded build (3.13t) there is no GIL and the
# module says so (``freethreading_compatible``, set in setup.py).  All
# synchronisation is explicit, never the GIL's atomicity: C11-style atomics
# on lock words and counters (includes/atomics.h), including the output and
# input counts that any worker bumps; release stores and acquire loads for
# the one-way flags other threads test without a lock (``input_done``,
# ``stop``, ``done``, ``identity``); the single-owner rules of docs/runtime.md
# for entity fields; deques, whose single operations are atomic on both
# builds, for inboxes, outputs and group queues.  So the scheduler's
# invariants hold without the GIL.


cimport cython
from cpython.dict cimport PyDict_Next
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.object cimport PyObject

import threading
from collections import deque
from heapq import heappush, heappop

from snet.core.limits import MEMORY_CHECK_S, diverging, resident_bytes
from snet.core.semantics import log_parked, log_throttle_overridden
from snet.errors import SNetRuntimeError
from snet.tagexpr import TagExpressionError

from snet_front.atomics cimport (snet_atomic_add, snet_atomic_load, snet_try_lock, snet_unlock, snet_is_locked,
                                 snet_atomic_max, snet_counters_new, snet_counters_retain, snet_counters_release,
                                 snet_flag_store, snet_atomic_store, snet_debug, snet_debug_count)
from snet_front.kinds cimport (K_NET, K_SERIAL, K_IDENT, K_INITBOX, K_BOX, K_SYNC, K_SYNCSTAR, K_SPLIT, K_EXECSPLIT,
                               NKINDS, X_NEXT, X_UP, X_POP)

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef enum:
    SPARE_QUEUES = 16  # emptied queues a depth inbox keeps for reuse
    NOTIFY_BATCH = 64  # outputs queued before a waiting consumer is woken
    OUTPUT_BOUND_GROWTH = 16  # the output bound adapts up to this many times the run's (outputs_drained)


@cython.final
cdef class Chunk:
    """Output records made together, queued for the consumer as one item (``Network.output_many``)."""
    cdef list recs
    cdef Py_ssize_t at  # the records before it are taken (``next_output``)


cdef void yield_cpu():
    with nogil:  # touches no Python object; lets the lock holder run
        sched_yield()


# -- the writer of the current thread -------------------------------------------

_current = threading.local()  # .writer: the Writer (worker) of this thread; None outside workers
_current.writer = None


cdef object current_writer():
    return getattr(_current, "writer", None)


cdef void set_current_writer(object w):
    _current.writer = w


# -- reclaimable split replicas -------------------------------------------------------

cdef bint reclaimable(list nodes, int top):
    """Whether the replicas of a split whose operand is ``top`` may be reclaimed (docs/runtime.md).

    A replica that is back in the state of a fresh one may be dropped only
    if a fresh one is what building it again would give: so no initialiser
    (its outputs are the instance's history), no plain synchro-cell (a fired
    one is an identity for ever, a state no fresh replica has), no split run
    by the executor (its instances live there) and no async box (its calls
    finish outside the workers).  A synchro-cell star holds its cells
    itself, so its cell node is not looked at.
    """
    stack = [top]
    while stack:
        node = nodes[stack.pop()]
        k = int(node.kind)
        if node.owns_init or k == K_SYNC or k == K_INITBOX or k == K_EXECSPLIT:
            return False
        if k == K_BOX and getattr(node, "deferred", False):
            return False
        if k != K_SYNCSTAR:
            stack.extend(node.children)
    return True


# -- one factory per node kind ----------------------------------------------------

cdef EntityFactory _factories[NKINDS]


cdef void register_factory(int kind, EntityFactory factory):
    """Called by entities.pxi and combinators.pxi as the module is initialised: ``factory`` builds entities of ``kind``."""
    _factories[kind] = factory


cdef int first_pattern(object rec, tuple labels, object first, object matcher) except -2:
    """The first pattern ``rec`` matches, or -1 (a star's exits, a feedback loop's returns): tested here from
    ``labels`` when no pattern has a guard, else by the generated ``first``, whose KeyError or division by
    zero ``matcher`` turns into the positioned error."""
    if labels is not None:
        return labels_first(rec, labels)
    try:
        return first(rec)
    except (KeyError, TagExpressionError) as e:
        raise matcher.error(e, rec) from None


cdef Entity bypass(Entity d):
    """Follow identity entities: later records skip them.

    Safe because an identity forwards unchanged.  With its lock held no
    record is being forwarded by it; the records still queued in its inbox
    are moved, in order, to the end of its out's inbox before anything
    newer can be written there, so no stream is reordered.  Licences for
    the moved records go to the current worker; licences others still hold
    for the identity find its inbox empty and lapse (`Worker.work_own`).
    This is what keeps the entity graph of long stateful runs bounded.
    """
    cdef Entity nxt
    cdef Writer w
    cdef Py_ssize_t moved
    while d.identity and snet_try_lock(&d.lock):
        nxt = d.resolve_out()
        inbox = d.inbox
        moved = len(inbox)
        if moved:
            w = <Writer>current_writer()
            if w is None or nxt is d.rt.sink:
                snet_unlock(&d.lock)
                break
            target = nxt.inbox
            while len(inbox):
                inbox_append(target, inbox_popleft(inbox))
            w.add_licences(nxt, moved)
            w.n_moved += moved
        snet_unlock(&d.lock)
        d = nxt
    return d


# Groups, group stacks and tagged records are made and dropped per record in deterministic
# regions and looping stars: each type keeps a few dropped instances for the next (a freelist;
# Cython keeps none on a free-threaded CPython), so a record there costs no allocation for them.
@cython.final
@cython.freelist(64)
cdef class Group:
    pass


@cython.final
@cython.freelist(64)
@cython.trashcan(True)
cdef class GStack:
    pass


@cython.final
@cython.freelist(64)
@cython.trashcan(True)
cdef class Tagged:
    pass


@cython.final
cdef class DepthInbox:
    """The inbox of a looping star's incarnation 1: deepest replica first, FIFO within one.

    Records coming back from the shared operand carry the depth mark of the
    replica they were in (docs/runtime.md, "Depth-first stars").  Taking the
    deepest first unfolds a recursion depth first, so what waits is the
    siblings along one path instead of a whole level; records of one depth
    stay in arrival order (the language's per-path FIFO rule).
    """

    def __len__(self):
        return self.n

    def append(self, item):
        self.push(item)

    def popleft(self):
        return self.pop()

    cdef int push(self, object item) except -1:
        cdef long d = 0
        cdef GStack st = stack_of(item)
        if st is not None and st.group is self.mark:
            d = st.depth
        spin_lock(&self.lock)
        try:
            if self.top is not None and d == self.top_depth:
                q = self.top
            else:
                q = self.buckets.get(d)
                if q is None:
                    q = self.spare.pop() if self.spare else deque()
                    self.buckets[d] = q
                    heappush(self.depths, -d)
                if self.top is None or d > self.top_depth:
                    self.top = q
                    self.top_depth = d
            q.append(item)
            self.n += 1
        finally:
            snet_unlock(&self.lock)
        return 0

    cdef object pop(self):
        spin_lock(&self.lock)
        try:
            q = self.top
            if q is None:
                raise IndexError("pop from an empty inbox")
            item = q.popleft()
            self.n -= 1
            if not len(q):
                del self.buckets[self.top_depth]
                heappop(self.depths)
                if len(self.spare) < SPARE_QUEUES:
                    self.spare.append(q)  # a depth-first walk opens and empties one per level
                if self.depths:
                    self.top_depth = -<long>self.depths[0]
                    self.top = self.buckets[self.top_depth]
                else:
                    self.top = None
            return item
        finally:
            snet_unlock(&self.lock)


cdef DepthInbox new_depth_inbox(Group mark):
    cdef DepthInbox b = DepthInbox.__new__(DepthInbox)
    b.mark = mark
    b.buckets = {}
    b.depths = []
    b.spare = []
    b.top = None
    return b


@cython.final
cdef class WakeUp:
    pass


@cython.final
@cython.trashcan(True)
cdef class Instance:
    pass


@cython.final
@cython.trashcan(True)
cdef class Ctx:
    pass


cdef Ctx new_ctx(Entity frame, Instance inst, Ctx tail):
    cdef Ctx c = Ctx.__new__(Ctx)
    c.frame = frame
    c.inst = inst
    c.tail = tail
    return c


cdef inline Entity resolve(Entity e):
    """Resolve ``e.out`` (created lazily, identities bypassed); not virtual, so overrides can call it."""
    cdef Entity d = e.out
    if d is None:
        d = e.rt.exit_target(e.node, e.ctx)
    if d.identity:
        d = bypass(d)
    e.out = d
    return d


@cython.trashcan(True)  # and on every subclass, explicitly
cdef class Entity:
    """Base of every entity; see the comment at the top of core.pxi.

    Entities form long chains (star incarnations, a replica's stages, each
    out leading to the next), so they are released through CPython's
    trashcan: dropping the head of a chain of a million entities frees them
    iteratively instead of one C stack frame per link.
    """

    def __init__(self):
        raise TypeError("entities are created by the runtime only")

    cdef void setup(self, Network rt, int node, Ctx ctx):
        self.rt = rt
        self.node = node
        self.ctx = ctx
        if ctx is not None and ctx.inst.mark is not None:
            # In a looping star's shared operand: the deepest replica's records first here too,
            # or a busy stage's FIFO would unfold the star breadth first (docs/runtime.md).
            self.inbox = new_depth_inbox(ctx.inst.mark)
        else:
            self.inbox = deque()
        self.counters = rt.counters
        if ctx is not None and ctx.inst.members is not None:
            ctx.inst.members.append(self)  # a reclaimable split replica's entity (`reclaim_fresh`)
        snet_counters_retain(self.counters)
        snet_atomic_add(&self.counters.created, 1)
        snet_atomic_max(&self.counters.peak, snet_atomic_add(&self.counters.alive, 1))
        snet_debug_count(&snet_debug.entities_made, 1)

    def __dealloc__(self):
        if self.counters != NULL:
            snet_atomic_add(&self.counters.alive, -1)
            snet_counters_release(self.counters)
            self.counters = NULL
            snet_debug_count(&snet_debug.entities_freed, 1)

    cdef int invoke(self, Writer w, object item) except -1:
        raise NotImplementedError

    cdef int complete(self, Writer w, object done) except -1:
        """Finish work this entity started outside the workers (an async box's call); see entities.pxi."""
        raise NotImplementedError

    cdef Entity resolve_out(self):
        """Where this entity's outputs go; only the lock holder calls this."""
        return resolve(self)

    cdef Entity junction_out(self):
        """The out target shared by several writers (branch ends), resolved once under `jlock`."""
        spin_lock(&self.jlock)
        try:
            return resolve(self)
        finally:
            snet_unlock(&self.jlock)

    cdef Entity branch_exit(self):
        raise NotImplementedError

    cdef bint settled(self):
        """Holds no state that a freshly built entity of its node would not have (its lock is held).

        Only asked of the entities of reclaimable split replicas; records in
        the inbox are checked by the caller.  Conservative by default.
        """
        return False

    cdef int level(self):
        """The calls this entity may run at once when the controller sets it (``cap`` -1): its node's level."""
        return self.rt.conc[self.node]

    cdef void hint_fresh(self, Instance replica):
        """An entity of ``replica`` (one of this split's) may have just become fresh again."""
        pass

    cdef Entity entry(self):
        return self

    cdef int emit(self, Writer w, object outs, GStack st, bint cont) except -1:
        """Write an invocation's outputs on: one output record as itself (a dict), or the list of them."""
        if type(outs) is dict:
            w.write(self.resolve_out(), make_item(outs, st), cont)
            return 0
        cdef Py_ssize_t i, n = len(outs)
        if st is not None:
            if n == 0:
                w.drop(st)
                return 0
            if n > 1:
                spawn(st, n - 1)
        if n == 0:
            return 0
        cdef Entity dest = self.resolve_out()
        if n == 1:
            w.write(dest, make_item(outs[0], st), cont)
            return 0
        for i in range(n):
            w.write(dest, make_item(outs[i], st), cont and i == n - 1)
        return 0


@cython.final
@cython.trashcan(True)
cdef class Sink(Entity):
    """The network's output: records written here go to the consumer."""

    cdef int invoke(self, Writer w, object item) except -1:
        self.rt.output(item)
        return 0


cdef class Writer:
    """Implemented by `Worker` (workers.pxi)."""

    cdef int write(self, Entity dest, object item, bint last) except -1:
        raise NotImplementedError

    cdef int add_licences(self, Entity e, long n) except -1:
        raise NotImplementedError

    cdef int drop(self, GStack st) except -1:
        raise NotImplementedError

    cdef bint safe_point(self) except -1:
        raise NotImplementedError


cdef class Network:
    """The state one run shares between its entities and workers.

    `Runtime` (runtime.pyx) fills it from the plan and adds the Python API.
    """

    def __cinit__(self):
        self.auto_nodes = frozenset()
        self.counters = snet_counters_new()
        if self.counters == NULL:
            raise MemoryError()
        snet_debug_count(&snet_debug.runtimes_made, 1)

    def __dealloc__(self):
        snet_debug_count(&snet_debug.runtimes_freed, 1)
        PyMem_Free(self.kind)
        PyMem_Free(self.child0)
        PyMem_Free(self.exit_mode)
        PyMem_Free(self.next_stage)
        PyMem_Free(self.inst_init)
        PyMem_Free(self.det)
        PyMem_Free(self.conc)
        PyMem_Free(self.reclaim)
        if self.counters != NULL:
            snet_counters_release(self.counters)

    def load_plan(self, plan, conc):
        """Copy the plan's per-node numbers into C arrays; ``conc[i]``: concurrent calls of box ``i``."""
        cdef int n = len(plan.nodes)
        cdef int i
        self.nnodes = n
        self.kind = <int *>PyMem_Malloc(n * sizeof(int))
        self.child0 = <int *>PyMem_Malloc(n * sizeof(int))
        self.exit_mode = <int *>PyMem_Malloc(n * sizeof(int))
        self.next_stage = <int *>PyMem_Malloc(n * sizeof(int))
        self.inst_init = <int *>PyMem_Malloc(n * sizeof(int))
        self.det = <int *>PyMem_Malloc(n * sizeof(int))
        self.conc = <int *>PyMem_Malloc(n * sizeof(int))
        self.reclaim = <int *>PyMem_Malloc(n * sizeof(int))
        if not (self.kind and self.child0 and self.exit_mode and self.next_stage and self.inst_init
                and self.det and self.conc and self.reclaim):
            raise MemoryError()
        self.nodes = list(plan.nodes)
        self.children = [node.children for node in plan.nodes]
        self.node_names = [getattr(node, "name", None) for node in plan.nodes]
        self.span_of = plan.span_of
        for i in range(n):
            node = self.nodes[i]
            self.kind[i] = int(node.kind)
            self.child0[i] = node.children[0] if node.children else -1
            self.exit_mode[i] = int(node.exit)
            self.next_stage[i] = node.next
            self.inst_init[i] = node.owns_init
            self.det[i] = node.deterministic
            self.conc[i] = conc[i]
            self.reclaim[i] = self.kind[i] == K_SPLIT and reclaimable(self.nodes, self.child0[i])
            if _factories[self.kind[i]] == NULL and self.kind[i] not in (K_NET, K_SERIAL, K_IDENT, K_INITBOX):
                raise SNetRuntimeError(f"internal error: no entity factory for node kind {self.kind[i]}")

    # -- the static graph, lazily instantiated ------------------------------

    cdef Entity enter(self, int n, Ctx ctx):
        """The entity a record entering node ``n`` in context ``ctx`` goes to (created if needed)."""
        cdef int k
        while True:
            k = self.kind[n]
            if k == K_NET or k == K_SERIAL:
                n = self.child0[n]
                continue
            if k == K_IDENT or k == K_INITBOX:
                return self.exit_target(n, ctx)
            if self.inst_init[n] and ctx.inst.eager is not None:
                e = ctx.inst.eager.get(n)
                if e is not None:
                    return (<Entity>e).entry()
            return self.make(n, ctx)

    cdef Entity exit_target(self, int n, Ctx ctx):
        """Where records leaving node ``n`` in context ``ctx`` go."""
        cdef int m
        while True:
            m = self.exit_mode[n]
            if m == X_NEXT:
                return self.enter(self.next_stage[n], ctx)
            if m == X_UP:
                n = self.next_stage[n]  # the parent
                continue
            if m == X_POP:
                return ctx.frame.branch_exit()
            return self.sink

    cdef Entity make(self, int n, Ctx ctx):
        """A new entity for node ``n``, built by the factory of its kind (or of the fused chain it begins)."""
        if self.chains is not None:
            chain = self.chains.get(n)
            if chain is not None:
                return make_chain(self, <tuple>chain, ctx)
        return _factories[self.kind[n]](self, n, ctx)

    # -- input, output, failure ----------------------------------------------

    cdef bint admits_input(self):
        """Admit input while the consumer keeps up and the throttle allows it.

        Output backpressure: while ``out_bound`` outputs wait for the
        consumer, no input is admitted, so a slow consumer (or a pipe nobody
        reads) holds the run at a bounded size instead of letting outputs
        pile up.  Outputs held in reorder buffers for an earlier call count
        too (``reordered``): that call finishes without more input.  The
        throttle: ``inputs < offset + factor * outputs``.  The split executor:
        none while a batch runs and the next is full (``exec_bound``, docs/runtime.md).
        """
        cdef long bound = snet_atomic_load(&self.out_bound)
        if bound and snet_atomic_load(&self.n_out) + snet_atomic_load(&self.reordered) >= bound:
            return False
        if 0 < snet_atomic_load(&self.exec_bound) <= snet_atomic_load(&self.exec_buffered):
            return False
        if not self.throttle_holds():
            return True
        # The throttle exists to keep the network small, never to stop it:
        # with nothing in flight (every pending record parked for ever) no
        # output can come that would lift it, so a network that needs more
        # inputs per output than ``factor`` would stall for ever.  Admit
        # input then (the caller warns once, see ``throttle_overridden``).
        return snet_atomic_load(&self.pending) == snet_atomic_load(&self.parked)

    cdef bint throttle_holds(self):
        """True while the throttle's rule ``inputs < offset + factor * outputs`` holds input back."""
        return self.throttled and (snet_atomic_load(&self.records_in)
                                   >= self.thr_off + self.thr_fac * snet_atomic_load(&self.records_out))

    cdef void throttle_overridden(self):
        """Input was admitted past the throttle because the network was idle: warn once."""
        if self.thr_overridden:
            return
        self.thr_overridden = True
        try:
            log_throttle_overridden(self.thr_off, self.thr_fac, self.records_in, self.records_out)
        except BaseException:
            pass

    cdef int output(self, object item) except -1:
        # Every deterministic group was popped by its collector: what is left
        # is a tracked input's group, whose outputs may go to its future.
        # Any worker writes here (the sink is never locked), so the count is
        # atomic: a plain += was only whole under the GIL.
        snet_atomic_add(&self.records_out, 1)
        if type(item) is Tagged:
            request = request_of(item)
            if request is not None and request.outputs is not None:
                request.outputs.append((<Tagged>item).rec)
                return 0
            item = (<Tagged>item).rec
        self.outputs.append(item)
        snet_atomic_add(&self.n_out, 1)  # (after the append: a consumer that counts it finds it)
        if self.consumer_waiting and snet_atomic_load(&self.n_out) >= NOTIFY_BATCH:
            self.notify_consumer()
        return 0

    cdef int output_many(self, list recs) except -1:
        """Untracked output records, in order, from one walker that holds the only way to the sink.

        What a batch of inputs made (``Worker.admit_batch``): the list goes
        to the consumer as it is, one ``Chunk`` (which a loop over the run
        takes whole), with at most one wake-up for all of them.  ``recs``
        is the consumer's from now on.
        """
        cdef Chunk chunk
        if not recs:
            return 0
        snet_atomic_add(&self.records_out, len(recs))
        chunk = Chunk.__new__(Chunk)
        chunk.recs = recs
        self.outputs.append(chunk)
        snet_atomic_add(&self.n_out, len(recs))
        if self.consumer_waiting:
            self.notify_consumer()
        return 0

    cdef void notify_consumer(self):
        """Wake the consumer waiting for outputs, once: until it waits again, later outputs need not.

        (It may take a while to get the GIL back; a notification per output
        meanwhile cost about as much as the rest of the output's way.)
        """
        self.consumer_waiting = False
        self.notify()

    cdef void notify(self):
        try:
            with self.cond:
                self.cond.notify_all()
        except BaseException:
            pass

    cdef void wake_idle(self, bint everyone):
        """Wake one sleeping worker (work or input may be there for it), or all of them (the run ends)."""
        try:
            with self.idle_cond:
                if everyone:
                    self.idle_cond.notify_all()
                else:
                    self.idle_cond.notify()
            if everyone:
                with self.park_cond:  # parked workers leave at the end too
                    self.park_cond.notify_all()
        except BaseException:
            pass

    cdef void note_partial(self, object cell, int node, bint fired):
        """Keep the unfired cells that hold records, for the termination warnings."""
        key = id(cell)
        spin_lock(&self.partial_lock)
        try:
            if fired:
                self.partial.pop(key, None)
            elif key not in self.partial:
                self.partial_seq += 1
                self.partial[key] = (self.partial_seq, cell, node)
        finally:
            snet_unlock(&self.partial_lock)

    cdef int park(self, int node, object record) except -1:
        """Keep a record that can never leave node ``node``: in flight for ever, costing nothing.

        When the input has ended and only parked records are in flight, the
        workers end the run with `snet.core.semantics.cannot_terminate`.
        """
        snet_atomic_add(&self.pending, 1)  # first: `pending` never drops to the parked count early
        spin_lock(&self.partial_lock)
        try:
            first = self.parked == 0
            if first:
                self.parked_first = (node, record)
            snet_atomic_add(&self.parked, 1)
        finally:
            snet_unlock(&self.partial_lock)
        if first:
            log_parked(self.span_of(node), record)
        return 0

    cdef void fail(self, object error, bint drain=False):
        """Record the run's error (the first stays); ``drain``: the workers finish what is queued, else they stop."""
        with self.fail_lock:
            if self.error is None:
                self.error = error  # set once: readers outside the lock never see it replaced
            if not drain:
                snet_flag_store(&self.stop, True)
        self.notify()
        self.wake_idle(True)

    # -- bounds on a run that keeps growing (snet.core.limits) -----------------

    cdef int unfolded(self, int node, object record) except -1:
        """A star opened a replica for ``record`` (a new incarnation, a sync-star's new cell): check the bound.

        Every worker stores here: the store is under ``partial_lock``, since two
        threads replacing the same tuple at once would both release the old one
        (without the GIL that frees it twice).
        """
        cdef tuple unfolding = (node, record)
        spin_lock(&self.partial_lock)
        try:
            self.unfolding = unfolding
        finally:
            snet_unlock(&self.partial_lock)
        if self.max_held and self.held() > self.max_held:
            self.over_bound(0)
        return 0

    cdef long held(self):
        return (snet_atomic_load(&self.pending) + snet_atomic_load(&self.counters.alive)
                + snet_atomic_load(&self.cells_held))

    cdef int check_bounds(self, double now) except -1:
        """At a safe point: the held bound, and every `MEMORY_CHECK_S` the memory limit."""
        if self.max_held and self.held() > self.max_held:
            self.over_bound(0)
        if self.mem_limit and now >= self.mem_next:
            self.mem_next = now + MEMORY_CHECK_S
            grown = resident_bytes() - self.mem_base
            if grown > self.mem_limit:
                self.over_bound(grown)
        return 0

    cdef int over_bound(self, long grown) except -1:
        spin_lock(&self.partial_lock)
        try:
            unfolding = self.unfolding  # a reference of this thread's own, taken under the writers' lock
        finally:
            snet_unlock(&self.partial_lock)
        node, record = unfolding if unfolding is not None else (-1, None)
        span = self.span_of(node) if node >= 0 else None
        error = (diverging(span, record, grown=grown, memory_limit=self.mem_limit) if grown
                 else diverging(span, record, held=self.held(), limit=self.max_held))
        self.fail(error)  # the workers stop at once: finishing what is queued would grow the run further
        raise error
