# Checkpoints (snet.checkpoint): the FRONT runtime's state at a quiescent point, exported and imported.
#
# A thin layer over the entities: when a run takes checkpoints, every
# synchro-cell and synchro-cell star entity is listed as it is built
# (`ckpt_adopt`), and given its saved state there if the run resumes; the
# firing of initialisers asks `ckpt_fires` first.  An entity's place is the
# path of the replica it is in (snet/checkpoint/state.py), read from its
# context: a star incarnation frame gives (star node, replica), a split frame
# (split node, the replica's tag value); other frames have one instance.
# Only the gate's quiescent point reads the state, when no worker has a
# record to work on, so nothing here takes an entity's lock.

from snet.checkpoint.state import new_state
from snet.gcpause import gc_paused


cdef tuple ctx_path(Ctx c):
    """The path of the replica a context is in (see snet/checkpoint/state.py)."""
    cdef list parts = []
    while c is not None:
        f = c.frame
        if type(f) is StarEntity:
            parts.append(((<Entity>f).node, (<StarEntity>f).k - 1))
        elif type(f) is SplitEntity:
            parts.append(((<Entity>f).node, c.inst.key))
        c = c.tail
    parts.reverse()
    return tuple(parts)


cdef int ckpt_adopt(Network rt, Entity e) except -1:
    """List a synchro-cell or synchro-cell star entity just built; a resumed run gives it its saved state."""
    cdef SyncEntity s
    cdef SyncStarEntity z
    cdef SyncCell cell
    rt.ckpt_entities.append(e)
    if rt.ckpt_restore is None:
        return 0
    path = ctx_path(e.ctx)
    if type(e) is SyncEntity:
        s = <SyncEntity>e
        slots = rt.ckpt_restore.take_cell(path, e.node)
        if slots is False:  # nothing saved for it
            return 0
        s.cell.restore(slots)
        if slots is None:  # it had fired: the instance is the identity
            snet_flag_store(&s.identity, True)
        else:
            rt.note_partial(s.cell, e.node, False)
        return 0
    z = <SyncStarEntity>e
    saved = rt.ckpt_restore.take_star(path, e.node)
    if saved is None:
        return 0
    replicas, cells = saved
    with gc_paused():  # many cells at once: collections would walk them again and again
        for cell in z.index.restore(replicas, cells):
            snet_atomic_add(&rt.cells_held, 1)
            rt.note_partial(cell, z.sync_node, False)
    return 0


cdef bint ckpt_fires(Network rt, Ctx ctx) except -1:
    """Whether the initialisers of the instance of ``ctx`` fire now (not if they fired before a resume)."""
    path = ctx_path(ctx)
    if rt.ckpt_restore is not None and path in rt.ckpt_restore.fired:
        return False
    rt.ckpt_fired.add(path)
    return True


cdef bint ckpt_restores_key(SplitEntity sp, object value) except -1:
    """Whether a resumed run saved state in the replica of ``sp`` for ``value`` (it must be built anew)."""
    return ctx_path(sp.ctx) + ((sp.node, value),) in sp.rt.ckpt_restore.prefixes


def checkpoint_enable(Network rt, restore):
    """Take checkpoints in this run (before `start`); ``restore``: a snet.checkpoint.state.Restore or None."""
    rt.ckpt_entities = []
    rt.ckpt_fired = set()
    rt.ckpt_restore = restore
    if restore is not None:
        for node, record in restore.parked:
            rt.park(node, record)


def checkpoint_quiescent(Network rt):
    """No record in flight: every one admitted has left, been consumed, or is stored (or parked for ever)."""
    return (snet_atomic_load(&rt.pending) == snet_atomic_load(&rt.parked) and not len(rt.completions)
            and not len(rt.outputs))


def checkpoint_records_out(Network rt):
    return snet_atomic_load(&rt.records_out)


def checkpoint_export(Network rt):
    """The state at a quiescent point, in the form of snet/checkpoint/state.py."""
    cdef SyncCell c
    cdef SyncStarEntity z
    cells = []
    stars = []
    for e in rt.ckpt_entities:
        if type(e) is SyncEntity:
            c = (<SyncEntity>e).cell
            if c.fired or c.filled():
                cells.append((ctx_path((<Entity>e).ctx), (<Entity>e).node, c.saved()))
        else:
            z = <SyncStarEntity>e
            if z.index.cells:
                replicas, saved = z.index.saved()
                stars.append((ctx_path(z.ctx), z.node, replicas, saved))
    parked = [rt.parked_first] * snet_atomic_load(&rt.parked) if snet_atomic_load(&rt.parked) else []
    return new_state(cells, stars, rt.ckpt_fired, parked, rt.ckpt_restore)
