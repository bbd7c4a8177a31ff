# The executor split: a split whose replicas run in the split executor (snet.splitexec: in other
# processes or on other machines), its entity and factory, and the running of the executor's batches
# (:func:`executor_due`, :func:`flush_executor`).  Uses the collectors and dispatchers of
# combinators.pxi; the worker loop (workers.pxi) runs the batches.

cimport cython

from snet.errors import SNetRuntimeError

from snet_front.atomics cimport (snet_atomic_add, snet_atomic_load, snet_atomic_store, snet_now, snet_try_lock,
                                 snet_unlock, snet_flag_load)
from snet_front.kinds cimport K_EXECSPLIT


@cython.final
@cython.trashcan(True)
cdef class ExecutorSplitEntity(Entity):
    """A split whose replicas run in the split executor (snet.splitexec).

    A record is checked here (a missing tag fails in place, as without an
    executor; an empty range drops it) and then waits in the executor's
    batch with its group stack.  It stays in ``pending`` until its outputs
    are emitted, so the run cannot end while it waits.  Whichever worker
    fills the batch, or finds the rest of the network quiet
    (`executor_due`), runs it (`flush_executor`) and writes each input's
    outputs, in input order, to this split's out: so ``!!`` needs no
    collector here, and determinism around the split comes from the group
    stacks as everywhere else.
    """
    cdef object keys
    cdef object tag  # the tag of a split on one tag (its record has it: one replica); None for a range split
    cdef long inst

    cdef int invoke(self, Writer w, object item) except -1:
        cdef object rec = record_of(item)
        cdef GStack st = stack_of(item)
        cdef Network rt = self.rt
        cdef bint full = False  # set in the with block; the C compiler cannot tell
        if self.tag is not None and type(rec) is dict and self.tag in <dict>rec:
            pass  # one replica (the tag's value is an int: records are checked where they enter and leave boxes)
        elif not len(self.keys.values(rec)):
            if st is not None:
                w.drop(st)
            return 0
        snet_atomic_add(&rt.pending, 1)  # released when its outputs are emitted
        if snet_atomic_load(&rt.exec_size) == 0:  # the run's first record, which may size the first batch
            with rt.exec_lock:
                if rt.exec_size == 0:
                    rt.executor.first_record(rec)
                    set_batch_size(rt)
        entry = self if st is None else (self, st)  # (no tuple when it can: Taken)
        spin_lock(&rt.exec_word)
        try:
            columns = rt.exec_columns.get(self.node)
            if columns is None:
                columns = rt.exec_columns[self.node] = ([], [], [])
            seq = rt.exec_seq
            rt.exec_seq += 1
            (<list>(<tuple>columns)[0]).append(self.inst)
            (<list>(<tuple>columns)[1]).append(seq)
            (<list>(<tuple>columns)[2]).append(rec)
            rt.exec_waiting[seq] = entry
            rt.exec_filling += 1
            full = rt.exec_filling >= rt.exec_size
            snet_atomic_add(&rt.exec_buffered, 1)
        finally:
            snet_unlock(&rt.exec_word)
        if full:
            flush_executor(rt, w)
        return 0

    cdef Entity resolve_out(self):
        return self.junction_out()  # the worker running a batch writes for every split instance

    cdef Entity branch_exit(self):
        raise SNetRuntimeError("internal error: the operand of an executor split runs in the executor")


# -- the split executor's batches -------------------------------------------------------

cdef bint executor_due(Network rt):
    """True when the executor's batch should run although it is not full.

    That is when nothing but the batch is in flight (every pending item
    is a batched record, or a record parked for ever in a synchro-cell
    star, which no output can come to release) and no input can come
    soon: the input has ended, the throttle holds it, or the input
    iterator has been waiting for its next record longer than the
    executor's ``linger``.  While input flows the batch fills up instead.
    """
    cdef long b = snet_atomic_load(&rt.exec_buffered)
    if b == 0 or snet_atomic_load(&rt.pending) - snet_atomic_load(&rt.parked) != b:
        return False
    if snet_flag_load(&rt.input_done) or not rt.admits_input():
        return True
    cdef double since = rt.input_since
    if since == 0:
        since = rt.input_quiet_since  # the iterator keeps saying it has nothing yet
    return since > 0 and snet_now() - since >= rt.exec_linger


cdef int set_batch_size(Network rt) except -1:
    """Read the executor's batch size (its sizer may change it after a batch): a batch is full at that many
    records, and no input is admitted while twice that many are buffered."""
    cdef long size = max(1, <long>rt.executor.batch_size)
    snet_atomic_store(&rt.exec_size, size)
    snet_atomic_store(&rt.exec_bound, 2 * size)
    return 0


cdef bint batch_full(Network rt):
    spin_lock(&rt.exec_word)
    cdef bint full = rt.exec_filling >= rt.exec_size
    snet_unlock(&rt.exec_word)
    return full


cdef bint flush_executor(Network rt, Writer w) except -1:
    """Run the executor's batch and write every input's outputs (one batch at a time).

    The batch fills here, in C (`ExecutorSplitEntity.invoke`): its columns
    are what the executor's ``take`` would give (``snet.splitexec.Taken``),
    handed to its ``run``; the executor's ``submit``, ``full`` and ``take``
    are the reference engine's.  Records that arrive meanwhile start the
    next batch; it runs at once if it is full by the time this one is done.
    An executor's error is raised after the outputs of the inputs before it
    have been written.
    """
    cdef ExecutorSplitEntity e
    cdef bint ran = False
    while snet_try_lock(&rt.exec_flushing):
        try:
            while not snet_flag_load(&rt.stop):
                spin_lock(&rt.exec_word)
                taken = None
                if rt.exec_filling:
                    taken = rt.exec_columns
                    rt.exec_columns = {}
                    rt.exec_filling = 0
                snet_unlock(&rt.exec_word)
                if taken is None:
                    break
                ran = True
                result = rt.executor.run(taken)
                set_batch_size(rt)  # (its sizer may have changed the size: the bound follows at once)
                for seq, error in result.failures:  # skipped on the executor: fail its tracked input, if any
                    spin_lock(&rt.exec_word)
                    entry = rt.exec_waiting.get(seq)
                    snet_unlock(&rt.exec_word)
                    if type(entry) is tuple:  # (entity, group stack); else the entity alone
                        request = request_of(make_item(None, entry[1]))
                        if request is not None:
                            request.failed(error)
                spin_lock(&rt.exec_word)
                try:
                    waiting = [rt.exec_waiting.pop(done.seq) for done in result.outputs]
                finally:
                    snet_unlock(&rt.exec_word)
                for done, entry in zip(result.outputs, waiting):
                    if type(entry) is tuple:
                        e, st = entry
                    else:
                        e, st = entry, None
                    e.emit(w, done.outputs, st, False)
                    snet_atomic_add(&rt.exec_buffered, -1)
                    snet_atomic_add(&rt.pending, -1)
                if result.error is not None:
                    rt.exec_failed = True  # (the workers drain what is queued elsewhere: no batch runs after it)
                    raise result.error
                if not batch_full(rt):
                    break
        finally:
            snet_unlock(&rt.exec_flushing)
        # A worker that filled the batch just before the unlock could not take
        # the flush: look again, so that a full batch never waits.
        if snet_flag_load(&rt.stop) or not batch_full(rt):
            break
    return ran


# -- factory ------------------------------------------------------------------------------

cdef Entity make_executor_split(Network rt, int n, Ctx ctx):
    cdef ExecutorSplitEntity es = ExecutorSplitEntity.__new__(ExecutorSplitEntity)
    es.setup(rt, n, ctx)
    es.keys = rt.nodes[n].keys
    es.tag = es.keys.tag if es.keys.hi_tag is None else None
    with rt.exec_lock:
        es.inst = rt.executor.new_instance(n, ctx_path(ctx))  # (its place, for checkpoints)
    return es


register_factory(K_EXECSPLIT, make_executor_split)
