# Entities of boxes, filters, synchro-cells and the synchro-cell star.
#
# Each class has a factory, registered with the core when the module is
# initialised, that builds it from its node's template in the plan
# (:mod:`snet.plan`).  See core.pxi for the design of the runtime.

cimport cython
from posix.time cimport clock_gettime, timespec, CLOCK_THREAD_CPUTIME_ID

from snet.core.boxes import Deferred
from snet.core.limits import unfolds_for_ever
from snet.core.boxes cimport BoxCaller
from snet.core.cells cimport SyncCell, SyncStarIndex, new_cell, patterns_matched
from snet.tagexpr import TagExpressionError
from snet.requests import set_current_request

from snet_front.atomics cimport snet_atomic_add, snet_atomic_load, snet_now, snet_unlock, snet_flag_store
from snet_front.kinds cimport K_BOX, K_FILTER, K_SYNC, K_SYNCSTAR


cdef long emit_or_hold(Entity e, Writer w, dict done, long emit_seq, long seq, object outs, GStack st) except -1:
    """Call ``seq``'s outputs are made: emit them if they are next in order, else keep them in the reorder buffer
    ``done``; then emit whatever follows in order.  Returns the next sequence number to emit; the caller holds
    the box's ``rlock``.

    Outputs kept count in ``Network.reordered``: made, not yet out, they
    hold input admission back as outputs waiting for the consumer do (a call
    that stalls would otherwise let the other workers admit and finish input
    without bound behind it).
    """
    if seq == emit_seq and not done:  # the next in order: no stop in the reorder buffer
        e.emit(w, outs, st, False)
        return emit_seq + 1
    done[seq] = (outs, st)
    snet_atomic_add(&e.rt.reordered, len(outs))
    return emit_in_order(e, w, done, emit_seq)


cdef long emit_in_order(Entity e, Writer w, dict done, long emit_seq) except -1:
    """Emit a box's reorder buffer (seq -> (outputs, stack)) from ``emit_seq`` on while the next is there.

    Returns the next sequence number to emit; the caller holds the box's ``rlock``.
    """
    while done:
        pair = done.pop(emit_seq, None)
        if pair is None:
            break
        snet_atomic_add(&e.rt.reordered, -len(pair[0]))
        e.emit(w, pair[0], pair[1], False)
        emit_seq += 1
    return emit_seq


cdef inline double thread_cpu() noexcept nogil:
    """This thread's CPU time (seconds): against the wall time of a call, how much of it the call computed."""
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef enum:
    TIMED_CALLS = 64  # calls of a box each worker times before it may sample
    SAMPLE_EVERY = 16  # then one call in this many, for a box whose calls are short
    WALK_SAMPLE_EVERY = 128  # ... and one walk in this many of a fused chain whose boxes are all short

cdef double SLOW_CALL = 20e-6  # seconds: a box whose calls average this long has every call timed
cdef double QUICK_CALL = 5e-6  # seconds: with the GIL, a box whose calls average less runs them one at a time

cdef enum:
    CPU_EVERY = 4  # of the sampled calls of a short box, one in this many has its CPU time read too


cdef inline int cpu_weight(long calls, int timed, long period) noexcept:
    """How many calls a call's CPU time counts for (0: not read), for a box the controller tunes.

    Reading the thread's CPU clock is a system call (no vDSO for it), about
    ten times the wall clock's cost: a call timed alone (``timed`` 1: few
    calls so far, or slow ones) has it read, a sampled call of a short box
    only one time in ``CPU_EVERY`` (``period``: one call in so many is
    sampled).  The controller uses the ratio of CPU to wall time, which the
    subsample estimates.
    """
    if timed <= 1:
        return timed
    return timed * CPU_EVERY if (calls // period) % CPU_EVERY == 0 else 0


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
    cdef bint auto  # the limit is the node's level, ``rt.conc[node]``, which the controller changes
    cdef long next_seq
    cdef long emit_seq
    cdef dict done
    cdef int rlock
    cdef tuple compiled  # the node's (record shape, its CWalk or None), once looked up (``walked``); None: not yet

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef double t0 = 0.0
        cdef double c0 = 0.0
        cdef long seq
        cdef int early = 0
        cdef long calls
        cdef int every
        cdef int cw
        cdef bint one = self.limit <= 1
        if self.auto:
            # At level 1 with no call in flight, the cheap path (the lock stays held for the
            # call; a concurrent call would emit out of order, so none may be running).
            one = self.rt.conc[self.node] <= 1 and snet_atomic_load(&self.running) == 0
        elif not one and self.rt.gil:
            # With the GIL, calls that are all quick gain nothing from overlapping (each holds the GIL
            # throughout) and pay the reorder buffer: the cheap path too, while none is in flight
            calls = w.box_calls[self.node]
            if calls >= TIMED_CALLS and w.box_time[self.node] < calls * QUICK_CALL:
                one = snet_atomic_load(&self.running) == 0
        if one:
            # Box time: every call of a box this worker has called fewer than TIMED_CALLS times
            # or whose calls average at least SLOW_CALL; otherwise one call in SAMPLE_EVERY,
            # counted that many times (reading the clock twice cost 8 % of a trivial box's hop).
            calls = w.box_calls[self.node]
            if calls < TIMED_CALLS or w.box_time[self.node] >= calls * SLOW_CALL:
                every = 1
            else:
                every = SAMPLE_EVERY if calls % SAMPLE_EVERY == 0 else 0
            cw = cpu_weight(calls, every, SAMPLE_EVERY) if self.auto and every else 0
            if every:
                if cw:
                    c0 = thread_cpu()
                t0 = snet_now()
            outs = self.op(rec) if self.caller is None else self.walked(rec)
            if every:
                time_call(w, self.node, snet_now() - t0, every)
                if cw:
                    w.box_cpu[self.node] += (thread_cpu() - c0) * cw
            w.box_calls[self.node] += 1
            self.emit(w, outs, st, True)  # (one output: the walk goes on with it)
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
            # Every call of an automatic box is timed (the controller reads them); the others' as in the
            # cheap path above, one in SAMPLE_EVERY once the box is known to be quick
            calls = w.box_calls[self.node]
            if self.auto or calls < TIMED_CALLS or w.box_time[self.node] >= calls * SLOW_CALL:
                every = 1
            else:
                every = SAMPLE_EVERY if calls % SAMPLE_EVERY == 0 else 0
            if self.auto:
                c0 = thread_cpu()
            if every:
                t0 = snet_now()
            if self.caller is None:
                outs = self.op(rec)
            else:  # (one output as itself, else a list: the reorder buffer takes lists)
                outs = self.walked(rec)
                if type(outs) is dict:
                    outs = [outs]
            if every:
                time_call(w, self.node, snet_now() - t0, every)
            if self.auto:
                w.box_cpu[self.node] += thread_cpu() - c0
            w.box_calls[self.node] += 1
            spin_lock(&self.rlock)
            try:
                self.emit_seq = emit_or_hold(self, w, self.done, self.emit_seq, seq, outs, st)
            finally:
                snet_unlock(&self.rlock)
        except BaseException:
            # The run fails: the box stays locked, as a call that holds the lock leaves it, so that no later
            # record is taken from its inbox while the workers finish what is queued elsewhere (workers.pxi).
            # (Held already: by another failed call, or for a moment by a worker numbering a record, which
            # the workers' loop then leaves in the inbox, the box being among the failed ones.)
            snet_try_lock(&self.lock)
            raise
        finally:
            snet_atomic_add(&self.running, -1)
        return early

    cdef object walked(self, object rec):
        """``rec``'s outputs through the box caller (one as itself, else a list), as ``BoxCaller.hop`` gives them.

        The records of the first shape the node sees take a compiled walk of
        the box alone (walks.pxi), made once for every replica of the node:
        its call and the checks of its result in C.  Anything it does not
        take for granted, and records of other shapes, go through the caller.
        """
        cdef tuple compiled = self.compiled
        if compiled is None and type(rec) is dict:
            compiled = node_walk(self.rt, self.node, (self.caller,), <dict>rec)
            # Set once, under a lock: concurrent calls may get here together, and two stores of the field on
            # a free-threaded build could release the same old value twice
            spin_lock(&self.rlock)
            try:
                if self.compiled is None:
                    self.compiled = compiled
            finally:
                snet_unlock(&self.rlock)
        if compiled is not None and compiled[1] is not None and type(rec) is dict:
            if same_labels(<dict>rec, <tuple>compiled[0]):
                res = (<CWalk>compiled[1]).run(<dict>rec)
                if type(res) is dict:
                    return res
                return handed_back((self.caller,), res)[1]
        return self.caller.hop(rec)

    cdef bint settled(self):
        return snet_atomic_load(&self.running) == 0 and not self.done


@cython.final
@cython.trashcan(True)
cdef class AsyncBoxEntity(Entity):
    """A box whose calls finish outside the workers, up to ``cap`` at once, outputs in input order.

    An ``async def`` box (its calls run on the box loop) or a box in box
    processes whose calls go in batches (``snet.core.batching``).
    ``invoke`` numbers the record, submits the call (the box's coroutine to
    the loop, its arguments to its processes' queue) and returns: the
    worker goes on with other work while the call runs.  The call counts
    as pending (the run cannot terminate under it) and as running
    (``saturated`` holds the inbox at ``cap`` calls).  When calls are done
    the loop's (or a dispatcher's) thread queues them on ``rt.completions``
    in one delivery; a worker then finishes each
    call (``complete``): output checks and flow inheritance
    (``call.resume``), then emission in input order through the reorder
    buffer, as for a concurrent box.
    """
    cdef object op
    cdef object resume
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
        deferred = <object>outs
        deferred.submit(deferred.work, self, seq, item)  # queued: started in a batch (snet.core.batching)
        return 0

    def deliver(self, list finished):
        """On the box loop's or a box process dispatcher's thread: hand finished calls to the workers at once.

        ``finished``: the ``(seq, item, outcome)`` of calls of this entity, one piece of work for a worker.
        """
        self.rt.completions.append((self, finished))
        self.rt.wake_idle(False)

    cdef int complete(self, Writer w, object done) except -1:
        cdef list finished = <list>done
        cdef Py_ssize_t i, n = len(finished)
        cdef double t0 = snet_now()
        for i in range(n):
            seq, item, outcome = finished[i]
            rec = record_of(item)
            if self.rt.tracking:
                set_current_request(request_of(item))
            try:
                outs = self.resume(outcome, rec)
            except BaseException:  # the run stops: this call and the batch's others are no longer in flight
                snet_atomic_add(&self.running, i - n)
                snet_atomic_add(&self.rt.pending, i - n)
                raise
            self.finish(w, seq, outs, stack_of(item))
        if n:
            time_call(w, self.node, (snet_now() - t0) / n, n)  # each call of the batch: its share of the time
        w.box_calls[self.node] += n
        return 0

    cdef int finish(self, Writer w, long seq, object outs, GStack st) except -1:
        spin_lock(&self.rlock)
        try:
            self.emit_seq = emit_or_hold(self, w, self.done, self.emit_seq, seq, outs, st)
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
        self.emit(w, outs, stack_of(item), True)  # (a clause's one output comes as itself)
        return 0

    cdef bint settled(self):
        return True


@cython.final
@cython.trashcan(True)
cdef class SyncEntity(Entity):
    """A synchro-cell instance; once fired it is an identity that writers bypass.

    The cell's state and rules are :class:`snet.core.cells.SyncCell`'s; the
    entity's lock (held by the worker invoking it) guards them.
    """
    cdef SyncCell cell
    cdef object all_slots  # raw_all of the patterns' matcher: every pattern a record matches
    cdef tuple slot_labels  # the patterns' labels when none has a guard (tested there, no call)

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef bint was_fired = self.cell.fired
        cdef Instance inst
        hits = None
        if not was_fired:
            hits = patterns_matched(rec, self.slot_labels, self.all_slots)
        res = self.cell.take(rec, hits)
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

    Its cells are a :class:`snet.core.cells.SyncStarIndex`, which says which
    cell a record goes to with no walk along the replicas (the C zipper's
    mask grouping, taken further); the entity's lock (held by the worker
    invoking it) guards the index.  This loop adds what the runtime does
    around an offer: exit tests, parked records, the cells counted as held
    and as partial, a split replica back to its fresh state.  One entity
    handles every record in arrival order, which is also the order ``**``
    asks for.
    """
    cdef object exits  # the exit patterns' PatternMatcher (for its errors)
    cdef object first_exit  # its raw_first: the exit test without the error translation
    cdef tuple exit_labels  # the exit patterns' labels when none has a guard (tested here, no call)
    cdef object all_slots  # raw_all of the cell patterns' matcher: every pattern a record matches
    cdef tuple slot_labels  # the cell patterns' labels when none has a guard
    cdef int sync_node
    cdef SyncStarIndex index

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef Py_ssize_t after = -1  # the replica the record has passed (-1: none yet)
        cdef Instance inst
        cdef bint fresh
        cdef SyncCell cell
        cdef SyncStarIndex index = self.index
        while True:
            exits = first_pattern(rec, self.exit_labels, self.first_exit, self.exits)
            if exits >= 0:
                w.write(self.resolve_out(), make_item(rec, st), True)
                return 0
            # None where a guard cannot be evaluated: walk, so that it fails where the definition's walk does
            hits = patterns_matched(rec, self.slot_labels, self.all_slots)
            if hits is not None and not hits:  # it would pass every later replica unchanged: it stays here for ever
                self.rt.park(self.node, rec)
                return 0
            cell = index.find(hits, after)
            fresh = cell is None
            if fresh:
                if w.safe_point():  # a long walk along new replicas: the run may be stopping
                    return 0
                cell = index.open()
                snet_atomic_add(&self.rt.cells_held, 1)
                self.rt.unfolded(self.node, rec)
            res = index.offer(cell, rec, hits)
            if res is None:  # stored
                if st is not None:
                    w.drop(st)
                self.rt.note_partial(cell, self.sync_node, False)
                return 0
            if cell.fired:
                if fresh:  # it filled every pattern alone: it comes out unchanged, before every replica
                    raise unfolds_for_ever(self.rt.span_of(self.node), rec)
                snet_atomic_add(&self.rt.cells_held, -1)
                self.rt.note_partial(cell, self.sync_node, True)
                if index.unfired() == 0 and self.ctx.inst.members is not None:
                    # Back to its fresh state: its split may drop the replica (docs/runtime.md).
                    inst = self.ctx.inst.root
                    if inst is not None and inst.owner is not None:
                        inst.owner.hint_fresh(inst)
            elif fresh:  # a fresh cell let it pass unchanged: so will every later one
                self.rt.park(self.node, rec)
                return 0
            after = cell.replica
            rec = res

    cdef bint settled(self):
        return self.index.unfired() == 0  # every cell it made has fired (fired cells are identities it forgot)


# -- factories ------------------------------------------------------------------

cdef Entity make_box(Network net, int n, Ctx ctx):
    cdef AsyncBoxEntity a
    if net.nodes[n].deferred:
        a = AsyncBoxEntity.__new__(AsyncBoxEntity)
        a.setup(net, n, ctx)
        a.op = net.nodes[n].call.__call__
        a.resume = net.nodes[n].call.resume
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
    if n in net.auto_nodes:
        b.auto = True
        b.cap = -1  # `saturated` reads the node's level
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
    s.cell = new_cell(shape)
    s.slot_labels = shape.matcher.labels
    if s.slot_labels is None:
        s.all_slots = shape.matcher.raw_all
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
    z.sync_node = node.cell
    z.index = SyncStarIndex(node.shape)
    if net.ckpt_entities is not None:
        ckpt_adopt(net, z)
    return z


register_factory(K_BOX, make_box)
register_factory(K_FILTER, make_filter)
register_factory(K_SYNC, make_sync)
register_factory(K_SYNCSTAR, make_sync_star)
