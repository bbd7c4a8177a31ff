# Workers: licences, the worker loop, input admission, stealing.
#
# Every entity has one inbox; writing a record gives the *writer* one read
# licence for the destination, kept in the writer's list ordered
# output-first.  A worker uses its own licences head first, then admits one
# input record, then steals half the licences of the first schedulable
# stream of a victim, then naps.  See core.pxi for the whole design.

cimport cython
from posix.unistd cimport usleep
from cpython.mem cimport PyMem_Malloc, PyMem_Free

from snet_front.atomics cimport (snet_atomic_add, snet_atomic_load, snet_try_lock, snet_unlock, snet_is_locked,
                                 snet_now, snet_flag_load, snet_flag_store)

from snet.core.semantics import cannot_terminate
from snet.errors import SNetError, SNetInterrupted
from snet.requests import NO_INPUT_YET, Request, set_current_request

# Idle back-off (microseconds): short enough that a stolen licence is
# picked up within a fraction of a millisecond, long enough that idle
# workers do not take the GIL from busy ones more than every few hundred µs.
cdef enum:
    IDLE_STEP_US = 20
    IDLE_MAX_US = 200
    IDLE_NAPS = 100  # short naps (about 20 ms in all) before an idle worker sleeps on the condition
    SWEEP_EVERY = 256  # work_own scans between sweeps of lapsed licences
    TICKS_PER_LOOK = 64  # invocations between two looks at the clock in `safe_point`

# How long a worker may hold the GIL without a safe point (seconds): the
# interpreter's own switch interval, so that a network whose every step is
# C code (no bytecode that would give the GIL up) still lets the main thread
# handle Ctrl-C and SIGTERM, and other threads of an embedding process run.
cdef double YIELD_S = 0.005

# Input records a worker walks one at a time, measuring each, before it may take its input in runs
# (Worker.admit_run)
cdef enum:
    INPUT_COSTS_KNOWN = 64

# Longest sleep of an idle worker on the condition (seconds).  Writers wake a
# sleeper when they add a licence, so this only bounds a lost wake-up (a
# licence added just before the worker registered as a sleeper).
cdef double IDLE_SLEEP_S = 0.02

# Longest wait of a parked worker (seconds); the controller and the end of the run notify it.
cdef double PARK_WAIT_S = 0.5

cdef object _WAKE = WakeUp.__new__(WakeUp)  # a wake-up item for a collector


cdef object read_input(Network rt):
    """The next input record (``StopIteration`` at the end); a ``CheckedInputs`` input's checked here.

    The common case, a dict whose labels are all known (a tag's with an
    ``int``), is tested in place; anything else goes to the input's own
    ``check``, which raises for a bad record as its generator would.
    """
    cdef PyObject *key
    cdef PyObject *value
    cdef Py_ssize_t pos = 0
    rec = next(rt.input_iter)
    if rt.input_checks is None:
        return rec
    rt.input_index += 1
    if type(rec) is dict:
        while PyDict_Next(rec, &pos, &key, &value):
            if <object>key in rt.known_fields:
                continue
            if type(<object>value) is int and <object>key in rt.known_tags:
                continue
            break
        else:
            return rec
    return rt.input_checks.check(rec, rt.input_index)


cdef Group request_group(object request):
    """The group that follows every record of one tracked input; ``drop`` finishes the request at 0."""
    cdef Group g = Group.__new__(Group)
    g.count = 1
    g.owner = None
    g.request = request
    return g


@cython.final
cdef class Licence:
    def __cinit__(self):
        snet_debug_count(&snet_debug.licences_made, 1)

    def __dealloc__(self):
        snet_debug_count(&snet_debug.licences_freed, 1)


cdef class Worker(Writer):
    """One worker thread: its licence list, continuation slot and counters."""

    def __cinit__(self, Network rt, int wid, int victim):
        self.rt = rt
        self.wid = wid
        self.refs = []
        self.index = {}
        self.cur = -1
        self.victim = victim
        self.walk_seq = -1
        self.box_time = <double *>PyMem_Malloc(rt.nnodes * sizeof(double))
        self.box_calls = <long *>PyMem_Malloc(rt.nnodes * sizeof(long))
        self.box_cpu = <double *>PyMem_Malloc(rt.nnodes * sizeof(double))
        self.box_hist = <long *>PyMem_Malloc(rt.nnodes * LATENCY_BUCKETS * sizeof(long))
        if self.box_time == NULL or self.box_calls == NULL or self.box_cpu == NULL or self.box_hist == NULL:
            raise MemoryError()
        for i in range(rt.nnodes):
            self.box_time[i] = 0.0
            self.box_calls[i] = 0
            self.box_cpu[i] = 0.0
        for i in range(rt.nnodes * LATENCY_BUCKETS):
            self.box_hist[i] = 0

    def __dealloc__(self):
        PyMem_Free(self.box_time)
        PyMem_Free(self.box_calls)
        PyMem_Free(self.box_cpu)
        PyMem_Free(self.box_hist)

    cdef int write(self, Entity dest, object item, bint last) except -1:
        """Send one item to ``dest``; the last write of an invocation may continue there."""
        cdef Network rt = self.rt
        if dest is rt.sink:
            rt.output(item)
            if type(item) is Tagged:  # it leaves the network: its tracked input has one record fewer
                self.drop((<Tagged>item).stack)
            return 0
        if last and self.cont_e is None and snet_try_lock(&dest.lock):
            if saturated(dest):
                snet_unlock(&dest.lock)
                snet_atomic_add(&rt.pending, 1)
                inbox_append(dest.inbox, item)
                self.add_licences(dest, 1)
                return 0
            inbox = dest.inbox
            if len(inbox):  # older records first: keep the stream FIFO
                inbox_append(inbox, item)
                item = inbox_popleft(inbox)
            # The continuation takes over the count of the item being invoked
            # (`process` does not release it): no increment here, no decrement there.
            self.cont_e = dest
            self.cont_item = item
            self.n_cont += 1
            return 0
        snet_atomic_add(&rt.pending, 1)
        inbox_append(dest.inbox, item)
        self.add_licences(dest, 1)
        return 0

    cdef bint safe_point(self) except -1:
        """Called at every invocation and unfolding; True when the run is stopping.

        Every ``YIELD_S`` of work the worker lets the GIL go (a waiting
        thread, the main one handling a signal included, takes it then) and
        checks the run's bounds (snet.core.limits), which raise the
        divergence error.  So however long one entity or one walk runs,
        Ctrl-C, SIGTERM and the bounds get their turn (docs/runtime.md).
        """
        cdef double now
        cdef Network rt = self.rt
        self.ticks += 1
        if self.ticks < TICKS_PER_LOOK:
            return False
        self.ticks = 0
        now = snet_now()
        if now < self.next_yield:
            return False
        with nogil:  # a thread that asked for the GIL gets it now (CPython's forced switch)
            now = snet_now()
        self.next_yield = now + YIELD_S
        if snet_flag_load(&rt.stop):
            return True
        rt.check_bounds(now)
        return False

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
        if snet_atomic_load(&self.rt.sleepers):  # an idle worker could steal this
            self.rt.wake_idle(False)
        return 0

    cdef int drop(self, GStack st) except -1:
        """A record carrying ``st`` is gone: lower its groups, wake collectors that may move on."""
        while st is not None:
            if snet_atomic_add(&st.group.count, -1) == 0:
                if st.group.owner is None:  # a tracked input: nothing from it is left inside
                    st.group.request.finish()
                else:
                    self.write(st.group.owner, _WAKE, False)
            st = st.next
        return 0

    cdef int process(self, Entity e, object item) except -1:
        """Invoke ``e`` (locked by us) on ``item``, then follow continuations."""
        cdef Network rt = self.rt
        cdef int rc
        cdef bint ok = False
        try:
            while True:
                if rt.tracking:
                    set_current_request(request_of(item))
                rc = e.invoke(self, item)
                if rc == 0:
                    snet_unlock(&e.lock)
                self.n_invocations += 1
                e = self.cont_e
                if e is None:
                    snet_atomic_add(&rt.pending, -1)
                    ok = True
                    return 0
                # (else the continuation carries this invocation's count on: see `write`)
                item = self.cont_item
                self.cont_e = None
                self.cont_item = None
                if snet_flag_load(&rt.stop) or self.safe_point():
                    ok = True
                    return 0
        finally:
            if not ok:  # (raised) the entity stays locked: no later record of its inbox passes it
                self.failed_at = e

    cdef bint work_own(self) except -1:
        """Use one licence from the own list (head first); True on progress."""
        cdef Licence ref
        cdef Entity e
        cdef Py_ssize_t i = 0
        cdef Network rt = self.rt
        refs = self.refs
        if self.safe_point():
            return False
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
                    if saturated(e) or (rt.error is not None and e in rt.failed_entities):
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
        item = inbox_popleft(e.inbox)
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

    cdef bint holds_live_work(self):
        """True while a licence of this worker is for a record still waiting at an entity that has not failed."""
        cdef Licence ref
        cdef Network rt = self.rt
        spin_lock(&self.list_lock)
        try:
            with rt.fail_lock:
                for r in self.refs:
                    ref = <Licence>r
                    if ref.count > 0 and len(ref.entity.inbox) and ref.entity not in rt.failed_entities:
                        return True
            return False
        finally:
            snet_unlock(&self.list_lock)

    cdef bint try_input(self) except -1:
        """Admit one input record (one worker at a time; none once a record has failed)."""
        cdef Network rt = self.rt
        cdef Entity dest
        cdef double started
        if (snet_flag_load(&rt.input_done) or rt.error is not None or self.holds_work()
                or not snet_try_lock(&rt.input_lock)):
            return False
        try:
            if rt.input_done:
                return False
            if not rt.admits_input():
                return False
            if rt.throttle_holds():
                rt.throttle_overridden()
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
            if (type(dest) is ChainEntity and rt.input_peeked is None and not rt.tracking and not rt.throttled
                    and rt.executor is None):
                most = (<ChainEntity>dest).batch_size(self)
                if most > 1 and self.admit_batch(dest, most):
                    return True
            elif (type(dest) is not ChainEntity and rt.gil and self.input_costs >= INPUT_COSTS_KNOWN
                    and self.input_cost <= BATCH_WALK_MOST and rt.input_peeked is None and not rt.tracking
                    and not rt.throttled and rt.executor is None):
                if self.admit_run(dest):
                    return True
                if snet_flag_load(&rt.input_done):  # (the run's first read found the end, or an error)
                    return False
            if rt.executor is not None:  # (only the split executor's batches ask how long the input waits)
                rt.input_since = snet_now()
            started = snet_now()
            try:
                if rt.input_peeked is not None:  # what the last batch read and left
                    rec, rt.input_peeked = rt.input_peeked, None
                else:
                    rec = read_input(rt)
            except StopIteration:
                snet_flag_store(&rt.input_done, True)
                return False
            except BaseException as e:
                rt.input_error = e
                snet_flag_store(&rt.input_done, True)
                return False
            finally:
                rt.input_since = 0
            if rec is NO_INPUT_YET:  # nothing now, more later: go on with other work (snet.requests)
                if rt.input_quiet_since == 0:
                    rt.input_quiet_since = snet_now()
                if type(rt.root_entry) is StarEntity:  # (the entry may hold a stretch of dissolved incarnations)
                    rt.root_entry = settle_entry(rt.root_entry)
                return False
            rt.input_quiet_since = 0
            if type(rec) is Request:  # a tracked input: its records carry its group (snet.requests)
                rt.tracking = True
                rec = make_item(rec.record, push(request_group(rec), None))
            elif type(rec) is not dict:
                rec = dict(rec)
            snet_atomic_add(&rt.records_in, 1)
            self.n_inputs += 1
            # The input's count, taken over by a continuation; otherwise `write` counted it itself
            snet_atomic_add(&rt.pending, 1)
            self.write(dest, rec, True)
            if self.cont_e is None:
                snet_atomic_add(&rt.pending, -1)
        finally:
            snet_unlock(&rt.input_lock)
        if self.cont_e is not None:
            e = self.cont_e
            item = self.cont_item
            self.cont_e = None
            self.cont_item = None
            self.process(e, item)
            self.note_input_cost(snet_now() - started)
        return True

    cdef void note_input_cost(self, double seconds):
        """One more measure of an input record's walk (read, admission, every continuation): the moving mean."""
        if self.input_costs == 0:
            self.input_cost = seconds
        else:
            self.input_cost += (seconds - self.input_cost) * 0.125
        self.input_costs += 1

    cdef object admit_next(self):
        """The next input record of a batch or a run (input lock held), counted in and pending; None ends it.

        None when the input ended or failed (its flag set, the error kept
        for the consumer), or when the record is not a plain dict (a tracked
        request, ``NO_INPUT_YET``, another mapping): that one is left in
        ``input_peeked`` for the one-record path.
        """
        cdef Network rt = self.rt
        try:
            rec = read_input(rt)
        except StopIteration:
            snet_flag_store(&rt.input_done, True)
            return None
        except BaseException as e:
            rt.input_error = e
            snet_flag_store(&rt.input_done, True)
            return None
        if type(rec) is not dict:
            rt.input_peeked = rec
            return None
        rt.input_quiet_since = 0
        snet_atomic_add(&rt.records_in, 1)
        snet_atomic_add(&rt.pending, 1)
        self.n_inputs += 1
        return rec

    cdef bint admit_run(self, Entity dest) except -1:
        """Admit input records one after another, each walked to its end before the next (input lock held).

        With the GIL, when an input record costs little from its read to the
        end of its walk (``input_cost``, measured on the records admitted one
        at a time), the worker's turn and the input lock taken per record cost
        as much as the walk.  Here the worker holds the input lock and does
        what ``try_input`` does, record after record, for ``BATCH_SPAN`` at
        most: read, write to the entry, follow the continuations to the end.
        That is one schedule of the records the workers could have made
        anyway (one worker admits while the others find no input), so the
        outputs and their order are those of any run.  The run ends at a
        record that goes no further than a queue (its entry is busy with
        another worker's record), at a record that is not a plain dict (left
        for the one-record path, as in ``admit_batch``), at the output bound,
        and at a safe point that stops the run.  Without the GIL the workers
        walk admitted records at once, so this is not used there.

        False when it read nothing.
        """
        cdef Network rt = self.rt
        cdef long taken = 0
        cdef double t0 = snet_now()
        cdef Entity e
        while taken < BATCH_MOST:
            rec = self.admit_next()  # (its pending count is taken over by the continuation, as in try_input)
            if rec is None:
                break
            taken += 1
            self.write(dest, rec, True)
            if self.cont_e is None:  # queued behind a record another worker walks
                snet_atomic_add(&rt.pending, -1)
                break
            e = self.cont_e
            item = self.cont_item
            self.cont_e = None
            self.cont_item = None
            self.process(e, item)
            if (snet_now() - t0 >= BATCH_SPAN or snet_flag_load(&rt.stop) or rt.error is not None or self.safe_point()
                    or not rt.admits_input()):
                break
            dest = rt.root_entry
            if dest.identity:  # (dissolved: the one-record path walks past it)
                break
        if taken:
            self.note_input_cost((snet_now() - t0) / taken)
        return taken > 0

    cdef bint admit_batch(self, Entity entry, long most) except -1:
        """Walk up to ``most`` input records through the fused chain ``entry``, one after another (input lock held).

        The network's entry is a chain whose walk is cheap: admitting its
        input one record at a time would cost more than the walk (the
        worker's turn, a continuation, an output wake-up per record).  Here
        the worker holds the chain while it reads and walks the records one
        after another, and its outputs reach the consumer in one piece: order
        is kept, since nothing is queued before the chain and no walk of it is
        in flight.  Each record counts as pending from its read until its
        outputs are out, so a checkpoint waits for the batch to end.  A record
        that is not a plain dict (a tracked request, ``NO_INPUT_YET``, a
        mapping) ends the batch and is left for the one-record path.  A failing
        walk ends it too, after the outputs made before it are out, and leaves
        the chain locked, as ``process`` leaves a failing entity: no later
        record passes the chain before the worker's loop records the failure.

        False (nothing read) when the chain is busy: the caller admits one
        record as ever.
        """
        cdef Network rt = self.rt
        cdef ChainEntity chain = <ChainEntity>entry
        cdef Entity out
        cdef list made = None
        cdef long taken = 0
        cdef long room
        cdef bint failed = True
        if not snet_try_lock(&chain.lock):
            return False
        if len(chain.inbox) or not chain.settled():
            snet_unlock(&chain.lock)
            return False
        out = chain.resolve_out()
        if out is rt.sink:
            made = []
        if rt.out_bound:  # (admits_input saw room for one at least)
            room = snet_atomic_load(&rt.out_bound) - snet_atomic_load(&rt.n_out)
            if room < most:
                most = room if room > 1 else 1
        try:
            while taken < most:
                rec = self.admit_next()
                if rec is None:
                    break
                taken += 1
                self.n_invocations += 1
                res = chain.walk(self, rec, 0, False, chain.sampling(self))
                if made is not None:
                    if type(res) is dict:
                        made.append(res)
                    else:
                        made.extend(<list>res)
                elif type(res) is dict:
                    self.write(out, res, False)
                else:
                    chain.emit(self, res, None, False)
                if self.safe_point() or rt.error is not None:
                    break
            failed = False
        finally:
            try:
                if made is not None:
                    rt.output_many(made)
            finally:
                snet_atomic_add(&rt.pending, -taken)
                if not failed:
                    snet_unlock(&chain.lock)
                else:
                    self.failed_at = chain
        return True

    cdef bint try_completion(self) except -1:
        """Finish one async box call that the box loop has done (its outputs, in the box's order)."""
        try:
            e, done = self.rt.completions.popleft()
        except IndexError:
            return False
        (<Entity>e).complete(self, done)
        return True

    cdef bint try_steal(self) except -1:
        """Take half the licences of the first schedulable stream of a victim."""
        cdef Network rt = self.rt
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

    cdef int park(self) except -1:
        """Wait while this worker is beyond the active ones (box concurrency auto), the run goes on.

        A worker parks with no work of its own: beyond the active count it
        admits no input and steals nothing, finishes what its licences hold,
        then waits here until the controller raises the count or the run
        ends (``wake_idle(True)`` wakes parked workers too).
        """
        cdef Network rt = self.rt
        with rt.park_cond:
            while (self.wid >= rt.active and not snet_flag_load(&rt.stop) and not snet_flag_load(&rt.done)
                   and rt.error is None):
                rt.park_cond.wait(PARK_WAIT_S)
        return 0

    def run(self):
        """The worker thread: the worker loop, and after a record's failure the loop again until it drains.

        A run-time error of a record (a box raising, a routing error: an
        ``SNetError``) is recorded as the run's error, and the entity it
        raised in stays locked, so no record behind it in its inbox passes
        it.  The workers admit no more input and go on with what is queued
        elsewhere, records that came before the failing one among them, so
        their outputs reach the consumer before the error; each exits when
        what it holds waits only at failed entities.  Any other error (the
        run's bounds, an internal one) stops every worker at once.
        """
        cdef Network rt = self.rt
        set_current_writer(self)
        try:
            while True:
                try:
                    self.loop()
                    break
                except BaseException as e:
                    drain = isinstance(e, SNetError) and not isinstance(e, SNetInterrupted)
                    if self.failed_at is not None:
                        with rt.fail_lock:
                            rt.failed_entities.add(self.failed_at)
                        self.failed_at = None
                    rt.fail(e, drain)
                    if not drain:
                        break
        finally:
            snet_atomic_add(&rt.exited, 1)
            rt.notify()

    cdef int loop(self) except -1:
        """The worker loop: own work, then input, then stealing, then a short nap; returns when the run ends."""
        cdef Network rt = self.rt
        cdef int idle = 0
        cdef double t0
        cdef double last = 0.0  # when the last turn of the loop began, if it did work (0: it did none)
        cdef unsigned int nap
        cdef long left
        try:
            while not snet_flag_load(&rt.stop) and not snet_flag_load(&rt.done):
                t0 = snet_now()  # one clock read a turn: a busy turn's time is counted at the next
                if last:
                    self.busy += t0 - last
                    last = 0.0
                if rt.out_bound and snet_atomic_load(&rt.n_out) >= snet_atomic_load(&rt.out_bound):
                    # Outputs wait for the consumer: make no more (it wakes a sleeper when it
                    # takes them), or a network that unfolds many outputs from one input would
                    # hold them all (backpressure inside the network, as for its input).
                    pass
                elif (self.work_own() or (len(rt.completions) and self.try_completion())
                        or (self.wid < rt.active and (self.try_input() or (rt.steal_enabled and self.try_steal())))):
                    last = t0
                    idle = 0
                    continue
                if rt.executor is not None and not rt.exec_failed and executor_due(rt) and flush_executor(rt, self):
                    last = t0
                    idle = 0
                    continue
                if rt.consumer_waiting and len(rt.outputs):
                    rt.notify_consumer()
                # The acquire load orders the read of `pending` after it: a
                # worker that sees the input ended sees every input's count
                # in `pending` (without the GIL, loads may otherwise pass).
                if snet_flag_load(&rt.input_done):
                    left = snet_atomic_load(&rt.pending)
                    if left == 0 and rt.executor is not None:
                        stuck = rt.executor.stuck()  # records its replicas keep for ever (snet.splitexec)
                        if stuck is not None:
                            rt.fail(stuck)
                            break
                    if left == 0:
                        snet_flag_store(&rt.done, True)
                        rt.notify()
                        rt.wake_idle(True)
                        break
                    if left == snet_atomic_load(&rt.parked):  # only records that can never leave
                        node, record = rt.parked_first
                        rt.fail(cannot_terminate(rt.span_of(node), left, record))
                        break
                if rt.error is not None and not self.holds_live_work() and not len(rt.completions):
                    break  # drained: what is left waits at failed entities (run)
                if self.wid >= rt.active and not self.holds_work():
                    self.park()
                    idle = 0
                    continue
                idle += 1
                if idle <= IDLE_NAPS:
                    nap = IDLE_STEP_US * idle
                    if nap > IDLE_MAX_US:
                        nap = IDLE_MAX_US
                    with nogil:  # idle: no Python object is touched while napping
                        usleep(nap)
                else:  # idle for a while: sleep until a writer, the consumer or the end wakes us
                    snet_atomic_add(&rt.sleepers, 1)
                    try:
                        with rt.idle_cond:
                            if not snet_flag_load(&rt.stop) and not snet_flag_load(&rt.done):
                                rt.idle_cond.wait(IDLE_SLEEP_S)
                    finally:
                        snet_atomic_add(&rt.sleepers, -1)
        finally:
            if last:
                self.busy += snet_now() - last
        return 0
