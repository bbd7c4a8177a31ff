# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, auto_pickle=False
"""The FRONT runtime's Python surface: one `Runtime` per run.

Built by :mod:`snet.backends.front` from a plan (:mod:`snet.plan`); the
only Python-facing API is ``start``, ``next_output``, ``halt``, ``close``,
``statistics`` and ``termination_warnings``.  Termination is global
quiescence: the input has ended and ``pending`` (items in inboxes, in
continuations and being invoked) is zero, which also covers feedback loops.
See core.pxi for the design of the runtime as a whole.
"""

import sys
import threading
from collections import deque

from snet_front.atomics cimport (snet_atomic_load, snet_now, snet_flag_load, snet_flag_store, snet_unlock, snet_debug,
                                 SNET_FRONT_DEBUG)
from snet_front cimport kinds
from snet.recordio.inputs import CheckedInputs

# The rest of the runtime, compiled into this one module (runtime.pxd declares
# what the parts share).  Entities and combinators register their factories
# with the core as the module is initialised.
include "core.pxi"
include "walks.pxi"
include "entities.pxi"
include "chains.pxi"
include "combinators.pxi"
include "executors.pxi"
include "workers.pxi"
include "checkpoint.pxi"

cdef extern from *:
    """
    #ifndef SNET_SOURCES_DIGEST
    #define SNET_SOURCES_DIGEST ""
    #endif
    """
    const char *SNET_SOURCES_DIGEST

# The digest of the sources this module was compiled from (snet_front/sources.py): the test suite
# refuses to run against a module older than its sources.
SOURCES_DIGEST = (<bytes>SNET_SOURCES_DIGEST).decode("ascii")

# Built with SNET_FRONT_DEBUG=1 (setup.py): the runtime counts what it makes and frees (includes/debug.h).
DEBUG_BUILD = bool(SNET_FRONT_DEBUG)


def debug_counters():
    """The debug build's counts for this process: runtimes, entities and licences made and freed.

    None in the ordinary build, which counts nothing.  The test suite checks
    after each test that everything made during it was freed.
    """
    if not SNET_FRONT_DEBUG:
        return None
    return {"runtimes_made": snet_atomic_load(&snet_debug.runtimes_made),
            "runtimes_freed": snet_atomic_load(&snet_debug.runtimes_freed),
            "entities_made": snet_atomic_load(&snet_debug.entities_made),
            "entities_freed": snet_atomic_load(&snet_debug.entities_freed),
            "licences_made": snet_atomic_load(&snet_debug.licences_made),
            "licences_freed": snet_atomic_load(&snet_debug.licences_freed)}


# The numbers of snet_front/kinds.pxd, for the test that compares them with snet.plan.
NODE_KINDS = {"NET": kinds.K_NET, "SERIAL": kinds.K_SERIAL, "IDENTITY": kinds.K_IDENT,
              "INIT_BOX": kinds.K_INITBOX, "BOX": kinds.K_BOX, "FILTER": kinds.K_FILTER, "SYNC": kinds.K_SYNC,
              "PARALLEL": kinds.K_PAR, "STAR": kinds.K_STAR, "SYNC_STAR": kinds.K_SYNCSTAR,
              "SPLIT": kinds.K_SPLIT, "FEEDBACK": kinds.K_FEEDBACK, "EXECUTOR_SPLIT": kinds.K_EXECSPLIT}
EXIT_MODES = {"NEXT": kinds.X_NEXT, "UP": kinds.X_UP, "POP": kinds.X_POP, "SINK": kinds.X_SINK}

LATENCY_BUCKETS_COUNT = LATENCY_BUCKETS  # for the test that compares it with snet.stats

# Outputs waiting for the consumer at which input admission stops (backpressure).
OUTPUT_BOUND = 1024
# ... and the most it adapts to for a consumer faster than the network (Runtime.outputs_drained).
OUTPUT_BOUND_MOST = OUTPUT_BOUND * OUTPUT_BOUND_GROWTH
# Outputs `take_outputs` hands over at most at once.
TAKE_BATCH = 64
# Seconds `close` waits for the workers of a stopped run: a worker still inside
# a box call after that is abandoned (it stops at its next safe point).
CLOSE_TIMEOUT = 1.0


cdef class OutputStream:
    """A run's outputs as an iterator: taken from the runtime a batch at a time, handed out one at a time.

    ``refill()`` gives the next batch (a list, at least one record) or
    raises: ``StopIteration`` at the end, or the run's error.  The batch
    being handed out is the stream's own, so ``next()`` on the execution
    and a loop over it share one order, however they are mixed.  A record
    handed out is dropped from the batch at once.  ``on_end`` (None: none)
    is called once with what ended the stream: the ``StopIteration`` or the
    error, before it propagates.
    """
    cdef list batch
    cdef Py_ssize_t at
    cdef object refill
    cdef public object on_end

    def __cinit__(self, refill):
        self.batch = []
        self.at = 0
        self.refill = refill
        self.on_end = None

    def __iter__(self):
        return self

    cdef inline object pop(self):
        """The batch's next record, dropped from it (the batch holds one: ``at < len(batch)``)."""
        cdef object rec = self.batch[self.at]
        self.batch[self.at] = None
        self.at += 1
        return rec

    def __next__(self):
        if self.at < len(self.batch):
            return self.pop()
        try:
            batch = self.refill()
        except BaseException as e:
            self.batch = []
            self.at = 0
            if self.on_end is not None:
                end, self.on_end = self.on_end, None
                end(e)
            raise
        self.batch = batch
        self.at = 0
        return self.pop()

    def take(self, one):
        """The next record for ``next()`` on the execution: the batch's next, else ``one()``, one record alone.

        A caller of ``next()`` takes the runtime's outputs one at a time, as
        it always did: the backpressure bound (``OUTPUT_BOUND``) counts from
        what it has, not from a batch it has not reached.
        """
        if self.at < len(self.batch):
            return self.pop()
        return one()

    def waiting(self):
        """How many records of the batch taken are still to be handed out."""
        return len(self.batch) - self.at


cdef class Runtime(Network):
    """One run of one plan: the network state, the workers, the output channel."""

    def __init__(self, plan, records, int workers, conc, throttle=None, bint steal=True, int seed=0,
                 long output_bound=OUTPUT_BOUND, max_held=None, memory_limit=None, int active=0, auto_nodes=(),
                 chains=()):
        """``conc[i]``: concurrent calls of box node ``i``; ``throttle``: ``(offset, factor)`` or None.

        ``chains``: fused chains of the plan (node ids in order) to run as one
        entity each; ``conc`` gives each of their stages the chain's limit.
        ``auto_nodes``: box nodes whose level ``set_level`` changes while the
        run goes on; ``active``: workers that run at first (0: all), the
        others park until ``set_active`` (snet.autoconc).

        ``output_bound``: outputs not yet taken by the consumer at which input
        admission and the workers stop (0: no bound).  ``max_held`` and
        ``memory_limit`` (bytes): the bounds of snet.core.limits (None: none).
        """
        self.max_held = max_held or 0
        self.mem_limit = memory_limit or 0
        if self.mem_limit:
            self.mem_base = resident_bytes()
        self.load_plan(plan, conc)
        self.chains = {chain[0]: tuple(chain) for chain in chains} or None  # fused chains (entities.pxi)
        self.chain_exits = {chain[0]: chain_exit(plan.nodes, chain) for chain in chains}
        self.walks = {}
        self.outputs = deque()
        unchecked = records.unchecked() if type(records) is CheckedInputs else None
        if unchecked is not None:  # its records are checked here (read_input)
            self.input_checks = records
            self.input_iter, self.known_fields, self.known_tags = unchecked
        else:
            self.input_iter = iter(records)
        self.throttled = throttle is not None
        if throttle is not None:
            self.thr_off, self.thr_fac = throttle
        self.steal_enabled = steal
        self.auto_nodes = frozenset(auto_nodes)
        self.active = active if 0 < active <= workers else workers
        self.park_cond = threading.Condition(threading.Lock())
        self.fail_lock = threading.Lock()
        self.failed_entities = set()
        self.drain_made = -1
        self.partial = {}
        self.cond = threading.Condition(threading.Lock())
        self.idle_cond = threading.Condition(threading.Lock())
        self.out_bound = output_bound
        self.out_bound_least = output_bound
        self.gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
        self.out_empty_at = snet_now()
        self.sink = Sink.__new__(Sink)
        self.sink.setup(self, -1, None)
        self.root_ctx = new_ctx(None, Instance.__new__(Instance), None)
        self.workers = [Worker(self, i, (i + seed) % workers) for i in range(workers)]
        self.threads = []
        self.threads_lock = threading.Lock()
        self.executor = plan.executor
        self.exec_lock = threading.Lock()
        self.exec_columns = {}
        self.exec_waiting = {}
        self.completions = deque()
        self.exec_linger = plan.executor.linger if plan.executor is not None else 0.0

    def start(self):
        """Fire the top-level initialisers, then start the worker threads."""
        self.started = snet_now()
        previous = current_writer()
        set_current_writer(self.workers[0])
        try:
            fire(self, <Worker>self.workers[0], 0, self.root_ctx, None)
        except BaseException as e:
            self.fail(e)
        finally:
            set_current_writer(previous)
        with self.threads_lock:
            self.launched = True
            self.launch(self.active)

    cdef int launch(self, int n) except -1:
        """Start the threads of workers ``len(threads)`` to ``n - 1`` (``threads_lock`` held).

        Workers beyond the active count start when the count first reaches
        them (``set_active``): under box concurrency auto the pool holds the
        cores plus the highest level, most of which a run never uses, and a
        thread that never runs costs nothing, not even its start.
        """
        cdef Worker w
        started = []
        while len(self.threads) < n and not snet_flag_load(&self.stop) and not snet_flag_load(&self.done):
            w = <Worker>self.workers[len(self.threads)]
            t = threading.Thread(target=w.run, name=f"snet-front-worker-{w.wid}", daemon=True)
            self.threads.append(t)
            started.append(t)
        for t in started:
            t.start()
        return 0

    cdef void outputs_drained(self):
        """The consumer found no output waiting: was it the bound that kept the workers from making more?

        With the GIL, a consumer that takes every output as it comes and a
        worker held by the bound take turns: two thread switches each
        ``out_bound`` records, a cheap network's largest cost.  When the
        outputs had reached the bound and the consumer took them all in less
        time than the workers took to make them, it is the faster of the
        two: the bound doubles, up to ``OUTPUT_BOUND_GROWTH`` times the
        run's (docs/runtime.md, "The output bound adapts to the consumer").
        """
        cdef double now = snet_now()
        cdef long bound = snet_atomic_load(&self.out_bound)
        if (bound and self.out_full_at and now - self.out_full_at < self.out_full_at - self.out_empty_at
                and bound < self.out_bound_least * OUTPUT_BOUND_GROWTH):
            snet_atomic_store(&self.out_bound, 2 * bound)
        self.out_empty_at = now
        self.out_full_at = 0.0
        self.out_full_takes = 0

    cdef bint outputs_taken_at_bound(self):
        """The consumer takes outputs; True when it found the bound reached.

        A consumer that finds it so twice in a row without waiting for
        outputs between is slower than the network: the bound halves, down to
        the run's own, so that memory stays bounded by what it was given.
        """
        cdef long bound = snet_atomic_load(&self.out_bound)
        if not bound or snet_atomic_load(&self.n_out) < bound:
            return False
        if not self.out_full_at:
            self.out_full_at = snet_now()
        self.out_full_takes += 1
        if self.out_full_takes >= 2 and bound > self.out_bound_least:
            self.out_full_takes = 0
            snet_atomic_store(&self.out_bound, bound // 2 if bound // 2 > self.out_bound_least
                              else self.out_bound_least)
        return True

    def next_output(self, double timeout=0.02):
        """The next output record; raises the run's error; ``StopIteration`` at termination."""
        cdef Chunk chunk
        self.await_output(timeout)
        full = self.outputs_taken_at_bound() and self.sleepers
        first = self.outputs[0]  # (only the consumer takes from the left)
        if type(first) is Chunk:
            chunk = <Chunk>first
            rec = chunk.recs[chunk.at]
            chunk.recs[chunk.at] = None
            chunk.at += 1
            if chunk.at == len(chunk.recs):
                self.outputs.popleft()
        else:
            rec = self.outputs.popleft()
        snet_atomic_add(&self.n_out, -1)
        if full:
            self.wake_idle(False)  # input was held back: admit again
        return rec

    def take_outputs(self, long most=TAKE_BATCH, double timeout=0.02):
        """The outputs waiting now, in order: a chunk of them made together, else at most ``most``.

        Raises as ``next_output``.  One call for many records: what a
        consumer that iterates the run uses (``FrontExecution.__iter__``).
        What it holds counts as not yet taken by the consumer, so at most
        the output bound (``OUTPUT_BOUND`` for a slow consumer, up to
        ``OUTPUT_BOUND_MOST`` for one that keeps up) and one chunk
        (``BATCH_MOST``, chains.pxi) or ``TAKE_BATCH`` outputs wait.
        """
        cdef Chunk chunk
        cdef list batch
        self.await_output(timeout)
        full = self.outputs_taken_at_bound() and self.sleepers
        outputs = self.outputs
        first = outputs[0]  # (only the consumer takes from the left)
        if type(first) is Chunk:  # a chunk is handed over whole, as it was made
            outputs.popleft()
            chunk = <Chunk>first
            batch = chunk.recs if chunk.at == 0 else chunk.recs[chunk.at:]
        else:
            batch = []
            while len(batch) < most and len(outputs) and type(outputs[0]) is not Chunk:
                batch.append(outputs.popleft())
        snet_atomic_add(&self.n_out, -len(batch))
        if full:
            self.wake_idle(False)  # input was held back: admit again
        return batch

    cdef int await_output(self, double timeout) except -1:
        """Return once an output waits for the consumer; else raise the run's error, or ``StopIteration``."""
        while True:
            if len(self.outputs):
                return 0
            if self.error is not None:
                if snet_atomic_load(&self.exited) < len(self.threads) and self.draining():
                    with self.cond:
                        if not len(self.outputs) and snet_atomic_load(&self.exited) < len(self.threads):
                            self.cond.wait(0.005)
                    continue
                raise self.error
            if snet_flag_load(&self.stop):  # halted or closed: no more outputs will come
                raise StopIteration
            if snet_flag_load(&self.done) and snet_atomic_load(&self.exited) >= len(self.threads):
                if len(self.outputs):
                    continue
                if self.finished == 0:
                    self.finished = snet_now()
                if self.input_error is not None:
                    err, self.input_error = self.input_error, None
                    raise err
                raise StopIteration
            self.outputs_drained()
            with self.cond:
                self.consumer_waiting = True
                if not len(self.outputs) and self.error is None and not snet_flag_load(&self.done):
                    self.cond.wait(timeout)
                self.consumer_waiting = False

    cdef bint draining(self):
        """After a failure, while the workers still finish the records queued before it (docs/runtime.md).

        The outputs they make reach the consumer before the error.  A drain
        that makes no invocation for ``CLOSE_TIMEOUT`` (a box call that does
        not return) is given up: the workers are stopped.
        """
        cdef long made = sum((<Worker>w).n_invocations for w in self.workers)
        cdef double now = snet_now()
        if made != self.drain_made:
            self.drain_made = made
            self.drain_until = now + CLOSE_TIMEOUT
        if now < self.drain_until:
            return True
        snet_flag_store(&self.stop, True)
        self.wake_idle(True)
        return False

    def output_backlog(self):
        """``(outputs waiting for the consumer, the output bound now)``."""
        return snet_atomic_load(&self.n_out), snet_atomic_load(&self.out_bound)

    def has_output(self):
        """True when an output is waiting for the consumer."""
        return len(self.outputs) > 0

    def halt(self):
        """Ask the workers to stop (they finish the invocation they are in); ``close`` joins them."""
        snet_flag_store(&self.stop, True)
        self.wake_idle(True)
        self.notify()

    def close(self, timeout=CLOSE_TIMEOUT):
        """Stop the workers and join them; safe to call twice.

        A worker still inside a box call ``timeout`` seconds after the stop
        is abandoned: it is a daemon thread, and it stops at its next safe
        point (after the call) without touching the outputs any more.
        Returns the number of workers abandoned.
        """
        self.halt()
        deadline = snet_now() + timeout
        with self.threads_lock:  # (no thread starts after the stop: launch checks it)
            threads = list(self.threads)
        for t in threads:
            t.join(max(0.0, deadline - snet_now()))
        if self.finished == 0:
            self.finished = snet_now()
        with self.fail_lock:
            self.failed_entities.clear()
        return sum(1 for t in threads if t.is_alive())

    def termination_warnings(self):
        """(node id, filled, total) for every unfired cell that holds records, in creation order."""
        spin_lock(&self.partial_lock)
        try:
            entries = list(self.partial.values())
        finally:
            snet_unlock(&self.partial_lock)
        entries.sort(key=lambda e: e[0])
        return [(node, cell.filled(), cell.shape.count) for _, cell, node in entries if cell.filled() > 0]

    def held_now(self):
        """What the bound ``max_held`` counts now: (records in flight, entities alive, sync-star cells)."""
        return (snet_atomic_load(&self.pending), snet_atomic_load(&self.counters.alive),
                snet_atomic_load(&self.cells_held))

    def held_in_cells(self):
        """Records held now in synchro-cells that have not fired (patterns filled, summed over the cells)."""
        spin_lock(&self.partial_lock)
        try:
            cells = [e[1] for e in self.partial.values()]
        finally:
            snet_unlock(&self.partial_lock)
        return sum(cell.filled() for cell in cells)

    # -- the controller's levers and gauges (snet.autoconc) ---------------------

    def set_level(self, int node, int level):
        """Let up to ``level`` calls of box node ``node`` (one of ``auto_nodes``) run at once, from now on."""
        if node not in self.auto_nodes or level < 1:
            raise ValueError(f"set_level: node {node} is not an automatic box, or level {level} < 1")
        self.conc[node] = level

    def level(self, int node):
        return self.conc[node]

    def set_active(self, int n):
        """Run ``n`` workers (1 ... all), park the others; returns the count set."""
        n = max(1, min(n, len(self.workers)))
        self.active = n
        with self.threads_lock:
            if self.launched:
                self.launch(n)
        with self.park_cond:
            self.park_cond.notify_all()
        return n

    def active_workers(self):
        return self.active

    def workers_started(self):
        """How many workers' threads have started (those below the highest active count so far)."""
        return len(self.threads)

    def sample(self, nodes):
        """(now, invocations, [(calls, seconds, CPU seconds) per node of ``nodes``]): the counters so far, cheaply."""
        cdef Worker w
        cdef long invocations = 0
        cdef int n
        figures = []
        for n in nodes:
            if n < 0 or n >= self.nnodes:
                raise IndexError(f"sample: no node {n}")
            calls, seconds, cpu = 0, 0.0, 0.0
            for w in self.workers:
                calls += w.box_calls[n]
                seconds += w.box_time[n]
                cpu += w.box_cpu[n]
            figures.append((calls, seconds, cpu))
        for w in self.workers:
            invocations += w.n_invocations
        return snet_now(), invocations, figures

    def box_queues(self):
        """Records waiting now in the inboxes of each box node: ``{node id: count}``, nodes with none left out.

        Read from the workers' licences, which name every entity with
        records waiting (a licence per record written), so nothing is
        counted on the hot path for it.
        """
        cdef Worker w
        cdef Entity e
        cdef int node
        seen = {}
        for w in self.workers:
            spin_lock(&w.list_lock)
            try:
                refs = list(w.refs)
            finally:
                snet_unlock(&w.list_lock)
            for ref in refs:
                e = (<Licence>ref).entity
                # a fused chain's queue is its last box's (its ``node`` may be a split it ends inside)
                node = (<ChainEntity>e).walk_node if type(e) is ChainEntity else e.node
                if self.kind[node] == kinds.K_BOX:
                    seen[id(e)] = (e, node)
        queues = {}
        for e, node in seen.values():
            n = len(e.inbox)
            if n:
                queues[node] = queues.get(node, 0) + n
        return queues

    def statistics(self):
        """Counters of the run so far, as plain data.

        Each box (by name, its nodes added up) has its calls, seconds, call
        histogram (``LATENCY_BUCKETS`` counts), the records queued for it now
        and its concurrency limit (the largest of its nodes').
        """
        cdef Worker w
        cdef int i, b
        cdef long *hist
        boxes = {}
        queues = self.box_queues()
        for i in range(self.nnodes):
            if self.kind[i] == kinds.K_BOX or self.kind[i] == kinds.K_INITBOX:
                calls = 0
                for w in self.workers:
                    calls += w.box_calls[i]
                if not calls and i not in queues:
                    continue
                entry = boxes.get(self.node_names[i])
                if entry is None:
                    entry = boxes[self.node_names[i]] = {"calls": 0, "seconds": 0.0,
                                                         "histogram": [0] * LATENCY_BUCKETS, "queued": 0, "limit": 1}
                entry["calls"] += calls
                entry["queued"] += queues.get(i, 0)
                entry["limit"] = max(entry["limit"], self.conc[i])
                histogram = entry["histogram"]
                for w in self.workers:
                    entry["seconds"] += w.box_time[i]
                    hist = w.box_hist + i * LATENCY_BUCKETS
                    for b in range(LATENCY_BUCKETS):
                        histogram[b] += hist[b]
        end = self.finished if self.finished else snet_now()
        return {
            "seconds": end - self.started if self.started else 0.0,
            "records_in": snet_atomic_load(&self.records_in),
            "records_out": snet_atomic_load(&self.records_out),
            "boxes": dict(sorted(boxes.items())),
            "entities": {"created": self.counters.created, "alive": self.counters.alive,
                         "peak": self.counters.peak, "reclaimed": self.counters.reclaimed},
            "invocations": sum((<Worker>w).n_invocations for w in self.workers),
            "continuations": sum((<Worker>w).n_cont for w in self.workers),
            "steals": sum((<Worker>w).n_steals for w in self.workers),
            "licences_stolen": sum((<Worker>w).n_stolen for w in self.workers),
            "records_moved_past_identities": sum((<Worker>w).n_moved for w in self.workers),
            "workers": [{"busy_seconds": (<Worker>w).busy, "invocations": (<Worker>w).n_invocations,
                         "continuations": (<Worker>w).n_cont, "inputs": (<Worker>w).n_inputs,
                         "licences_stolen": (<Worker>w).n_stolen} for w in self.workers],
        }
