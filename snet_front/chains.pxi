# Fused chains: boxes and filters, each the only way into the next, run as one entity
# (docs/runtime.md, "Fusion"), with its compiled walks, input batches and fan-out parts.
# Uses the box entities' timing and sampling (entities.pxi).

from cpython.mem cimport PyMem_Malloc, PyMem_Free

from snet.core.compiled import compose_filters
from snet.spg.fusion import chain_exit


# Input batches of a fused chain (ChainEntity.batch_size): a worker walks as
# many input records in one go as take about BATCH_SPAN seconds by the
# chain's measured cost, at most BATCH_MOST; a chain whose walk costs more
# than BATCH_WALK_MOST takes its input one record at a time, so that its
# records' walks stay free to run on several workers at once.
cdef double BATCH_SPAN = 200e-6
cdef double BATCH_WALK_MOST = 10e-6
cdef enum:
    BATCH_MOST = 256

# A fan-out inside a concurrent walk of a fused chain (ChainEntity.fan_out): its outputs go through the
# rest of the chain as parts that other workers may take, when the rest costs at least this much a record
# by the boxes' mean call times (or nothing is known of them yet).
cdef double PART_COST_LEAST = 50e-6


cdef enum:
    TIMED = 1  # ChainEntity.sampling: time the boxes with few calls so far, and slow ones
    SAMPLED = 2  # ... and this walk stands for ``period`` of the others

cdef enum:
    STAGE_CALLER = 0  # a bare box caller: its C-level entry, records changed in place between stages
    STAGE_BOX = 1  # a box called through an error policy or a guard: a list of outputs
    STAGE_RAW_FILTER = 2  # a filter's generated function, its errors translated here
    STAGE_FILTER = 3  # a filter called through an error policy
    STAGE_SPLIT = 4  # a transparent split (snet.spg.fusion): its SplitKeys; the record must hold the tag


@cython.final
cdef class Gather:
    """The outputs of one record of a chain, fanned out into parts other workers walk (``ChainEntity.fan_out``)."""
    cdef long seq  # the record's place in the chain's order
    cdef GStack st
    cdef list parts  # per part: its outputs, once walked (None before)
    cdef Py_ssize_t left  # parts not walked yet


@cython.final
cdef class Part:
    """An item of a chain's own inbox: one output of a fan-out, to walk from ``stage`` on into its ``gather``."""
    cdef Gather gather
    cdef Py_ssize_t slot
    cdef object rec
    cdef Py_ssize_t stage


cdef object DISPATCHED = object()  # what a walk returns when its outputs come from parts


@cython.final
@cython.trashcan(True)
cdef class ChainEntity(Entity):
    """A fused chain of boxes and filters (``plan.fused``) run as one entity (docs/runtime.md, "Fusion").

    A record goes through every stage in one invocation: one admission,
    one stream write, no entity between the stages.  A stage's several
    outputs each go through the rest of the chain before the next (depth
    first), so the outputs leave in the order the stages one after another
    would give.  The record a box caller makes is the chain's own until it
    leaves, so the next box changes it in place instead of copying it.
    Concurrent calls and their reorder buffer are a box entity's, with the
    chain's limit the least of its boxes'; calls, time and failures count
    for each box as if it ran alone.  ``node``: where its outputs go (the
    chain's last stage, or the transparent split whose operand that stage
    ends); ``walk_node``: the last stage.
    """
    cdef tuple ops  # per stage: the BoxCaller, the box call, the filter's raw function or its apply, SplitKeys
    cdef tuple errors  # per stage: a raw filter's apply (for its errors), else None
    cdef int *nodes  # per stage: its node id
    cdef bytes kinds  # per stage: STAGE_*
    cdef Py_ssize_t n
    cdef int timer  # the node of the first box (its counts decide the sampling), -1: none
    cdef int limit
    cdef long next_seq
    cdef long emit_seq
    cdef dict done
    cdef int rlock
    cdef tuple tuned  # the stages whose level the controller sets (--box-concurrency auto), None: none
    cdef bytes tuned_at  # per stage: 1 where it is one of ``tuned``
    cdef int fixed  # with ``tuned``: the least limit of the other boxes (the chain's level never passes it)
    cdef bint compiles  # every stage past ``lead`` is a bare box caller: records of one shape may take a compiled walk
    cdef Py_ssize_t lead  # the transparent splits the chain begins with (their tags checked before a compiled walk)
    cdef tuple tags  # per stage: a transparent split's tag, else None
    cdef tuple walk_ops  # the box callers of a compiled walk: ``ops[lead:]``
    cdef int walk_node  # the node the compiled walks are kept under (the last stage); ``node``: where outputs go
    cdef object compiled  # the node's (shape, walk or None) once looked up (node_walk), set once; None: not yet
    cdef long period  # one walk in this many is timed stage by stage once every box is short (``sampling``)
    cdef long gathers  # fanned-out records whose parts are not all walked yet (atomic; ``fan_out``)

    def __dealloc__(self):
        PyMem_Free(self.nodes)

    cdef int invoke(self, Writer w, object item) except -1:
        if type(item) is Part:
            return self.invoke_part(w, <Part>item)
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef long seq
        cdef int early = 0
        cdef int every = self.sampling(w)
        cdef bint one = self.limit <= 1
        if self.tuned is not None:  # as an automatic box: the cheap path at level 1 with no call in flight
            one = self.level() <= 1 and snet_atomic_load(&self.running) == 0
        if one:
            self.emit(w, self.walk(w, rec, 0, False, every), st, True)
            return 0
        seq = self.next_seq  # concurrent invocation: as BoxEntity's
        self.next_seq += 1
        snet_atomic_add(&self.running, 1)
        early = 1
        snet_unlock(&self.lock)
        try:
            if not self.rt.tracking:  # (a tracked input's records keep their walk: their request goes with it)
                w.walk_seq = seq
                w.walk_st = st
            try:
                outs = self.walk(w, rec, 0, False, every)
            finally:
                w.walk_seq = -1
                w.walk_st = None
            if outs is not DISPATCHED:  # (else the last of its parts emits)
                self.emitted(w, seq, [outs] if type(outs) is dict else outs, st)
        finally:
            snet_atomic_add(&self.running, -1)
        return early

    cdef int emitted(self, Writer w, long seq, list outs, GStack st) except -1:
        """Record ``seq``'s outputs are walked: emit them, and those after them, in order (rlock not held)."""
        spin_lock(&self.rlock)
        try:
            self.emit_seq = emit_or_hold(self, w, self.done, self.emit_seq, seq, outs, st)
        finally:
            snet_unlock(&self.rlock)
        return 0

    cdef object fan_out(self, Writer w, list outs, Py_ssize_t i, int every):
        """The outputs ``outs`` of stage ``i - 1``, several, through stages ``i`` onwards.

        In a concurrent walk (``w.walk_seq``), when the rest of the chain is
        slow or not known yet, each output becomes a ``Part`` in the chain's
        own inbox, which any worker may take (and steal) within the chain's
        limit, as the stages' own entities would let them: the walk returns
        ``DISPATCHED``, and the last part walked emits the record's outputs,
        in the parts' order, in the record's place in the chain's order.
        Else they go on in this walk, one after another (``go_on``), and so
        do the outputs of every fan-out after it in the walk: one decision a
        walk, either way.
        """
        cdef Gather g
        cdef Part part
        cdef Py_ssize_t j, n = len(outs)
        if w.walk_seq < 0 or n < 2 or i >= self.n or not self.slow_from(w, i):
            # Decided: this walk's outputs go on in it, and so do those of the fan-outs after this one.  A
            # later fan-out must not dispatch parts: ``go_on`` gathers each output's walk as records, and the
            # chain's costs may have grown past the threshold meanwhile (a later stage's boxes timed slow).
            w.walk_seq = -1
            w.walk_st = None
            return self.go_on(w, outs, i, every)
        g = Gather.__new__(Gather)
        g.seq = w.walk_seq
        g.st = w.walk_st
        g.parts = [None] * n
        g.left = n
        w.walk_seq = -1  # (one fan-out a walk: the parts walk their own on)
        w.walk_st = None
        snet_atomic_add(&self.gathers, 1)
        for j in range(n):
            part = Part.__new__(Part)
            part.gather = g
            part.slot = j
            part.rec = outs[j]
            part.stage = i
            w.write(self, part, False)
        return DISPATCHED

    cdef double mean_cost(self, Writer w, Py_ssize_t i, long least):
        """The boxes of stages ``i`` onwards: their mean call times, added up, as ``w`` measured them; -1 while
        one of them has had fewer than ``least`` calls on ``w``."""
        cdef double cost = 0.0
        cdef long calls
        cdef int node
        while i < self.n:
            if self.kinds[i] <= STAGE_BOX:
                node = self.nodes[i]
                calls = w.box_calls[node]
                if calls < least:
                    return -1.0
                cost += w.box_time[node] / calls
            i += 1
        return cost

    cdef bint slow_from(self, Writer w, Py_ssize_t i):
        """The boxes of stages ``i`` onwards take ``PART_COST_LEAST`` a record or more, or one was never timed here."""
        cdef double cost = self.mean_cost(w, i, 1)
        return cost < 0 or cost >= PART_COST_LEAST

    cdef int invoke_part(self, Writer w, Part part) except -1:
        """Walk one part of a fan-out (``fan_out``) from its stage on; the last of its gather emits them all."""
        cdef Gather g = part.gather
        cdef list outs
        snet_atomic_add(&self.running, 1)
        snet_unlock(&self.lock)
        try:
            res = self.walk(w, part.rec, part.stage, False, self.sampling(w))
            part.rec = None
            spin_lock(&self.rlock)
            try:
                g.parts[part.slot] = [res] if type(res) is dict else res
                g.left -= 1
                if g.left:
                    return 1
            finally:
                snet_unlock(&self.rlock)
            outs = []
            for got in g.parts:
                outs.extend(<list>got)
            g.parts = None
            self.emitted(w, g.seq, outs, g.st)
            snet_atomic_add(&self.gathers, -1)
        finally:
            snet_atomic_add(&self.running, -1)
        return 1

    cdef long batch_size(self, Writer w):
        """How many input records worker ``w`` may walk in one batch (1: one at a time).

        From the boxes' mean call times as ``w`` measured them (``sampling``):
        none until each box has had ``TIMED_CALLS`` calls on it, then enough
        records to fill ``BATCH_SPAN`` (docs/runtime.md, "Input batches").
        """
        cdef double cost = self.mean_cost(w, 0, TIMED_CALLS)
        cdef long n
        if cost < 0 or cost > BATCH_WALK_MOST:
            return 1
        if cost * BATCH_MOST <= BATCH_SPAN:
            return BATCH_MOST
        n = <long>(BATCH_SPAN / cost)
        return n if n > 1 else 1

    cdef int level(self):
        """With stages the controller tunes: the highest of their levels, within the other boxes' least limit.

        Every stage is stateless, so the chain may run as many walks at once
        as its most concurrent box is allowed calls: a box raised to 16
        calls overlaps 16 walks, the cheap boxes around it with it.
        """
        cdef int most = 1
        cdef int n
        for m in self.tuned:
            n = self.rt.conc[<int>m]
            if n > most:
                most = n
        return most if most < self.fixed else self.fixed

    cdef int sampling(self, Writer w):
        """Which boxes of this walk are timed (per box, as a box entity times its calls: ``weight``).

        0: none (the walk may take the compiled function); ``TIMED``: the
        boxes with few calls so far or slow ones; ``SAMPLED``: those and,
        one walk in ``period``, the others, each counted that many times.
        The period is ``WALK_SAMPLE_EVERY``, longer than a box entity's
        ``SAMPLE_EVERY``: a timed walk leaves the compiled function and goes
        stage by stage, which costs a cheap chain several walks' time (the
        CPU-time reads of tuned boxes, ``cpu_weight``, count on the period).
        """
        cdef long calls
        cdef Py_ssize_t i
        cdef int node
        cdef int every = 0
        if self.timer < 0:
            return 0
        calls = w.box_calls[self.timer]
        if calls % self.period == 0:
            every = SAMPLED
        for i in range(self.n):
            if self.kinds[i] <= STAGE_BOX:
                node = self.nodes[i]
                if w.box_calls[node] < TIMED_CALLS or w.box_time[node] >= w.box_calls[node] * SLOW_CALL:
                    return SAMPLED if every else TIMED
        return every

    cdef inline int weight(self, Writer w, int node, int every):
        """How many calls this call of box ``node`` counts for in its time (0: not timed); see ``sampling``."""
        cdef long calls = w.box_calls[node]
        if calls < TIMED_CALLS or w.box_time[node] >= calls * SLOW_CALL:
            return 1
        return self.period if every == SAMPLED else 0

    cdef object walk(self, Writer w, object rec, Py_ssize_t i, bint owned, int every):
        """``rec`` through stages ``i`` onwards: one output record as itself, else a list of them.

        ``owned``: ``rec`` was made by a box of this chain and nobody else holds it.
        """
        cdef Py_ssize_t n = self.n
        cdef int kind, node, timed
        cdef double t0 = 0.0
        cdef double c0 = 0.0
        cdef int cw = 0
        cdef BoxCaller caller
        cdef list gathered
        cdef object outs
        if i == 0 and self.compiles and not every and type(rec) is dict:  # (timed walks go stage by stage)
            for i in range(self.lead):  # the splits the chain begins with
                check_tag(self.ops[i], self.tags[i], rec)
            i = 0
            compiled = self.compiled
            if compiled is None:
                made = node_walk(self.rt, self.walk_node, self.walk_ops, <dict>rec)
                # Set once, under a lock: concurrent walks may get here together, and two stores of the
                # field on a free-threaded build could release the same old value twice.
                spin_lock(&self.rlock)
                try:
                    if self.compiled is None:
                        self.compiled = made
                    compiled = self.compiled
                finally:
                    snet_unlock(&self.rlock)
            if (<tuple>compiled)[1] is not None and same_labels(<dict>rec, <tuple>(<tuple>compiled)[0]):
                outs = (<CWalk>(<tuple>compiled)[1]).run(<dict>rec)
                if type(outs) is dict:
                    for i in range(self.lead, n):
                        w.box_calls[self.nodes[i]] += 1
                    return outs
                # what the compiled walk does not take for granted: stage k's callers take it from there
                for i in range(self.lead, self.lead + (<tuple>outs)[0] + 1):
                    w.box_calls[self.nodes[i]] += 1
                k, outs = handed_back(self.walk_ops, outs)
                k += self.lead
                if type(outs) is dict:
                    return self.go_on(w, outs, k + 1, every)
                return self.fan_out(w, outs, k + 1, every)
        while i < n:
            kind = self.kinds[i]
            node = self.nodes[i]
            timed = 0
            if every and kind <= STAGE_BOX:
                timed = self.weight(w, node, every)
                if timed:
                    cw = 0  # the controller reads the CPU time of a tuned box's calls
                    if self.tuned is not None and self.tuned_at[i]:
                        cw = cpu_weight(w.box_calls[node], timed, self.period)
                    if cw:
                        c0 = thread_cpu()
                    t0 = snet_now()
            if kind == STAGE_CALLER:
                caller = <BoxCaller>self.ops[i]
                outs = caller.hop(rec, 1 if owned else (2 if i + 1 < n else 0))
            elif kind == STAGE_BOX:
                outs = self.ops[i](rec)
            elif kind == STAGE_RAW_FILTER:
                try:
                    outs = self.ops[i](rec)
                except (KeyError, TagExpressionError) as e:
                    raise self.errors[i].error(e, rec) from None
            elif kind == STAGE_SPLIT:  # the record goes on as it is, if it holds the tag
                check_tag(self.ops[i], self.tags[i], rec)
                i += 1
                continue
            else:
                outs = self.ops[i](rec)
            if kind <= STAGE_BOX:
                if timed:
                    time_call(w, node, snet_now() - t0, timed)
                    if cw:
                        w.box_cpu[node] += (thread_cpu() - c0) * cw
                w.box_calls[node] += 1
            i += 1
            if type(outs) is dict:  # one record, made by the box caller: the chain's own
                rec = outs
                owned = True
                continue
            if len(<list>outs) == 1:
                rec = (<list>outs)[0]
                owned = False
                continue
            return self.fan_out(w, outs, i, every)
        return rec

    cdef object go_on(self, Writer w, object outs, Py_ssize_t i, int every):
        """The outputs ``outs`` of stage ``i - 1`` through stages ``i`` onwards, each before the next."""
        cdef list gathered
        if type(outs) is dict:
            return self.walk(w, outs, i, False, every) if i < self.n else outs
        if i == self.n or not outs:
            return outs
        gathered = []
        for r in <list>outs:
            res = self.walk(w, r, i, False, every)
            if type(res) is dict:
                gathered.append(res)
            else:
                gathered.extend(<list>res)
        return gathered

    cdef bint settled(self):
        return snet_atomic_load(&self.running) == 0 and not self.done and snet_atomic_load(&self.gathers) == 0


cdef Entity make_chain(Network net, tuple chain, Ctx ctx):
    """The entity of a fused chain (node ids in order); its ``node``: where its outputs go (``Network.chain_exits``:
    the last stage, or the transparent split whose operand that stage ends)."""
    cdef ChainEntity c = ChainEntity.__new__(ChainEntity)
    cdef list ops = [], errors = [], tags = [], stages = []
    cdef bytearray kinds = bytearray()
    c.setup(net, net.chain_exits[chain[0]], ctx)
    c.walk_node = chain[len(chain) - 1]
    c.timer = -1
    for m in chain:
        node = net.nodes[m]
        if net.kind[m] == K_SPLIT:
            if proven_by(kinds, ops, node.keys.tag):
                continue  # the box before it always gives the tag: nothing to check
            kinds.append(STAGE_SPLIT)
            ops.append(node.keys)
            tags.append(node.keys.tag)
            errors.append(None)
            stages.append(m)
            continue
        if net.kind[m] != K_BOX and kinds and kinds[len(kinds) - 1] == STAGE_RAW_FILTER and \
                getattr(node.apply, "raw", None) is not None:
            # two filters in a row: one stage where one filter can do the work of both
            composed = compose_filters(errors[len(errors) - 1], node.apply)
            if composed is not None:
                ops[len(ops) - 1] = composed.raw
                errors[len(errors) - 1] = composed
                continue
        errors.append(None)
        tags.append(None)
        stages.append(m)
        if net.kind[m] == K_BOX:
            if c.timer < 0:
                c.timer = m
            if type(node.call) is BoxCaller:
                kinds.append(STAGE_CALLER)
                ops.append(node.call)
            else:
                kinds.append(STAGE_BOX)
                ops.append(node.call.__call__)
        else:
            raw = getattr(node.apply, "raw", None)  # (an --on-error policy wraps the filter: no raw function)
            if raw is None:
                kinds.append(STAGE_FILTER)
                ops.append(node.apply)
            else:
                kinds.append(STAGE_RAW_FILTER)
                ops.append(raw)
                errors[len(errors) - 1] = node.apply
    c.ops = tuple(ops)
    c.lead = 0
    while c.lead < len(kinds) and kinds[c.lead] == STAGE_SPLIT:
        c.lead += 1
    c.compiles = c.lead < len(kinds) and all(k == STAGE_CALLER for k in kinds[c.lead:])
    c.walk_ops = c.ops[c.lead:]
    c.errors = tuple(errors)
    c.tags = tuple(tags)
    c.nodes = <int *>PyMem_Malloc(len(stages) * sizeof(int))
    if c.nodes == NULL:
        raise MemoryError()
    for i, m in enumerate(stages):
        c.nodes[i] = m
    c.kinds = bytes(kinds)
    c.n = len(stages)
    # the adapter gives every stage the chain's limit, but the stages the controller tunes (their levels)
    tuned = tuple(m for m in chain if m in net.auto_nodes)
    plain = [m for m in chain if m not in net.auto_nodes]
    c.limit = net.conc[plain[0]] if plain else 1
    c.cap = c.limit if c.limit > 1 else 0
    if tuned:  # the controller's levels: read at each invocation (`level`), as an automatic box does
        c.tuned = tuned
        c.tuned_at = bytes(1 if m in net.auto_nodes else 0 for m in stages)
        c.fixed = c.limit if any(net.kind[m] == K_BOX for m in plain) else 1 << 30
        c.cap = -1
    c.period = WALK_SAMPLE_EVERY
    c.done = {}
    return c


cdef inline int check_tag(object keys, object tag, object rec) except -1:
    """A transparent split's stage: ``rec`` holds ``tag`` with an ``int``, as SplitEntity reads it, else the
    split's error (``keys.values`` raises it)."""
    if type(rec.get(tag)) is not int:
        keys.values(rec)
    return 0


cdef bint proven_by(bytearray kinds, list ops, str tag) except -1:
    """Whether the stage before a transparent split with this tag is a box whose every output variant holds
    it: its caller checks each result against its variants, so the record the split gets has the tag."""
    if not kinds or kinds[len(kinds) - 1] != STAGE_CALLER:
        return False
    declared = (<BoxCaller>ops[len(ops) - 1]).declared
    return bool(declared) and all(tag in variant for variant in declared)
