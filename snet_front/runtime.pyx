# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The FRONT runtime: a lazy entity graph run by a fixed set of workers.

This is the scheduling core of the FRONT engine (Gijsbers & Grelck 2013,
in the seed document §4).  What each construct *means* is not decided here:
every entity calls the per-node operator of :mod:`snet.core.semantics`
(box callers, compiled filters, routers, pattern matchers, synchro-cells,
split keys).  This module only decides where a record goes next and which
worker moves it.

Entities
========

An *entity* is one dynamic instance of a property-graph node: a box, a
filter, a synchro-cell, a parallel / star / split dispatcher, a feedback
return point, a collector.  Entities are created when the first record needs
them (a writer resolves its ``out`` the first time it writes) and share
everything static through the node id.  Pure wiring (named nets, serial
composition, ``[]``, an initialiser used as a stage) has no entity: entering
it just resolves to the next real node.

Each entity carries a *context* (`Ctx`), the paper's stack of future
collectors: when a dispatcher opens its operand it pushes itself as the
frame, and whatever entity later leaves that operand pops the frame and asks
it where to go (`branch_exit`).  A star incarnation's frame is the next
incarnation, a feedback's is its return point, a parallel's or split's is
its collector (deterministic or initialiser barrier) or its shared out.

Streams, licences, workers
==========================

Every entity has one inbox (a deque; each writer appends in its own order,
so every input stream stays FIFO).  Writing a record gives the *writer* one
read licence for the destination: a `Licence` (entity, count) in the
writer's list, ordered output-first (new licences go in front of the one
being worked on; the scan always restarts from the head).  To use a licence
a worker try-locks the entity, takes the *oldest* record and invokes the
entity.  The last write of an invocation continues at the destination at
once if it is free ("walking the record", `Worker.write`).  An idle worker
first admits one input record (one worker at a time, optionally throttled),
then steals half the licences of the first stream with an unlocked
destination from the head of a victim's list (round robin, one thief per
victim).

Determinism
===========

A deterministic dispatcher (``||``, ``**``, ``!!``) gives each entering
record a new `Group` (pushed on the record's group stack) registered in
order at its `Collector`.  A group counts its live records: outputs of an
invocation add ``n - 1``, a record consumed without output or parked in a
synchro-cell subtracts one, a record arriving at the owner collector
subtracts one.  The collector forwards the head group's records at once,
queues the others, and moves on when the head's count is zero; whoever
brings a count to zero elsewhere sends a wake-up item to the collector.
Nested non-deterministic parts need nothing: the ordering happens at the
deterministic collector.  Initialisers in a parallel's branches form group
0 of that parallel's collector (the barrier that makes their outputs leave
first, language.md §6.4).

Termination
===========

``pending`` counts items in inboxes, in continuations and being invoked
(incremented on every write, decremented after an invocation has written
its outputs).  The network has terminated when the input has ended and
``pending`` is zero: global quiescence, which also covers feedback loops.

The GIL
=======

Records, operators and boxes are Python objects, so a worker holds the GIL
while it invokes entities.  The GIL is released while a worker is idle
(sleeping between polls), while it yields in a contended spin lock, and by
any box that releases it itself (NumPy, I/O, ``time.sleep``, C
extensions): that is where threads run in parallel on CPython 3.11.  All
synchronisation is explicit (C11-style atomics on lock words and counters,
see includes/atomics.h), never the GIL's atomicity, so the scheduler's
invariants hold without it.
"""

cimport cython
from posix.unistd cimport usleep
from cpython.mem cimport PyMem_Malloc, PyMem_Free

import threading
from collections import deque

from snet.errors import SNetRuntimeError

cdef extern from "<sched.h>" nogil:
    int sched_yield()

# Node kinds, as the adapter (snet/backends/front.py) encodes them.
cdef enum:
    K_NET = 0
    K_SERIAL = 1
    K_IDENT = 2
    K_INITBOX = 3
    K_BOX = 4
    K_FILTER = 5
    K_SYNC = 6
    K_PAR = 7
    K_STAR = 8
    K_SYNCSTAR = 9
    K_SPLIT = 10
    K_FEEDBACK = 11
    K_SPARKSPLIT = 12

# Where records leaving a node go.
cdef enum:
    X_NEXT = 0  # enter the next serial stage
    X_UP = 1  # leave the parent too
    X_POP = 2  # ask the innermost frame (the enclosing combinator instance)
    X_SINK = 3  # the network's output

# Idle back-off (microseconds): short enough that a stolen licence is
# picked up within a fraction of a millisecond, long enough that idle
# workers do not take the GIL from busy ones more than every few hundred µs.
cdef enum:
    IDLE_STEP_US = 20
    IDLE_MAX_US = 200
    SPINS_BEFORE_YIELD = 64
    SWEEP_EVERY = 256  # work_own scans between sweeps of lapsed licences
    NOTIFY_BATCH = 64

cdef object _WAKE = object()  # a wake-up item for a collector


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
            with nogil:  # touches no Python object; lets the holder run
                sched_yield()


cdef inline bint saturated(Entity e):
    """A concurrent box already running as many calls as it may: take nothing from it now."""
    return e.cap != 0 and snet_atomic_load(&e.running) >= e.cap


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
    cdef Worker w
    cdef Py_ssize_t moved
    while d.identity and snet_try_lock(&d.lock):
        nxt = d.resolve_out()
        inbox = d.inbox
        moved = len(inbox)
        if moved:
            w = <Worker>getattr(_current, "worker", None)
            if w is None or nxt is d.rt.sink:
                snet_unlock(&d.lock)
                break
            target = nxt.inbox
            while len(inbox):
                target.append(inbox.popleft())
            w.add_licences(nxt, moved)
            w.n_moved += moved
        snet_unlock(&d.lock)
        d = nxt
    return d


_current = threading.local()  # .worker: the Worker of this thread (None outside workers)
_current.worker = None


@cython.final
cdef class Group:
    pass


@cython.final
cdef class GStack:
    pass


@cython.final
cdef class Tagged:
    pass


@cython.final
cdef class Instance:
    def __cinit__(self):
        self.eager = {}


@cython.final
cdef class Ctx:
    pass


cdef inline Ctx new_ctx(Entity frame, Instance inst, Ctx tail):
    cdef Ctx c = Ctx.__new__(Ctx)
    c.frame = frame
    c.inst = inst
    c.tail = tail
    return c


cdef class Entity:
    """Base of every entity; see the module docstring."""

    def __init__(self):
        raise TypeError("entities are created by the runtime only")

    cdef void setup(self, Runtime rt, int node, Ctx ctx):
        self.rt = rt
        self.node = node
        self.ctx = ctx
        self.inbox = deque()
        self.counters = rt.counters
        snet_counters_retain(self.counters)
        snet_atomic_add(&self.counters.created, 1)
        snet_atomic_max(&self.counters.peak, snet_atomic_add(&self.counters.alive, 1))

    def __dealloc__(self):
        if self.counters != NULL:
            snet_atomic_add(&self.counters.alive, -1)
            snet_counters_release(self.counters)
            self.counters = NULL

    cdef int invoke(self, Worker w, object item) except -1:
        raise NotImplementedError

    cdef Entity resolve_out(self):
        """Where this entity's outputs go; only the lock holder calls this."""
        cdef Entity d = self.out
        if d is None:
            d = self.rt.exit_target(self.node, self.ctx)
        if d.identity:
            d = bypass(d)
        self.out = d
        return d

    cdef Entity junction_out(self):
        """The out target shared by several writers (branch ends), resolved once."""
        cdef Entity d
        spin_lock(&self.jlock)
        try:
            d = self.out
            if d is None:
                d = self.rt.exit_target(self.node, self.ctx)
            if d.identity:
                d = bypass(d)
            self.out = d
        finally:
            snet_unlock(&self.jlock)
        return d

    cdef Entity branch_exit(self):
        raise NotImplementedError

    cdef Entity entry(self):
        return self

    cdef int emit_list(self, Worker w, object outs, GStack st, bint cont) except -1:
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
cdef class Sink(Entity):
    """The network's output: records written here go to the consumer."""

    cdef int invoke(self, Worker w, object item) except -1:
        self.rt.output(item)
        return 0


@cython.final
cdef class BoxEntity(Entity):
    """A box instance; up to ``limit`` concurrent calls, outputs kept in input order."""
    cdef object op
    cdef int limit
    cdef long next_seq
    cdef long emit_seq
    cdef dict done
    cdef int rlock

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef double t0
        cdef long seq
        cdef int early = 0
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        if self.limit <= 1:
            t0 = snet_now()
            outs = self.op(rec)
            w.box_time[self.node] += snet_now() - t0
            w.box_calls[self.node] += 1
            self.emit_list(w, outs, st, True)
            return 0
        # Concurrent invocation: number the record while we hold the lock,
        # let other workers start on the next records, reorder at the end.
        # Workers only take a record from this inbox while fewer than `cap`
        # calls run (`saturated`), so the lock can always be dropped here.
        seq = self.next_seq
        self.next_seq += 1
        snet_atomic_add(&self.running, 1)
        early = 1
        snet_unlock(&self.lock)
        try:
            t0 = snet_now()
            outs = self.op(rec)
            w.box_time[self.node] += snet_now() - t0
            w.box_calls[self.node] += 1
            spin_lock(&self.rlock)
            try:
                if seq == self.emit_seq and not self.done:
                    self.emit_list(w, outs, st, False)
                    self.emit_seq += 1
                else:
                    self.done[seq] = (outs, st)
                while self.done:
                    pair = self.done.pop(self.emit_seq, None)
                    if pair is None:
                        break
                    self.emit_list(w, pair[0], pair[1], False)
                    self.emit_seq += 1
            finally:
                snet_unlock(&self.rlock)
        finally:
            snet_atomic_add(&self.running, -1)
        return early


@cython.final
cdef class FilterEntity(Entity):
    cdef object op

    cdef int invoke(self, Worker w, object item) except -1:
        if type(item) is Tagged:
            self.emit_list(w, self.op((<Tagged>item).rec), (<Tagged>item).stack, True)
        else:
            self.emit_list(w, self.op(item), None, True)
        return 0


@cython.final
cdef class SyncEntity(Entity):
    """A synchro-cell instance; once fired it is an identity that writers bypass."""
    cdef object cell

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        cdef bint was_fired = self.cell.fired
        res = self.cell.accept(rec)
        if res is None:
            # A parked record stops counting for its input (language.md §7).
            if st is not None:
                w.drop(st)
            self.rt.note_partial(self.cell, self.node, False)
            return 0
        if not was_fired and self.cell.fired:
            self.identity = True
            self.rt.note_partial(self.cell, self.node, True)
        w.write(self.resolve_out(), make_item(res, st), True)
        return 0


@cython.final
cdef class SyncStarEntity(Entity):
    """``[| ... |] * P`` run as one entity (the zipper of the C runtime).

    ``cells`` holds ``(replica, cell)`` for the unfired cells in replica
    order; fired cells are identities, and the exit test of an unchanged
    record gives the same answer at every replica, so a record only needs
    the unfired ones.  ``waiting[i]`` lists, in replica order, the unfired
    cells whose slot *i* is empty.  A record matching the patterns M goes to
    the first cell with an empty slot in M, which is the earliest head of
    ``waiting[i]`` for i in M: no walk along the replicas (the C zipper's
    mask grouping, taken further).  A merged record continues after its
    cell.  One entity handles every record in arrival order, which is also
    the order ``**`` asks for.
    """
    cdef object matcher
    cdef object shape
    cdef int sync_node
    cdef list cells
    cdef list waiting
    cdef object all_patterns
    cdef long replicas

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef long after = -1  # the replica the record has passed (-1: none yet)
        cdef long best, k
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        if self.waiting is None:
            self.waiting = [deque() for _ in range(self.shape.count)]
            self.all_patterns = range(self.shape.count)
        while True:
            if self.matcher(rec) >= 0:
                w.write(self.resolve_out(), make_item(rec, st), True)
                return 0
            try:
                hits = self.shape.matcher.matching(rec, self.all_patterns)
            except SNetRuntimeError:
                return self.walk(w, rec, st, after)  # let the guards fail where the reference's do
            if not hits:
                raise SNetRuntimeError(
                    "record matches neither an exit pattern nor a synchro-cell pattern of the star, "
                    "so it would pass through replicas for ever", self.rt.span_of(self.node))
            entry = None
            best = -1
            for i in hits:
                for cand in <object>self.waiting[i]:
                    k = cand[0]
                    if k > after:
                        if best < 0 or k < best:
                            best = k
                            entry = cand
                        break
            if entry is None:
                entry = (self.replicas, self.shape.new_cell())
                self.replicas += 1
                self.cells.append(entry)
                for q in self.waiting:
                    q.append(entry)
            cell = entry[1]
            before = tuple(cell.empty)
            res = cell.accept(rec)
            self.unlist(entry, before)
            if res is None:
                if st is not None:
                    w.drop(st)
                self.rt.note_partial(cell, self.sync_node, False)
                return 0
            # It fired (a record that fills a slot is stored or completes the cell).
            self.cells.remove(entry)
            self.rt.note_partial(cell, self.sync_node, True)
            after = entry[0]
            rec = res

    cdef int unlist(self, object entry, tuple before) except -1:
        """Take ``entry`` off the waiting lists of the slots it just filled (it is usually their head)."""
        cell = entry[1]
        for j in before:
            if cell.fired or j not in cell.empty:
                q = self.waiting[j]
                if q[0] is entry:
                    q.popleft()
                else:
                    q.remove(entry)
        return 0

    cdef int walk(self, Worker w, object rec, GStack st, long after) except -1:
        """The plain walk along the unfired cells after replica ``after``, as the reference does it."""
        cdef Py_ssize_t i = 0
        cells = self.cells
        while i < len(cells) and cells[i][0] <= after:
            i += 1
        while True:
            if self.matcher(rec) >= 0:
                w.write(self.resolve_out(), make_item(rec, st), True)
                return 0
            fresh = i == len(cells)
            if fresh:
                entry = (self.replicas, self.shape.new_cell())
                self.replicas += 1
                cells.append(entry)
                for q in self.waiting:
                    q.append(entry)
            entry = cells[i]
            cell = entry[1]
            before = tuple(cell.empty)
            res = cell.accept(rec)
            self.unlist(entry, before)
            if res is None:
                if st is not None:
                    w.drop(st)
                self.rt.note_partial(cell, self.sync_node, False)
                return 0
            if cell.fired:
                del cells[i]
                self.rt.note_partial(cell, self.sync_node, True)
            elif fresh:
                raise SNetRuntimeError(
                    "record matches neither an exit pattern nor a synchro-cell pattern of the star, "
                    "so it would pass through replicas for ever", self.rt.span_of(self.node))
            else:
                i += 1
            rec = res


@cython.final
cdef class ParallelEntity(Entity):
    cdef object router
    cdef list branches  # entry entity per branch, created lazily
    cdef Collector coll  # deterministic order and/or initialiser barrier; None: branches share `out`

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef Entity dest
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        cdef int b = self.router(rec)
        if self.rt.det[self.node]:
            st = push(self.coll.new_group(), st)
            item = make_item(rec, st)
        dest = self.branches[b]
        if dest is None:
            dest = self.rt.enter(self.rt.children[self.node][b], new_ctx(self, self.ctx.inst, self.ctx))
        if dest.identity:
            dest = bypass(dest)
        self.branches[b] = dest
        w.write(dest, item, True)
        return 0

    cdef Entity branch_exit(self):
        if self.coll is not None:
            return self.coll
        return self.junction_out()


@cython.final
cdef class StarShared:
    """What all incarnations of one star instance share."""
    cdef Runtime rt
    cdef int node
    cdef Ctx ctx
    cdef object matcher
    cdef bint det
    cdef Collector coll
    cdef Entity out  # the star's out, shared by the exits of every incarnation
    cdef int jlock  # guards `out`

    cdef Entity exit_target(self):
        cdef Entity d
        if self.coll is not None:
            return self.coll
        spin_lock(&self.jlock)
        try:
            d = self.out
            if d is None:
                d = self.rt.exit_target(self.node, self.ctx)
            if d.identity:
                d = bypass(d)
            self.out = d
        finally:
            snet_unlock(&self.jlock)
        return d


@cython.final
cdef class StarEntity(Entity):
    """Incarnation ``k`` of a star: the exit test before replica ``k``."""
    cdef StarShared sh
    cdef long k
    cdef StarEntity nxt
    cdef Entity op_entry

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef Entity dest
        cdef StarShared sh = self.sh
        cdef Runtime rt = self.rt
        cdef Instance inst
        cdef Ctx cop
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        cdef bint leader = self.k == 0 and sh.det
        if leader:
            st = push(sh.coll.new_group(), st)
            item = make_item(rec, st)
        if sh.matcher(rec) >= 0:
            w.write(sh.exit_target(), item, True)
            return 0
        dest = self.op_entry
        if dest is None:
            nxt = <StarEntity>StarEntity.__new__(StarEntity)
            nxt.setup(rt, self.node, self.ctx)
            nxt.sh = sh
            nxt.k = self.k + 1
            self.nxt = nxt
            inst = Instance.__new__(Instance)
            cop = new_ctx(nxt, inst, sh.ctx)
            rt.fire(w, rt.children[self.node][0], cop, st)
            dest = rt.enter(rt.children[self.node][0], cop)
        if dest.identity:
            dest = bypass(dest)
        self.op_entry = dest
        if not leader and not self.identity and (
                (type(dest) is StarEntity and (<StarEntity>dest).sh is sh)
                or (dest.identity and dest.out is self.nxt)):
            # The operand dissolved completely (its entry is a later
            # incarnation, or an identity leading straight to the next, which
            # another worker may hold right now): this incarnation tests
            # exactly what the next one tests, so it becomes an identity
            # forwarding to its operand entry, and writers skip it.  (`out`
            # of an identity is only compared here, never followed.)
            self.out = dest
            self.identity = True
        w.write(dest, item, True)
        return 0

    cdef Entity branch_exit(self):
        return self

    def debug_state(self):
        """(replica, dissolved, kind of operand entry, entry is the next replica): for tests."""
        return (self.k, bool(self.identity), type(self.op_entry).__name__, self.op_entry is self.nxt,
                len(self.inbox), bool(snet_is_locked(&self.lock)))


@cython.final
cdef class SplitEntity(Entity):
    cdef object keys
    cdef dict replicas
    cdef Collector coll

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef Entity dest
        cdef Runtime rt = self.rt
        cdef Py_ssize_t i, n
        cdef Ctx c
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        values = self.keys.values(rec)
        cdef bint det = rt.det[self.node]
        cdef GStack cst = st
        n = len(values)
        if n == 0:
            if st is not None:
                w.drop(st)
            return 0
        if n > 1 and st is not None:
            spawn(st, n - 1)
        if not det:
            item = make_item(rec, st)
        for i in range(n):
            v = values[i]
            if det:
                # Each copy gets its own group, in ascending order: all outputs
                # of one input still leave together, and the copies' outputs
                # in the order the copies were made (as the reference engine).
                cst = push(self.coll.new_group(), st)
                item = make_item(rec, cst)
            dest = self.replicas.get(v)
            if dest is None:
                c = new_ctx(self, Instance.__new__(Instance), self.ctx)
                rt.fire(w, rt.children[self.node][0], c, cst)
                dest = rt.enter(rt.children[self.node][0], c)
            if dest.identity:
                dest = bypass(dest)
            self.replicas[v] = dest
            w.write(dest, item, i == n - 1)
        return 0

    cdef Entity branch_exit(self):
        if self.coll is not None:
            return self.coll
        return self.junction_out()


@cython.final
cdef class SparkSplitEntity(Entity):
    """A split whose replicas run on Spark (docs/spark.md).

    A record is checked here (a missing tag fails locally, as without
    Spark; an empty range drops it) and then waits in the run's batch with
    its group stack.  It stays in ``pending`` until its outputs are emitted,
    so the run cannot end while it waits.  Whichever worker fills the batch,
    or finds the rest of the network quiet (`Runtime.spark_due`), runs it
    (`Runtime.flush_spark`) and writes each input's outputs, in input order,
    to this split's out: so ``!!`` needs no collector here, and determinism
    around the split comes from the group stacks as everywhere else.
    """
    cdef object keys
    cdef long inst

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec
        cdef GStack st = None
        cdef Runtime rt = self.rt
        cdef bint full
        if type(item) is Tagged:
            rec = (<Tagged>item).rec
            st = (<Tagged>item).stack
        else:
            rec = item
        if not len(self.keys.values(rec)):
            if st is not None:
                w.drop(st)
            return 0
        snet_atomic_add(&rt.pending, 1)  # released when its outputs are emitted
        with rt.spark_lock:
            rt.spark_waiting[rt.spark.seq] = (self, st)
            full = rt.spark.add(self.inst, rec)
            snet_atomic_add(&rt.spark_buffered, 1)
        if full:
            rt.flush_spark(w)
        return 0

    cdef Entity resolve_out(self):
        return self.junction_out()  # the worker running a batch writes for every split instance

    cdef Entity branch_exit(self):
        raise SNetRuntimeError("internal error: the operand of a Spark split runs on Spark")


@cython.final
cdef class FeedbackReturn(Entity):
    """Where the operand's outputs return: back into the operand or out."""
    cdef object matcher
    cdef Entity loop
    cdef Ctx ctx_op

    cdef Entity entry(self):
        cdef Entity d
        spin_lock(&self.jlock)
        try:
            d = self.loop
            if d is None:
                d = self.rt.enter(self.rt.children[self.node][0], self.ctx_op)
            if d.identity:
                d = bypass(d)
            self.loop = d
        finally:
            snet_unlock(&self.jlock)
        return d

    cdef int invoke(self, Worker w, object item) except -1:
        cdef object rec = (<Tagged>item).rec if type(item) is Tagged else item
        if self.matcher(rec) >= 0:
            w.write(self.entry(), item, True)
        else:
            w.write(self.resolve_out(), item, True)
        return 0

    cdef Entity branch_exit(self):
        return self


@cython.final
cdef class Collector(Entity):
    """Merges a combinator's branches back in group order (see the module docstring)."""

    cdef Group new_group(self):
        cdef Group g = Group.__new__(Group)
        g.count = 1
        g.owner = self
        g.queue = []
        self.groups.append(g)
        return g

    cdef int invoke(self, Worker w, object item) except -1:
        cdef Tagged t
        cdef Group g
        if item is _WAKE:
            self.release(w)
            return 0
        if type(item) is Tagged and (<Tagged>item).stack.group.owner is self:
            t = <Tagged>item
            g = t.stack.group
            it2 = make_item(t.rec, t.stack.next)
            if len(self.groups) and self.groups[0] is g:
                w.write(self.resolve_out(), it2, False)
            else:
                g.queue.append(it2)
            if snet_atomic_add(&g.count, -1) == 0:
                self.release(w)
            return 0
        if len(self.groups):
            self.stray.append(item)  # not ours: waits until the barrier groups are done
        else:
            w.write(self.resolve_out(), item, True)
        return 0

    cdef int release(self, Worker w) except -1:
        cdef Group h
        cdef Entity dest
        groups = self.groups
        while len(groups):
            h = <Group>groups[0]
            if h.queue:
                dest = self.resolve_out()
                for it in h.queue:
                    w.write(dest, it, False)
                h.queue = []
            if snet_atomic_load(&h.count) == 0:
                groups.popleft()
            else:
                return 0
        if self.stray:
            dest = self.resolve_out()
            for it in self.stray:
                w.write(dest, it, False)
            self.stray = []
        if self.barrier_only:
            self.identity = True
        return 0


@cython.final
cdef class Licence:
    pass


cdef class Worker:
    """One worker thread: its licence list, continuation slot and counters."""

    def __cinit__(self, Runtime rt, int wid, int victim):
        self.rt = rt
        self.wid = wid
        self.refs = []
        self.index = {}
        self.cur = -1
        self.victim = victim
        self.box_time = <double *>PyMem_Malloc(rt.nnodes * sizeof(double))
        self.box_calls = <long *>PyMem_Malloc(rt.nnodes * sizeof(long))
        if self.box_time == NULL or self.box_calls == NULL:
            raise MemoryError()
        for i in range(rt.nnodes):
            self.box_time[i] = 0.0
            self.box_calls[i] = 0

    def __dealloc__(self):
        PyMem_Free(self.box_time)
        PyMem_Free(self.box_calls)

    cdef int write(self, Entity dest, object item, bint last) except -1:
        """Send one item to ``dest``; the last write of an invocation may continue there."""
        cdef Runtime rt = self.rt
        if dest is rt.sink:
            rt.output(item)
            return 0
        snet_atomic_add(&rt.pending, 1)
        if last and self.cont_e is None and snet_try_lock(&dest.lock):
            if saturated(dest):
                snet_unlock(&dest.lock)
                dest.inbox.append(item)
                self.add_licences(dest, 1)
                return 0
            inbox = dest.inbox
            if len(inbox):  # older records first: keep the stream FIFO
                inbox.append(item)
                item = inbox.popleft()
            self.cont_e = dest
            self.cont_item = item
            self.n_cont += 1
            return 0
        dest.inbox.append(item)
        self.add_licences(dest, 1)
        return 0

    cdef int add_licences(self, Entity e, long n) except -1:
        cdef Licence ref
        spin_lock(&self.list_lock)
        try:
            ref = self.index.get(e)
            if ref is not None:
                ref.count += n
            else:
                ref = Licence.__new__(Licence)
                ref.entity = e
                ref.count = n
                self.index[e] = ref
                if self.cur < 0:
                    self.refs.append(ref)
                else:
                    self.refs.insert(self.cur, ref)
                    self.cur += 1
        finally:
            snet_unlock(&self.list_lock)
        return 0

    cdef int drop(self, GStack st) except -1:
        """A record carrying ``st`` is gone: lower its groups, wake collectors that may move on."""
        while st is not None:
            if snet_atomic_add(&st.group.count, -1) == 0:
                self.write(st.group.owner, _WAKE, False)
            st = st.next
        return 0

    cdef int process(self, Entity e, object item) except -1:
        """Invoke ``e`` (locked by us) on ``item``, then follow continuations."""
        cdef Runtime rt = self.rt
        cdef int rc
        while True:
            rc = e.invoke(self, item)
            if rc == 0:
                snet_unlock(&e.lock)
            self.n_invocations += 1
            snet_atomic_add(&rt.pending, -1)
            e = self.cont_e
            if e is None:
                return 0
            item = self.cont_item
            self.cont_e = None
            self.cont_item = None
            if rt.stop:
                return 0

    cdef bint work_own(self) except -1:
        """Use one licence from the own list (head first); True on progress."""
        cdef Licence ref
        cdef Entity e
        cdef Py_ssize_t i = 0
        refs = self.refs
        spin_lock(&self.list_lock)
        try:
            self.scans += 1
            if self.scans % SWEEP_EVERY == 0:
                self.sweep()
            while i < len(refs):
                ref = <Licence>refs[i]
                if ref.count <= 0:
                    del refs[i]
                    del self.index[ref.entity]
                    continue
                e = ref.entity
                if snet_try_lock(&e.lock):
                    if saturated(e):
                        snet_unlock(&e.lock)
                        i += 1
                        continue
                    if not len(e.inbox):  # its records were moved past it (bypass): the licence lapses
                        snet_unlock(&e.lock)
                        ref.count = 0
                        continue
                    ref.count -= 1
                    self.cur = i
                    break
                i += 1
            else:
                return False
        finally:
            snet_unlock(&self.list_lock)
        item = e.inbox.popleft()
        try:
            self.process(e, item)
        finally:
            self.cur = -1
        return True

    cdef void sweep(self):
        """Drop the licences of empty streams (list lock held).

        A licence only says "some record is waiting"; when the inbox is
        empty every licence for it is surplus (records written later bring
        their own).  Licences for identities whose records were moved on
        would otherwise sit at the tail of the list and keep dissolved
        entities alive.
        """
        cdef Licence ref
        cdef list keep = []
        for r in self.refs:
            ref = <Licence>r
            if ref.count > 0 and len(ref.entity.inbox):
                keep.append(ref)
            else:
                del self.index[ref.entity]
        self.refs[:] = keep

    cdef bint holds_work(self):
        """True while a licence of this worker is for a record still waiting (its entity is busy).

        Such a worker is not idle: it waits for a lock, and admitting more
        input meanwhile would only queue records at the front of the network.
        """
        cdef Licence ref
        spin_lock(&self.list_lock)
        try:
            for r in self.refs:
                ref = <Licence>r
                if ref.count > 0 and len(ref.entity.inbox):
                    return True
            return False
        finally:
            snet_unlock(&self.list_lock)

    cdef bint try_input(self) except -1:
        """Admit one input record (one worker at a time)."""
        cdef Runtime rt = self.rt
        cdef Entity dest
        if rt.input_done or self.holds_work() or not snet_try_lock(&rt.input_lock):
            return False
        try:
            if rt.input_done:
                return False
            if rt.throttled and rt.records_in >= rt.thr_off + rt.thr_fac * rt.records_out:
                return False
            dest = rt.root_entry
            if dest is None:
                dest = rt.enter(0, rt.root_ctx)
            if dest.identity:
                dest = bypass(dest)
            rt.root_entry = dest
            if dest.identity and snet_is_locked(&dest.lock):
                # The entry dissolved but another worker is moving records
                # through it: wait rather than queue behind it, so the walker
                # can cut the chain of identities (docs/runtime.md).
                return False
            rt.input_since = snet_now()
            try:
                rec = next(rt.input_iter)
            except StopIteration:
                rt.input_done = True
                return False
            except BaseException as e:
                rt.input_error = e
                rt.input_done = True
                return False
            finally:
                rt.input_since = 0
            if type(rec) is not dict:
                rec = dict(rec)
            rt.records_in += 1
            self.n_inputs += 1
            self.write(dest, rec, True)
        finally:
            snet_unlock(&rt.input_lock)
        if self.cont_e is not None:
            e = self.cont_e
            item = self.cont_item
            self.cont_e = None
            self.cont_item = None
            self.process(e, item)
        return True

    cdef bint try_steal(self) except -1:
        """Take half the licences of the first schedulable stream of a victim."""
        cdef Runtime rt = self.rt
        cdef list workers = rt.workers
        cdef int n = len(workers)
        cdef int j, idx
        cdef Worker v
        cdef Licence ref
        cdef Entity found
        cdef long take = 0
        for j in range(1, n + 1):
            idx = (self.victim + j) % n
            v = <Worker>workers[idx]
            if v is self or not snet_try_lock(&v.steal_lock):
                continue
            found = None
            spin_lock(&v.list_lock)
            try:
                for r in v.refs:
                    ref = <Licence>r
                    if ref.count > 0 and not snet_is_locked(&ref.entity.lock) and not saturated(ref.entity):
                        take = (ref.count + 1) // 2
                        ref.count -= take
                        found = ref.entity
                        break
            finally:
                snet_unlock(&v.list_lock)
                snet_unlock(&v.steal_lock)
            if found is not None:
                self.victim = idx
                self.n_steals += 1
                self.n_stolen += take
                self.add_licences(found, take)
                return True
        return False

    def run(self):
        """The worker loop: own work, then input, then stealing, then a short nap."""
        cdef Runtime rt = self.rt
        cdef int idle = 0
        cdef double t0
        cdef unsigned int nap
        _current.worker = self
        try:
            while not rt.stop and not rt.done:
                t0 = snet_now()
                if self.work_own() or self.try_input() or (rt.steal_enabled and self.try_steal()):
                    self.busy += snet_now() - t0
                    idle = 0
                    continue
                if rt.spark is not None and rt.spark_due() and rt.flush_spark(self):
                    self.busy += snet_now() - t0
                    idle = 0
                    continue
                if rt.consumer_waiting and len(rt.outputs):
                    rt.notify()
                if rt.input_done and snet_atomic_load(&rt.pending) == 0:
                    rt.done = True
                    rt.notify()
                    break
                idle += 1
                nap = IDLE_STEP_US * idle
                if nap > IDLE_MAX_US:
                    nap = IDLE_MAX_US
                with nogil:  # idle: no Python object is touched while napping
                    usleep(nap)
        except BaseException as e:
            rt.fail(e)
        finally:
            snet_atomic_add(&rt.exited, 1)
            rt.notify()


cdef class Runtime:
    """One run of one program: the static tables, the workers, the output channel.

    Created by :mod:`snet.backends.front`; the only Python-facing API is
    ``start``, ``next_output``, ``close``, ``statistics`` and
    ``termination_warnings``.
    """

    def __cinit__(self):
        self.counters = snet_counters_new()
        if self.counters == NULL:
            raise MemoryError()

    def __init__(self, program, records, int workers, throttle, bint steal, int seed,
                 spark=None, double spark_linger=0.05):
        cdef int n = len(program.kind)
        cdef int i
        self.nnodes = n
        self.kind = <int *>PyMem_Malloc(n * sizeof(int))
        self.child0 = <int *>PyMem_Malloc(n * sizeof(int))
        self.exit_mode = <int *>PyMem_Malloc(n * sizeof(int))
        self.next_stage = <int *>PyMem_Malloc(n * sizeof(int))
        self.inst_init = <int *>PyMem_Malloc(n * sizeof(int))
        self.det = <int *>PyMem_Malloc(n * sizeof(int))
        self.conc = <int *>PyMem_Malloc(n * sizeof(int))
        if not (self.kind and self.child0 and self.exit_mode and self.next_stage and self.inst_init
                and self.det and self.conc):
            raise MemoryError()
        for i in range(n):
            self.kind[i] = program.kind[i]
            self.child0[i] = program.child0[i]
            self.exit_mode[i] = program.exit_mode[i]
            self.next_stage[i] = program.next_stage[i]
            self.inst_init[i] = program.inst_init[i]
            self.det[i] = program.det[i]
            self.conc[i] = program.conc[i]
        self.ops = list(program.ops)
        self.children = list(program.children)
        self.node_names = list(program.names)
        self.span_of = program.span_of
        self.outputs = deque()
        self.input_iter = iter(records)
        self.throttled = throttle is not None
        if throttle is not None:
            self.thr_off, self.thr_fac = throttle
        self.steal_enabled = steal
        self.fail_lock = threading.Lock()
        self.partial = {}
        self.partial_lock = threading.Lock()
        self.cond = threading.Condition(threading.Lock())
        self.sink = Sink.__new__(Sink)
        self.sink.setup(self, -1, None)
        self.root_ctx = new_ctx(None, Instance.__new__(Instance), None)
        self.workers = [Worker(self, i, (i + seed) % workers) for i in range(workers)]
        self.threads = []
        self.spark = spark
        self.spark_lock = threading.Lock()
        self.spark_waiting = {}
        self.spark_linger = spark_linger

    def __dealloc__(self):
        PyMem_Free(self.kind)
        PyMem_Free(self.child0)
        PyMem_Free(self.exit_mode)
        PyMem_Free(self.next_stage)
        PyMem_Free(self.inst_init)
        PyMem_Free(self.det)
        PyMem_Free(self.conc)
        if self.counters != NULL:
            snet_counters_release(self.counters)

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
            if self.inst_init[n]:
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
        cdef int k = self.kind[n]
        cdef Entity e
        cdef BoxEntity b
        cdef FilterEntity f
        cdef SyncEntity s
        cdef ParallelEntity p
        cdef StarEntity st
        cdef StarShared sh
        cdef SyncStarEntity z
        cdef SplitEntity sp
        cdef FeedbackReturn fb
        cdef Collector c
        cdef SparkSplitEntity ss
        op = self.ops[n]
        if k == K_BOX:
            b = BoxEntity.__new__(BoxEntity)
            b.setup(self, n, ctx)
            b.op = op.__call__  # the bound method: one lookup per entity, not per call
            b.limit = self.conc[n]
            b.cap = b.limit if b.limit > 1 else 0
            b.done = {}
            return b
        if k == K_FILTER:
            f = FilterEntity.__new__(FilterEntity)
            f.setup(self, n, ctx)
            f.op = op
            return f
        if k == K_SYNC:
            s = SyncEntity.__new__(SyncEntity)
            s.setup(self, n, ctx)
            s.cell = op.new_cell()
            return s
        if k == K_PAR:
            p = ParallelEntity.__new__(ParallelEntity)
            p.setup(self, n, ctx)
            p.router = op.route
            p.branches = [None] * len(self.children[n])
            if self.det[n] or self.inst_init[n]:
                c = self.new_collector(n, ctx)
                c.barrier_only = not self.det[n]
                p.coll = c
            return p
        if k == K_STAR:
            sh = StarShared.__new__(StarShared)
            sh.rt = self
            sh.node = n
            sh.ctx = ctx
            sh.matcher = op.first
            sh.det = self.det[n]
            st = StarEntity.__new__(StarEntity)
            st.setup(self, n, ctx)
            st.sh = sh
            st.k = 0
            if sh.det:
                sh.coll = self.new_collector(n, ctx)
            return st
        if k == K_SYNCSTAR:
            z = SyncStarEntity.__new__(SyncStarEntity)
            z.setup(self, n, ctx)
            z.matcher = op[0].first
            z.shape = op[1]
            z.sync_node = op[2]
            z.cells = []
            return z
        if k == K_SPLIT:
            sp = SplitEntity.__new__(SplitEntity)
            sp.setup(self, n, ctx)
            sp.keys = op
            sp.replicas = {}
            if self.det[n]:
                sp.coll = self.new_collector(n, ctx)
            return sp
        if k == K_FEEDBACK:
            fb = FeedbackReturn.__new__(FeedbackReturn)
            fb.setup(self, n, ctx)
            fb.matcher = op.first
            fb.ctx_op = new_ctx(fb, ctx.inst, ctx)
            return fb.entry()
        if k == K_SPARKSPLIT:
            ss = SparkSplitEntity.__new__(SparkSplitEntity)
            ss.setup(self, n, ctx)
            ss.keys = op
            with self.spark_lock:
                ss.inst = self.spark.new_instance(n)
            return ss
        raise SNetRuntimeError(f"internal error: no entity for node kind {k}")

    cdef Collector new_collector(self, int n, Ctx ctx):
        cdef Collector c = Collector.__new__(Collector)
        c.setup(self, n, ctx)
        c.groups = deque()
        c.stray = []
        return c

    cdef int fire(self, Worker w, int n, Ctx ctx, GStack st) except -1:
        """Fire the initialisers of the instance rooted at ``n`` (language.md §6.4).

        Entities on the way to an initialiser are built now and recorded in
        the instance, so that records entering later find the same ones.
        Serial stages fire downstream first, so an initialiser's outputs
        pass downstream initialiser stages only after those have fired.
        """
        cdef int k
        cdef ParallelEntity p
        cdef FeedbackReturn fb
        cdef Group g0
        cdef Ctx c
        cdef double t0
        if not self.inst_init[n]:
            return 0
        k = self.kind[n]
        if k == K_NET:
            return self.fire(w, self.child0[n], ctx, st)
        if k == K_SERIAL:
            for s in reversed(self.children[n]):
                self.fire(w, s, ctx, st)
            return 0
        if k == K_PAR:
            p = <ParallelEntity>self.make(n, ctx)
            ctx.inst.eager[n] = p
            g0 = p.coll.new_group()  # count 1: a claim held while firing
            c = new_ctx(p, ctx.inst, ctx)
            for b in self.children[n]:
                self.fire(w, b, c, push(g0, st))
            if snet_atomic_add(&g0.count, -1) == 0:
                w.write(p.coll, _WAKE, False)
            return 0
        if k == K_FEEDBACK:
            fb = FeedbackReturn.__new__(FeedbackReturn)
            fb.setup(self, n, ctx)
            fb.matcher = self.ops[n].first
            fb.ctx_op = new_ctx(fb, ctx.inst, ctx)
            ctx.inst.eager[n] = fb
            self.fire(w, self.child0[n], fb.ctx_op, st)
            return 0
        if k == K_INITBOX:
            t0 = snet_now()
            outs = self.ops[n].fire()
            w.box_time[n] += snet_now() - t0
            w.box_calls[n] += 1
            if not outs:
                return 0
            if st is not None:
                spawn(st, len(outs))
            dest = self.exit_target(n, ctx)
            for o in outs:
                w.write(dest, make_item(o, st), False)
        return 0

    # -- splits on Spark ----------------------------------------------------

    cdef bint spark_due(self):
        """True when the batch should run although it is not full.

        That is when nothing but the batch is in flight (every pending item
        is a batched record) and no input can come soon: the input has
        ended, the throttle holds it, or the input iterator has been waiting
        for its next record longer than ``spark_linger``.  While input flows
        the batch fills up instead.
        """
        cdef long b = snet_atomic_load(&self.spark_buffered)
        if b == 0 or snet_atomic_load(&self.pending) != b:
            return False
        if self.input_done:
            return True
        if self.throttled and self.records_in >= self.thr_off + self.thr_fac * self.records_out:
            return True
        cdef double since = self.input_since
        return since > 0 and snet_now() - since >= self.spark_linger

    cdef bint flush_spark(self, Worker w) except -1:
        """Run the batch on Spark and write every input's outputs (one batch at a time).

        Records that arrive meanwhile start the next batch; it runs at once
        if it is full by the time this one is done.  An executor's error is
        raised after the outputs of the inputs before it have been written.
        """
        cdef SparkSplitEntity e
        cdef GStack st
        cdef bint ran = False
        while snet_try_lock(&self.spark_flushing):
            try:
                while not self.stop:
                    with self.spark_lock:
                        taken = self.spark.take()
                    if taken is None:
                        break
                    ran = True
                    error = None
                    try:
                        results = self.spark.run(taken)
                    except SNetRuntimeError as exc:
                        results = getattr(exc, "partial", [])
                        error = exc
                    for _instance, seq, outs in results:
                        with self.spark_lock:
                            pair = self.spark_waiting.pop(seq)
                        e = <SparkSplitEntity>pair[0]
                        st = <GStack>pair[1]
                        e.emit_list(w, outs, st, False)
                        snet_atomic_add(&self.spark_buffered, -1)
                        snet_atomic_add(&self.pending, -1)
                    if error is not None:
                        raise error
                    with self.spark_lock:
                        if not self.spark.full():
                            break
            finally:
                snet_unlock(&self.spark_flushing)
            # A worker that filled the batch just before the unlock could not take
            # the flush: look again, so that a full batch never waits.
            with self.spark_lock:
                if self.stop or not self.spark.full():
                    break
        return ran

    # -- output, failure, termination --------------------------------------

    cdef int output(self, object item) except -1:
        if type(item) is Tagged:  # cannot happen: every group is popped by its collector
            item = (<Tagged>item).rec
        self.outputs.append(item)
        self.records_out += 1
        if self.consumer_waiting and len(self.outputs) >= NOTIFY_BATCH:
            self.notify()
        return 0

    cdef void notify(self):
        try:
            with self.cond:
                self.cond.notify_all()
        except BaseException:
            pass

    cdef void note_partial(self, object cell, int node, bint fired):
        """Keep the unfired cells that hold records, for the termination warnings."""
        key = id(cell)
        with self.partial_lock:
            if fired:
                self.partial.pop(key, None)
            elif key not in self.partial:
                self.partial_seq += 1
                self.partial[key] = (self.partial_seq, cell, node)

    def fail(self, error):
        with self.fail_lock:
            if self.error is None:
                self.error = error
            self.stop = True
        self.notify()

    def start(self):
        """Fire the top-level initialisers, then start the worker threads."""
        self.started = snet_now()
        previous = getattr(_current, "worker", None)
        _current.worker = self.workers[0]
        try:
            self.fire(<Worker>self.workers[0], 0, self.root_ctx, None)
        except BaseException as e:
            self.fail(e)
        finally:
            _current.worker = previous
        for w in self.workers:
            t = threading.Thread(target=w.run, name=f"snet-front-worker-{(<Worker>w).wid}", daemon=True)
            self.threads.append(t)
        for t in self.threads:
            t.start()

    def next_output(self, double timeout=0.02):
        """The next output record; raises the run's error; ``StopIteration`` at termination."""
        while True:
            if len(self.outputs):
                return self.outputs.popleft()
            if self.error is not None:
                raise self.error
            if self.done and snet_atomic_load(&self.exited) >= len(self.workers):
                if len(self.outputs):
                    continue
                if self.finished == 0:
                    self.finished = snet_now()
                if self.input_error is not None:
                    err, self.input_error = self.input_error, None
                    raise err
                raise StopIteration
            with self.cond:
                self.consumer_waiting = True
                if not len(self.outputs) and self.error is None and not self.done:
                    self.cond.wait(timeout)
                self.consumer_waiting = False

    def halt(self):
        """Ask the workers to stop (they finish the invocation they are in); ``close`` joins them."""
        self.stop = True

    def close(self):
        """Stop the workers and join them; safe to call twice."""
        self.stop = True
        for t in self.threads:
            t.join()
        if self.finished == 0:
            self.finished = snet_now()

    def debug_root_entry(self):
        """The entity records from the input enter now (for tests)."""
        return self.root_entry

    def termination_warnings(self):
        """(node id, filled, total) for every unfired cell that holds records, in creation order."""
        with self.partial_lock:
            entries = sorted(self.partial.values(), key=lambda e: e[0])
        return [(node, cell.filled(), cell.shape.count) for _, cell, node in entries if cell.filled() > 0]

    def statistics(self):
        """Counters of the run so far, as plain data."""
        cdef Worker w
        boxes = {}
        for w in self.workers:
            for i in range(self.nnodes):
                if w.box_calls[i]:
                    name = self.node_names[i]
                    entry = boxes.setdefault(name, [0, 0.0])
                    entry[0] += w.box_calls[i]
                    entry[1] += w.box_time[i]
        end = self.finished if self.finished else snet_now()
        return {
            "seconds": end - self.started if self.started else 0.0,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "boxes": {name: {"calls": c, "seconds": s} for name, (c, s) in sorted(boxes.items())},
            "entities": {"created": self.counters.created, "alive": self.counters.alive,
                         "peak": self.counters.peak},
            "invocations": sum((<Worker>w).n_invocations for w in self.workers),
            "continuations": sum((<Worker>w).n_cont for w in self.workers),
            "steals": sum((<Worker>w).n_steals for w in self.workers),
            "licences_stolen": sum((<Worker>w).n_stolen for w in self.workers),
            "records_moved_past_identities": sum((<Worker>w).n_moved for w in self.workers),
            "workers": [{"busy_seconds": (<Worker>w).busy, "invocations": (<Worker>w).n_invocations,
                         "continuations": (<Worker>w).n_cont, "inputs": (<Worker>w).n_inputs,
                         "licences_stolen": (<Worker>w).n_stolen} for w in self.workers],
        }
