"""Checkpoints: consistent snapshots of a run, and resuming from the last one.

``snet run NET.snet -i IN -o OUT --checkpoint DIR`` and
``net.run(records, checkpoint=DIR)``.  A snapshot is taken at a quiescent
point, where no record is in flight, reached by holding the input; it holds
the records stored in synchro-cells and synchro-cell stars (addressed by the
replica they live in), the instances whose initialisers fired, the input
position and the output position, committed together.  docs/runtime.md
("Checkpoints") gives the design.

The parts:

* :mod:`~snet.checkpoint.gate`: when a snapshot is due, and taking it
  (the input gate the engine reads);
* :mod:`~snet.checkpoint.state`: the state's form, shared by both engines,
  and restoring it as an engine builds its instances;
* :mod:`~snet.checkpoint.reference`, :mod:`~snet.checkpoint.front`: each
  engine's hooks (FRONT's own part is ``snet_front/checkpoint.pxi``);
* :mod:`~snet.checkpoint.store`: the directory, written atomically;
* :mod:`~snet.checkpoint.files`: input and output positions and digests;
* :mod:`~snet.checkpoint.command`, :mod:`~snet.checkpoint.api`: the command
  line's and the API's set-up and checks.
"""
