# Entities of boxes, filters, synchro-cells and the synchro-cell star.
#
# Each class has a factory, registered with the core when the module is
# initialised, that builds it from its node's template in the plan
# (:mod:`snet.plan`).  See core.pxi for the design of the runtime.

cimport cython
from asyncio import run_coroutine_threadsafe
from collections import deque
from functools import partial

from snet.core.aloop import box_loop
from snet.core.boxes import Deferred, _FREE_THREADED_BUILD
from snet.core.limits import unfolds_for_ever
from snet.core.boxes cimport BoxCaller
from snet.tagexpr import TagExpressionError
from snet.requests import set_current_request

from snet_front.atomics cimport snet_atomic_add, snet_atomic_load, snet_now, snet_unlock, snet_flag_store
from snet_front.kinds cimport K_BOX, K_FILTER, K_SYNC, K_SYNCSTAR


cdef long emit_in_order(Entity e, Writer w, dict done, long emit_seq) except -1:
    """Emit a box's reorder buffer (seq -> (outputs, stack)) from ``emit_seq`` on while the next is there.

    Returns the next sequence number to emit; the caller holds the box's ``rlock``.
    """
    while done:
        pair = done.pop(emit_seq, None)
        if pair is None:
            break
        e.emit_list(w, pair[0], pair[1], False)
        emit_seq += 1
    return emit_seq


cdef enum:
    TIMED_CALLS = 64  # calls of a box each worker times before it may sample
    SAMPLE_EVERY = 16  # then one call in this many, for a box whose calls are short

cdef double SLOW_CALL = 20e-6  # seconds: a box whose calls average this long has every call timed


@cython.final
@cython.trashcan(True)
cdef class BoxEntity(Entity):
    """A box instance; up to ``limit`` concurrent calls, outputs kept in input order.

    ``caller`` is the box caller when the plan has one bare (no error
    policy around it): a one-at-a-time box then calls its C-level entry,
    which hands a lone output record over as itself, not in a list.
    """
    cdef object op
    cdef BoxCaller caller
    cdef int limit
    cdef long next_seq
    cdef long emit_seq
    cdef dict done
    cdef int rlock

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef double t0 = 0.0
        cdef long seq
        cdef int early = 0
        cdef long calls
        cdef int every
        if self.limit <= 1:
            # Box time: every call of a box this worker has called fewer than TIMED_CALLS times
            # or whose calls average at least SLOW_CALL; otherwise one call in SAMPLE_EVERY,
            # counted that many times (reading the clock twice cost 8 % of a trivial box's hop).
            calls = w.box_calls[self.node]
            if calls < TIMED_CALLS or w.box_time[self.node] >= calls * SLOW_CALL:
                every = 1
            else:
                every = SAMPLE_EVERY if calls % SAMPLE_EVERY == 0 else 0
            if every:
                t0 = snet_now()
            outs = self.op(rec) if self.caller is None else self.caller.hop(rec)
            if every:
                w.box_time[self.node] += (snet_now() - t0) * every
            w.box_calls[self.node] += 1
            if type(outs) is dict:  # one output: the walk goes on with it
                w.write(self.resolve_out(), make_item(outs, st), True)
            else:
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
                self.emit_seq = emit_in_order(self, w, self.done, self.emit_seq)
            finally:
                snet_unlock(&self.rlock)
        finally:
            snet_atomic_add(&self.running, -1)
        return early

    cdef bint settled(self):
        return snet_atomic_load(&self.running) == 0 and not self.done


@cython.final
@cython.trashcan(True)
cdef class AsyncBoxEntity(Entity):
    """An ``async def`` box instance: its calls run on the box loop, up to ``cap`` at once, outputs in input order.

    ``invoke`` numbers the record, starts the box's coroutine on the loop
    (``snet.core.aloop``) and returns: the worker goes on with other work
    while the call waits for its I/O.  The call counts as pending (the run
    cannot terminate under it) and as running (``saturated`` holds the
    inbox at ``cap`` calls).  When the coroutine is done the loop's thread
    queues the entity on ``rt.completions``; a worker then finishes the
    call (``complete``): output checks and flow inheritance
    (``call.resume``), then emission in input order through the reorder
    buffer, as for a concurrent box.
    """
    cdef object op
    cdef object resume
    cdef object loop
    cdef long next_seq
    cdef long emit_seq
    cdef dict done
    cdef int rlock

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef long seq = self.next_seq
        self.next_seq += 1
        outs = self.op(rec)
        if type(outs) is not Deferred:  # no coroutine after all (the policy skipped a failure, say)
            snet_atomic_add(&self.running, 1)
            snet_atomic_add(&self.rt.pending, 1)
            self.finish(w, seq, outs, stack_of(item))
            return 0
        snet_atomic_add(&self.running, 1)
        snet_atomic_add(&self.rt.pending, 1)  # the call in flight: released in finish()
        future = run_coroutine_threadsafe((<object>outs).coroutine, self.loop)
        future.add_done_callback(partial(self._done, seq, item))
        return 0

    def _done(self, long seq, object item, object future):
        """On the box loop's thread: hand the finished call to the workers."""
        self.rt.completions.append((self, (seq, item, future)))
        self.rt.wake_idle(False)

    cdef int complete(self, Writer w, object done) except -1:
        seq, item, future = done
        rec = record_of(item)
        if self.rt.tracking:
            set_current_request(request_of(item))
        t0 = snet_now()
        try:
            outs = self.resume(future, rec)
        except BaseException:
            snet_atomic_add(&self.running, -1)
            snet_atomic_add(&self.rt.pending, -1)
            raise
        w.box_time[self.node] += snet_now() - t0
        w.box_calls[self.node] += 1
        self.finish(w, seq, outs, stack_of(item))
        return 0

    cdef int finish(self, Writer w, long seq, object outs, GStack st) except -1:
        spin_lock(&self.rlock)
        try:
            self.done[seq] = (outs, st)
            self.emit_seq = emit_in_order(self, w, self.done, self.emit_seq)
        finally:
            snet_unlock(&self.rlock)
            snet_atomic_add(&self.running, -1)
            snet_atomic_add(&self.rt.pending, -1)  # after the outputs were written: they are pending now
        return 0


@cython.final
@cython.trashcan(True)
cdef class FilterEntity(Entity):
    cdef object op
    cdef object raw  # the compiled filter without the error translation (None: call op)

    cdef int invoke(self, Writer w, object item) except -1:
        rec = record_of(item)
        if self.raw is None:
            outs = self.op(rec)
        else:
            try:
                outs = self.raw(rec)
            except (KeyError, TagExpressionError) as e:
                raise self.op.error(e, rec) from None
        self.emit_list(w, outs, stack_of(item), True)
        return 0

    cdef bint settled(self):
        return True


cdef bint FREE_THREADED = _FREE_THREADED_BUILD


@cython.final
cdef class CellState:
    """One synchro-cell's state (a plain cell's or one cell of a sync-star):
    :class:`snet.core.semantics.SyncCell`'s state and rules, typed.

    ``slots[i]`` is None exactly for the indices in ``empty`` until the cell
    fires; then ``fired`` is set and ``slots`` dropped.  ``filled`` and
    ``stored_records`` are what the termination warnings read.
    """
    cdef readonly object shape
    cdef readonly list slots
    cdef readonly list empty
    cdef readonly bint fired

    def filled(self):
        """How many slots hold a record (0 once fired)."""
        return 0 if self.fired else self.shape.count - len(self.empty)

    def stored_records(self):
        """How many distinct records the cell holds."""
        return 0 if self.fired else len({id(r) for r in self.slots if r is not None})

    cdef object take(self, object record, object hits, tuple later):
        """Offer a record that matches the patterns ``hits`` (all of them; None: not tested yet).

        Returns what leaves the cell now, or None if the record was stored: it
        fills the empty slots among ``hits``; a record that fills none leaves
        unchanged, and the record that fills the last one is replaced by the
        merged record: slot 1's record whole, then from each later slot the
        labels of its pattern (``later``), as ``snet.core.compiled.merge_sync``.
        """
        cdef list slots = self.slots
        cdef dict merged, rec
        cdef Py_ssize_t j
        cdef bint stored = False
        if self.fired:
            return record
        if hits is None:
            hits = self.shape.matcher.matching(record, self.empty)  # raises the guard's error
        for i in hits:
            if slots[i] is None:
                slots[i] = record
                stored = True
        if not stored:
            return record
        self.empty = [i for i in self.empty if slots[i] is None]
        if self.empty:
            return None
        self.fired = True
        self.slots = None
        if FREE_THREADED:  # see snet.core.boxes: a copy locks the dict twice there
            merged = {}
            merged.update(<dict>slots[0])
        else:
            merged = (<dict>slots[0]).copy()
        for j in range(len(later)):
            rec = <dict>slots[j + 1]
            for label in <tuple>later[j]:
                merged[label] = rec[label]
        return merged


cdef CellState new_cell_state(object shape):
    cdef CellState c = CellState.__new__(CellState)
    c.shape = shape
    c.slots = [None] * shape.count
    c.empty = list(range(shape.count))
    return c


@cython.final
@cython.trashcan(True)
cdef class SyncEntity(Entity):
    """A synchro-cell instance; once fired it is an identity that writers bypass."""
    cdef CellState cell
    cdef object all_slots  # raw_all of the patterns' matcher: every pattern a record matches
    cdef tuple slot_labels  # the patterns' labels when none has a guard (tested here, no call)
    cdef tuple later  # the labels of each pattern after the first (what the merged record takes)

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef bint was_fired = self.cell.fired
        cdef Instance inst
        hits = None
        if not was_fired:
            hits = slots_matching(rec, self.slot_labels, self.all_slots)
        res = self.cell.take(rec, hits, self.later)
        if res is None:
            # A parked record stops counting for its input (language.md §7).
            if st is not None:
                w.drop(st)
            self.rt.note_partial(self.cell, self.node, False)
            return 0
        if not was_fired and self.cell.fired:
            snet_flag_store(&self.identity, True)
            self.rt.note_partial(self.cell, self.node, True)
            inst = self.ctx.inst.root
            if inst is not None and inst.owner is not None and inst.entry is self:
                inst.owner.hint_fresh(inst)  # a split replica's entry: its split may skip it now
        w.write(self.resolve_out(), make_item(res, st), True)
        return 0


@cython.final
@cython.trashcan(True)
cdef class SyncStarEntity(Entity):
    """``[| ... |] * P`` run as one entity (the zipper of the C runtime).

    ``cells`` maps each unfired cell's replica to ``(replica, cell)``, in
    replica order (a dict: a fired cell leaves it at no cost); fired cells are identities, and the exit test of an unchanged
    record gives the same answer at every replica, so a record only needs
    the unfired ones.  ``waiting[i]`` lists, in replica order, the unfired
    cells whose slot *i* is empty.  A record matching the patterns M goes to
    the first cell with an empty slot in M, which is the earliest head of
    ``waiting[i]`` for i in M: no walk along the replicas (the C zipper's
    mask grouping, taken further).  A merged record continues after its
    cell.  One entity handles every record in arrival order, which is also
    the order ``**`` asks for.
    """
    cdef object exits  # the exit patterns' PatternMatcher (for its errors)
    cdef object first_exit  # its raw_first: the exit test without the error translation
    cdef tuple exit_labels  # the exit patterns' labels when none has a guard (tested here, no call)
    cdef object all_slots  # raw_all of the cell patterns' matcher: every pattern a record matches
    cdef tuple slot_labels  # the cell patterns' labels when none has a guard
    cdef tuple later  # the labels of each pattern after the first, which a merged record takes from its slot
    cdef object shape
    cdef int sync_node
    cdef dict cells  # replica -> (replica, cell), the unfired ones, in replica order
    cdef list waiting
    cdef long replicas

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef long after = -1  # the replica the record has passed (-1: none yet)
        cdef Instance inst
        cdef bint fresh
        cdef CellState cell
        if self.waiting is None:
            # Plain lists: most replicas of a split hold one cell or two (a deque
            # costs ten times a short list); `new_cell` turns a long one into a deque.
            self.waiting = [[] for _ in range(self.shape.count)]
        while True:
            exits = first_pattern(rec, self.exit_labels, self.first_exit, self.exits)
            if exits >= 0:
                w.write(self.resolve_out(), make_item(rec, st), True)
                return 0
            # None where a guard cannot be evaluated: walk, so that it fails where the definition's walk does
            hits = slots_matching(rec, self.slot_labels, self.all_slots)
            if hits is not None and not hits:  # it would pass every later replica unchanged: it stays here for ever
                self.rt.park(self.node, rec)
                return 0
            entry = self.first_after(after) if hits is None else self.first_waiting(hits, after)
            fresh = entry is None
            if fresh:
                if w.safe_point():  # a long walk along new replicas: the run may be stopping
                    return 0
                entry = self.new_cell()
                self.rt.unfolded(self.node, rec)
            cell = entry[1]
            before = tuple(cell.empty)
            res = cell.take(rec, hits, self.later)
            self.unlist(entry, before)
            if res is None:  # stored
                if st is not None:
                    w.drop(st)
                self.rt.note_partial(cell, self.sync_node, False)
                return 0
            if cell.fired:
                if fresh:  # it filled every pattern alone: it comes out unchanged, before every replica
                    raise unfolds_for_ever(self.rt.span_of(self.node), rec)
                del self.cells[entry[0]]
                snet_atomic_add(&self.rt.cells_held, -1)
                self.rt.note_partial(cell, self.sync_node, True)
                if not self.cells and self.ctx.inst.members is not None:
                    # Back to its fresh state: its split may drop the replica (docs/runtime.md).
                    inst = self.ctx.inst.root
                    if inst is not None and inst.owner is not None:
                        inst.owner.hint_fresh(inst)
            elif fresh:  # (walking) a fresh cell let it pass unchanged: so will every later one
                self.rt.park(self.node, rec)
                return 0
            after = entry[0]
            rec = res

    cdef bint settled(self):
        return not self.cells  # every cell it made has fired (fired cells are identities it forgot)

    cdef object first_waiting(self, object hits, long after):
        """The earliest unfired cell after ``after`` with an empty slot among ``hits`` (None: none yet)."""
        cdef long best = -1, k
        entry = None
        for i in hits:
            for cand in <object>self.waiting[i]:
                k = cand[0]
                if k > after:
                    if best < 0 or k < best:
                        best = k
                        entry = cand
                    break
        return entry

    cdef object first_after(self, long after):
        """The first unfired cell after replica ``after``, in replica order (None: none yet)."""
        for k in self.cells:
            if k > after:
                return self.cells[k]
        return None

    cdef int unlist(self, object entry, tuple before) except -1:
        """Take ``entry`` off the waiting lists of the slots it just filled (it is usually their head)."""
        cdef CellState cell = entry[1]
        for j in before:
            if cell.fired or j not in cell.empty:
                q = self.waiting[j]
                if q[0] is not entry:
                    q.remove(entry)
                elif type(q) is list:
                    del q[0]
                else:
                    q.popleft()
        return 0

    cdef object new_cell(self):
        """A new replica's cell at the end of the chain: (replica, cell), on every waiting list."""
        entry = (self.replicas, new_cell_state(self.shape))
        self.replicas += 1
        self.cells[entry[0]] = entry
        snet_atomic_add(&self.rt.cells_held, 1)
        cdef Py_ssize_t i
        for i in range(len(self.waiting)):
            q = self.waiting[i]
            q.append(entry)
            if type(q) is list and len(q) > LONG_WAIT:
                self.waiting[i] = deque(q)  # taking the head of a long list would cost its length
        return entry


cdef enum:
    LONG_WAIT = 32  # cells waiting for one slot past which a sync-star keeps them in a deque

# -- factories ------------------------------------------------------------------

cdef Entity make_box(Network net, int n, Ctx ctx):
    cdef AsyncBoxEntity a
    if net.nodes[n].deferred:
        a = AsyncBoxEntity.__new__(AsyncBoxEntity)
        a.setup(net, n, ctx)
        a.op = net.nodes[n].call.__call__
        a.resume = net.nodes[n].call.resume
        a.loop = box_loop()
        a.cap = net.conc[n]
        a.done = {}
        return a
    cdef BoxEntity b = BoxEntity.__new__(BoxEntity)
    b.setup(net, n, ctx)
    call = net.nodes[n].call
    b.op = call.__call__  # the bound method: one lookup per entity, not per call
    if type(call) is BoxCaller:
        b.caller = <BoxCaller>call
    b.limit = net.conc[n]
    b.cap = b.limit if b.limit > 1 else 0
    b.done = {}
    return b


cdef Entity make_filter(Network net, int n, Ctx ctx):
    cdef FilterEntity f = FilterEntity.__new__(FilterEntity)
    f.setup(net, n, ctx)
    f.op = net.nodes[n].apply
    f.raw = getattr(f.op, "raw", None)  # (an --on-error policy wraps the filter: no raw function)
    return f


cdef Entity make_sync(Network net, int n, Ctx ctx):
    cdef SyncEntity s = SyncEntity.__new__(SyncEntity)
    s.setup(net, n, ctx)
    shape = net.nodes[n].shape
    s.cell = new_cell_state(shape)
    s.slot_labels = shape.matcher.labels
    if s.slot_labels is None:
        s.all_slots = shape.matcher.raw_all
    s.later = shape.later
    if net.ckpt_entities is not None:
        ckpt_adopt(net, s)
    return s


cdef Entity make_sync_star(Network net, int n, Ctx ctx):
    cdef SyncStarEntity z = SyncStarEntity.__new__(SyncStarEntity)
    node = net.nodes[n]
    z.setup(net, n, ctx)
    z.exits = node.exits
    z.exit_labels = node.exits.labels
    if z.exit_labels is None:
        z.first_exit = node.exits.raw_first
    z.slot_labels = node.shape.matcher.labels
    if z.slot_labels is None:
        z.all_slots = node.shape.matcher.raw_all
    z.later = node.shape.later
    z.shape = node.shape
    z.sync_node = node.cell
    z.cells = {}
    if net.ckpt_entities is not None:
        ckpt_adopt(net, z)
    return z


register_factory(K_BOX, make_box)
register_factory(K_FILTER, make_filter)
register_factory(K_SYNC, make_sync)
register_factory(K_SYNCSTAR, make_sync_star)
