# Collectors and the entities of combinators: parallel, star, split, feedback (the executor split's
# are in executors.pxi).
#
# Also the firing of initialisers when an instance is created
# (:func:`fire`).  Each entity class has a
# factory, registered with the core when the module is initialised, that
# builds it from its node's template in the plan.  See
# core.pxi for the design of the runtime.

cimport cython
from collections import deque

from snet_front.atomics cimport (snet_atomic_add, snet_atomic_load, snet_now, snet_try_lock, snet_unlock,
                                 snet_flag_load, snet_flag_store)
from snet_front.kinds cimport (K_NET, K_SERIAL, K_PAR, K_STAR, K_SPLIT, K_FEEDBACK, K_INITBOX)


cdef Entity open_replica(Network rt, Writer w, int node, Ctx c, GStack st):
    """A new replica of the operand of star or split ``node`` in context ``c``: its initialisers fire first."""
    cdef int operand = rt.child0[node]
    fire(rt, w, operand, c, st)
    return rt.enter(operand, c)


@cython.trashcan(True)
cdef class Dispatcher(Entity):
    """A parallel or split dispatcher: its branches end at its collector, or else share its out."""
    cdef Collector coll  # deterministic order and/or initialiser barrier; None: branches share `out`

    cdef Entity branch_exit(self):
        if self.coll is not None:
            return self.coll
        return self.junction_out()


@cython.final
@cython.trashcan(True)
cdef class ParallelEntity(Dispatcher):
    cdef object router
    cdef object route_cache  # the router's label set -> branch table, read here first
    cdef list branches  # entry entity per branch, created lazily
    cdef tuple last_shape  # the labels, in order, of the last record the table routed (None: none)
    cdef int last_branch  # ... and its branch

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef Entity dest
        cdef int b
        if self.last_shape is not None and type(rec) is dict and same_labels(<dict>rec, self.last_shape):
            b = self.last_branch  # a record of the last one's labels: no label set built
        else:
            found = self.route_cache.get(frozenset(rec))
            if found is None or found < 0:
                b = self.router(rec)  # (the router raises the error)
            else:
                b = found
                if type(rec) is dict:
                    self.last_shape = tuple(rec)
                    self.last_branch = b
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

    cdef bint settled(self):
        return True  # its branches' entities and its collector are checked themselves


@cython.final
@cython.trashcan(True)
cdef class StarShared:
    """What all incarnations of one star instance share."""
    cdef Network rt
    cdef int node
    cdef Ctx ctx
    cdef object matcher  # the exit patterns' PatternMatcher (for its errors)
    cdef object first_exit  # its raw_first: the exit test without the error translation
    cdef tuple exit_labels  # the exit patterns' labels when none has a guard (tested here, no call)
    cdef bint det
    cdef bint loops  # a stateless operand: incarnations 0 and 1 share one operand instance
    cdef Collector coll
    cdef Entity out  # the star's out, shared by the exits of every incarnation
    cdef int jlock  # guards `out`
    cdef Group mark  # a looping star: the group of the depth marks its records carry in the operand

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
@cython.trashcan(True)
cdef class StarEntity(Entity):
    """Incarnation ``k`` of a star: the exit test before replica ``k``."""
    cdef StarShared sh
    cdef long k
    cdef StarEntity nxt
    cdef Entity op_entry

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef Entity dest
        cdef StarShared sh = self.sh
        cdef Network rt = self.rt
        cdef Ctx cop
        cdef Instance inst
        cdef bint leader = self.k == 0 and sh.det
        cdef long depth = 0
        if sh.loops and st is not None and st.group is sh.mark:
            # back from the shared operand: take off the depth mark put on when it went in
            depth = st.depth
            st = st.next
            snet_atomic_add(&sh.mark.count, -1)
            item = make_item(rec, st)
        if leader:
            st = push(sh.coll.new_group(), st)
            item = make_item(rec, st)
        exits = first_pattern(rec, sh.exit_labels, sh.first_exit, sh.matcher)
        if exits >= 0:
            w.write(sh.exit_target(), item, True)
            return 0
        dest = self.op_entry
        if dest is None:
            nxt = <StarEntity>StarEntity.__new__(StarEntity)
            nxt.setup(rt, self.node, self.ctx)
            nxt.sh = sh
            nxt.k = self.k + 1
            self.nxt = nxt
            rt.unfolded(self.node, rec)  # the bound on a star that keeps unfolding (snet.core.limits)
            inst = Instance.__new__(Instance)
            inst.members = sh.ctx.inst.members
            inst.root = sh.ctx.inst.root  # inside a reclaimable replica: its entities are the replica's
            inst.mark = sh.mark  # a looping star: its operand's inboxes take the deepest first
            cop = new_ctx(nxt, inst, sh.ctx)
            dest = open_replica(rt, w, self.node, cop, st)
            if sh.loops:
                # A stateless operand: one instance for every unfolding.  Its outputs
                # come back to incarnation 1, which tests them and sends them into the
                # same instance again: the chain never grows past two incarnations.
                nxt.op_entry = dest
                nxt.inbox = new_depth_inbox(sh.mark)
        if dest.identity:
            dest = bypass(dest)
        self.op_entry = dest
        self.dissolve(dest)
        if sh.loops:
            # Mark the replica the record enters (docs/runtime.md, "Depth-first
            # stars"): incarnation 1 takes the deepest record first.
            snet_atomic_add(&sh.mark.count, 1)
            item = make_item(rec, mark_depth(sh.mark, st, depth + 1))
        w.write(dest, item, True)
        return 0

    cdef bint dissolve(self, Entity dest):
        """Become an identity if the operand dissolved completely (``dest``: its entry, bypassed); lock held.

        The operand dissolved when its entry is a later incarnation, or an
        identity leading straight to the next (which another worker may hold
        right now): this incarnation then tests exactly what the next one
        tests, so it becomes an identity forwarding to its operand entry, and
        writers skip it.  (``out`` of an identity is only compared here,
        never followed: a pointer comparison, no reference taken, so it is
        safe without its lock; the release store below publishes ``out``
        before the flag.)  Not the leader of a deterministic star (it opens
        the records' groups), nor a looping star's.
        """
        if self.sh.loops or self.identity or (self.k == 0 and self.sh.det):
            return False
        if ((type(dest) is StarEntity and (<StarEntity>dest).sh is self.sh)
                or (snet_flag_load(&dest.identity) and dest.out is self.nxt)):
            self.out = dest
            snet_flag_store(&self.identity, True)
            return True
        return False

    cdef Entity branch_exit(self):
        return self

    cdef bint settled(self):
        # Its operand instances' entities are the replica's too and checked themselves;
        # an incarnation that became an identity is a state a fresh star does not have.
        return not self.identity


cdef Entity settle_entry(Entity d):
    """The network's entry ``d`` past the star incarnations that dissolved after the last record passed them.

    An incarnation finds its operand dissolved when a record passes it
    (``StarEntity.invoke``); one that the last records of a stretch of input
    passed just before its operand's cells fired stays a non-identity, and
    the entry keeps it, and every incarnation after it, alive until the next
    input.  A worker that finds the input quiet calls this (input lock held),
    so a session's graph shrinks back between its batches.
    """
    cdef StarEntity star
    cdef Entity op
    cdef bint done
    while type(d) is StarEntity and not d.identity and snet_try_lock(&d.lock):
        star = <StarEntity>d
        try:
            op = star.op_entry
            done = False
            if op is not None:
                if op.identity:
                    op = bypass(op)
                    star.op_entry = op
                done = star.dissolve(op)
        finally:
            snet_unlock(&d.lock)
        if not done:
            break
        d = bypass(d)
    return d


cdef inline GStack mark_depth(Group mark, GStack st, long depth):
    cdef GStack s = GStack.__new__(GStack)
    s.group = mark
    s.next = st
    s.depth = depth
    return s


cdef enum:
    RECLAIM_AT = 32  # replicas a split keeps before it first looks for fresh ones to drop
    SPARE_REPLICAS = 8  # fresh replicas a split keeps aside for new keys instead of dropping them
    GONE_MOST = 4096  # keys of dropped replicas a split remembers (SplitEntity.reclaim)


@cython.final
@cython.trashcan(True)
cdef class SplitEntity(Dispatcher):
    cdef object keys
    cdef object tag  # a plain split's tag, read here (None: a range split, whose values `keys` gives)
    cdef dict replicas  # tag value -> Instance (its `entry`: where the replica's records go)
    cdef bint track  # the replicas are reclaimable (`Network.reclaim`): their entities are listed
    cdef Py_ssize_t limit  # reclaimable: look for fresh replicas when the table reaches this size
    cdef object hinted  # deque of replicas that may be fresh again (appended by their entities' workers)
    cdef list spare  # fresh replicas taken out of the table, for the next new key (docs/runtime.md)
    cdef set gone  # keys whose replicas a look dropped lately (at most GONE_MOST): tells a key that comes back
    cdef Py_ssize_t dropped  # replicas the last look dropped
    cdef Py_ssize_t came_back  # replicas built again since then for keys in ``gone``

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef Entity dest
        cdef Instance inst
        cdef Network rt = self.rt
        cdef Py_ssize_t i, n
        if self.tag is not None and type(v := rec.get(self.tag)) is int:
            values = (v,)
        else:
            values = self.keys.values(rec)  # (a range split; or an absent tag: it raises the error)
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
        if len(self.hinted):
            self.reclaim_hinted()
        for i in range(n):
            v = values[i]
            if det:
                # Each copy gets its own group, in ascending order: all outputs
                # of one input still leave together, and the copies' outputs
                # in the order the copies were made (as the reference engine).
                cst = push(self.coll.new_group(), st)
                item = make_item(rec, cst)
            inst = self.replicas.get(v)
            if inst is None and self.gone and v in self.gone:  # (its replica was dropped by the last looks)
                self.gone.discard(v)
                self.came_back += 1
            if inst is None and self.spare and (rt.ckpt_restore is None or not ckpt_restores_key(self, v)):
                # A fresh replica is what a new one would be, whichever key it served: no entity of it
                # holds a record or any state (fresh_entities checked each under its lock).
                inst = <Instance>self.spare.pop()
                inst.key = v
                self.replicas[v] = inst
            elif inst is None:
                if len(self.replicas) >= self.limit:
                    self.reclaim()
                inst = Instance.__new__(Instance)
                inst.root = inst
                inst.owner = self
                inst.key = v
                if self.track:
                    inst.members = []
                inst.entry = open_replica(rt, w, self.node, new_ctx(self, inst, self.ctx), cst)
                self.replicas[v] = inst
            dest = inst.entry
            if dest.identity:
                dest = bypass(dest)
                inst.entry = dest
            w.write(dest, item, i == n - 1)
        return 0

    cdef void hint_fresh(self, Instance replica):
        self.hinted.append(replica)

    cdef int reclaim_hinted(self) except -1:
        """Drop the replicas whose entities said they are fresh again, if they are (a busy one waits for a scan).

        In a split whose replicas are not reclaimable, a replica whose entry
        (a synchro-cell) fired is entered past it from now on.

        A fresh replica is not dropped at once but kept aside (`retire`) for
        the next key the split has no replica for: a network that sends a
        record or two per key (a split on a tree position, on a depth) would
        otherwise build and drop a replica for nearly every record.
        """
        cdef Instance inst
        cdef Py_ssize_t n
        hinted = self.hinted
        while len(hinted):
            inst = <Instance>hinted.popleft()
            if self.replicas.get(inst.key) is not inst:
                continue  # hinted twice, or reclaimed by a scan
            if not self.track:
                if inst.entry.identity:
                    inst.entry = bypass(inst.entry)  # a fired cell: skip it from now on
                continue
            n = fresh_entities(inst)
            if n >= 0:
                del self.replicas[inst.key]
                self.retire(inst, n)
        return 0

    cdef int retire(self, Instance inst, Py_ssize_t n) except -1:
        """A fresh replica `inst` (of `n` entities) left the table: keep it aside for a new key, or drop it."""
        if len(self.spare) < SPARE_REPLICAS:
            self.spare.append(inst)
        else:
            forget_replica(inst)
            snet_atomic_add(&self.counters.reclaimed, n)
        return 0

    cdef int reclaim(self) except -1:
        """Drop the replicas whose entities are all as freshly built ones (docs/runtime.md, "Reclaimed replicas").

        Called by the lock holder, so no record can enter a replica meanwhile.
        Every entity of a replica is try-locked (a busy one keeps the replica
        for a later look), then each is checked: no record in its inbox, no
        state a fresh entity would not have (`Entity.settled`).  A key seen
        again builds its replica anew, as the first time.  A split whose
        replicas are not reclaimable only skips the identities its replicas
        start with.
        """
        cdef Py_ssize_t n
        cdef Instance r
        if not self.track:
            # Replicas that keep state (a fired synchro-cell, say) stay; but one
            # whose entry became an identity is entered past it from now on,
            # as the next record with its tag would do, so the identity goes.
            for x in self.replicas.values():
                r = <Instance>x
                if r.entry.identity:
                    r.entry = bypass(r.entry)
            self.limit = 2 * len(self.replicas)
            return 0
        if self.dropped and 2 * self.came_back >= self.dropped:
            # Half the keys the last look dropped came back since, and their replicas were built again: the
            # keys in use outnumber the table's size, and dropping replicas only makes them again.  The
            # table keeps them, and grows to four times its size before the next look.
            self.dropped = self.came_back = 0
            self.limit = max(<Py_ssize_t>RECLAIM_AT, 4 * len(self.replicas))
            return 0
        dead = []
        for v, inst in self.replicas.items():
            n = fresh_entities(<Instance>inst)
            if n >= 0:
                dead.append((v, n))
        for v, n in dead:
            self.retire(<Instance>self.replicas.pop(v), n)
        if len(self.gone) + len(dead) > GONE_MOST:
            self.gone.clear()
        self.gone.update(v for v, _ in dead)
        self.dropped = len(dead)
        self.came_back = 0
        self.limit = max(<Py_ssize_t>RECLAIM_AT, 2 * len(self.replicas))
        return 0

    cdef bint settled(self):
        # A nested split: fresh when every replica it keeps is (lock_replica locked them).
        for inst in self.replicas.values():
            if not replica_fresh(<Instance>inst):
                return False
        return True


cdef Py_ssize_t fresh_entities(Instance inst) except -2:
    """The number of entities of a replica that is fresh (all try-locked and checked), else -1."""
    cdef list locked = []
    cdef bint fresh = lock_replica(inst, locked) and replica_fresh(inst)
    for e in locked:
        snet_unlock(&(<Entity>e).lock)
    return len(locked) if fresh else -1


cdef bint lock_replica(Instance inst, list locked) except -1:
    """Try-lock every entity of a replica, nested split replicas too; False when one is busy."""
    cdef Entity e
    for x in inst.members:
        e = <Entity>x
        if not snet_try_lock(&e.lock):
            return False
        locked.append(e)
        if type(e) is SplitEntity:
            for r in (<SplitEntity>e).replicas.values():
                if not lock_replica(<Instance>r, locked):
                    return False
    return True


cdef int forget_replica(Instance inst) except -1:
    """Empty the entity lists of a dropped replica and its nested ones.

    An entity refers to its instance through its context, and the instance
    lists the entity: emptying the list (and the instance's other links)
    breaks those cycles, so the entities
    go as soon as no licence names them, without waiting for the cycle
    collector.
    """
    for x in inst.members:
        if type(x) is SplitEntity:
            for r in (<SplitEntity>x).replicas.values():
                forget_replica(<Instance>r)
            for r in (<SplitEntity>x).spare:
                forget_replica(<Instance>r)
            (<SplitEntity>x).spare.clear()
    inst.members.clear()
    inst.entry = None  # the entry's context names this instance
    inst.root = None
    inst.owner = None
    return 0


cdef bint replica_fresh(Instance inst) except -1:
    """Every entity of a locked replica holds no record and no state a fresh one would not."""
    cdef Entity e
    for x in inst.members:
        e = <Entity>x
        if len(e.inbox) or not e.settled():
            return False
    return True


@cython.final
@cython.trashcan(True)
cdef class FeedbackReturn(Entity):
    """Where the operand's outputs return: back into the operand or out."""
    cdef object matcher  # the feedback patterns' PatternMatcher (for its errors)
    cdef object first_back  # its raw_first: the test without the error translation
    cdef tuple back_labels  # the patterns' labels when none has a guard (tested here, no call)
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

    cdef int invoke(self, Writer w, object item) except -1:
        rec = record_of(item)
        back = first_pattern(rec, self.back_labels, self.first_back, self.matcher)
        if back >= 0:
            w.write(self.entry(), item, True)
        else:
            w.write(self.resolve_out(), item, True)
        return 0

    cdef Entity branch_exit(self):
        return self

    cdef bint settled(self):
        return True


@cython.final
@cython.trashcan(True)
cdef class Collector(Entity):
    """Merges a combinator's branches back in group order (see core.pxi, "Determinism")."""
    cdef object groups  # deque of Group in entry order
    cdef list stray
    cdef bint barrier_only

    cdef Group new_group(self):
        cdef Group g = Group.__new__(Group)
        g.count = 1
        g.owner = self
        g.queue = None  # (made when a record of the group waits: most never do)
        self.groups.append(g)
        return g

    cdef int invoke(self, Writer w, object item) except -1:
        cdef Tagged t
        cdef Group g
        if type(item) is WakeUp:
            self.release(w)
            return 0
        if type(item) is Tagged and (<Tagged>item).stack.group.owner is self:
            t = <Tagged>item
            g = t.stack.group
            it2 = make_item(t.rec, t.stack.next)
            if len(self.groups) and self.groups[0] is g:
                w.write(self.resolve_out(), it2, False)
            elif g.queue is None:
                g.queue = [it2]
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

    cdef bint settled(self):
        return not len(self.groups) and not self.stray and not self.identity

    cdef int release(self, Writer w) except -1:
        cdef Group h
        cdef Entity dest
        groups = self.groups
        while len(groups):
            h = <Group>groups[0]
            if h.queue:
                dest = self.resolve_out()
                for it in h.queue:
                    w.write(dest, it, False)
                h.queue = None
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
            snet_flag_store(&self.identity, True)
        return 0


# -- initialisers ------------------------------------------------------------------

cdef int fire(Network rt, Writer w, int n, Ctx ctx, GStack st) except -1:
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
    if not rt.inst_init[n]:
        return 0
    k = rt.kind[n]
    if k == K_NET:
        return fire(rt, w, rt.child0[n], ctx, st)
    if k == K_SERIAL:
        for s in reversed(rt.children[n]):
            fire(rt, w, s, ctx, st)
        return 0
    if k == K_PAR:
        p = <ParallelEntity>rt.make(n, ctx)
        if ctx.inst.eager is None:
            ctx.inst.eager = {}
        ctx.inst.eager[n] = p
        g0 = p.coll.new_group()  # count 1: a claim held while firing
        c = new_ctx(p, ctx.inst, ctx)
        for b in rt.children[n]:
            fire(rt, w, b, c, push(g0, st))
        if snet_atomic_add(&g0.count, -1) == 0:
            w.write(p.coll, WakeUp.__new__(WakeUp), False)
        return 0
    if k == K_FEEDBACK:
        fb = new_feedback(rt, n, ctx)
        if ctx.inst.eager is None:
            ctx.inst.eager = {}
        ctx.inst.eager[n] = fb
        fire(rt, w, rt.child0[n], fb.ctx_op, st)
        return 0
    if k == K_INITBOX:
        if rt.ckpt_fired is not None and not ckpt_fires(rt, ctx):
            return 0  # fired before the checkpoint this run resumed from
        t0 = snet_now()
        outs = rt.nodes[n].call.fire()
        time_call(w, n, snet_now() - t0, 1)
        w.box_calls[n] += 1
        if not outs:
            return 0
        if st is not None:
            spawn(st, len(outs))
        dest = rt.exit_target(n, ctx)
        for o in outs:
            w.write(dest, make_item(o, st), False)
    return 0


# -- factories ------------------------------------------------------------------------------

cdef Collector new_collector(Network rt, int n, Ctx ctx):
    cdef Collector c = Collector.__new__(Collector)
    c.setup(rt, n, ctx)
    c.groups = deque()
    c.stray = []
    return c


cdef FeedbackReturn new_feedback(Network rt, int n, Ctx ctx):
    cdef FeedbackReturn fb = FeedbackReturn.__new__(FeedbackReturn)
    fb.setup(rt, n, ctx)
    fb.matcher = rt.nodes[n].back
    fb.back_labels = rt.nodes[n].back.labels
    if fb.back_labels is None:  # a guard: the generated test (built only then)
        fb.first_back = rt.nodes[n].back.raw_first
    fb.ctx_op = new_ctx(fb, ctx.inst, ctx)
    return fb


cdef Entity make_parallel(Network rt, int n, Ctx ctx):
    cdef ParallelEntity p = ParallelEntity.__new__(ParallelEntity)
    cdef Collector c
    p.setup(rt, n, ctx)
    p.router = rt.nodes[n].router.route
    p.route_cache = rt.nodes[n].router.cache
    p.branches = [None] * len(rt.children[n])
    if rt.det[n] or rt.inst_init[n]:
        c = new_collector(rt, n, ctx)
        c.barrier_only = not rt.det[n]
        p.coll = c
    return p


cdef Entity make_star(Network rt, int n, Ctx ctx):
    cdef StarShared sh = StarShared.__new__(StarShared)
    cdef StarEntity st = StarEntity.__new__(StarEntity)
    sh.rt = rt
    sh.node = n
    sh.ctx = ctx
    sh.matcher = rt.nodes[n].exits
    sh.exit_labels = rt.nodes[n].exits.labels
    if sh.exit_labels is None:
        sh.first_exit = rt.nodes[n].exits.raw_first
    sh.det = rt.det[n]
    sh.loops = rt.nodes[n].loops
    if sh.loops:
        sh.mark = Group.__new__(Group)
        sh.mark.count = 1  # the star's own: the count never reaches 0, so no one is ever woken
        sh.mark.owner = None
    if sh.det:
        sh.coll = new_collector(rt, n, ctx)
    st.setup(rt, n, ctx)
    st.sh = sh
    st.k = 0
    return st


cdef Entity make_split(Network rt, int n, Ctx ctx):
    cdef SplitEntity sp = SplitEntity.__new__(SplitEntity)
    sp.setup(rt, n, ctx)
    sp.keys = rt.nodes[n].keys
    sp.tag = sp.keys.tag if sp.keys.hi_tag is None else None
    sp.replicas = {}
    sp.track = rt.reclaim[n]
    sp.limit = RECLAIM_AT
    sp.gone = set()
    sp.hinted = deque()
    sp.spare = []
    if rt.det[n]:
        sp.coll = new_collector(rt, n, ctx)
    return sp


cdef Entity make_feedback(Network rt, int n, Ctx ctx):
    return new_feedback(rt, n, ctx).entry()


register_factory(K_PAR, make_parallel)
register_factory(K_STAR, make_star)
register_factory(K_SPLIT, make_split)
register_factory(K_FEEDBACK, make_feedback)
