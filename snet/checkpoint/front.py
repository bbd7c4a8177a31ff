"""The FRONT engine's checkpoint hooks: the Python side of ``snet_front/checkpoint.pxi``.

FRONT's workers ask the gate for input whenever one is idle; while a
snapshot is due the gate holds the input back, and the first worker to ask
once the records in flight have drained (and the consumer has written every
output) takes the snapshot, under the input lock: no other worker admits
input meanwhile, and none has a record to work on.
"""

from __future__ import annotations

from typing import Any

from snet.checkpoint.state import Restore


class FrontCheckpoints:
    """Bound to one ``snet_front.runtime.Runtime`` (before it starts) and its Checkpointing."""

    engine_name = "front"
    synchronous = False

    def __init__(self, runtime: Any, checkpointing: Any):
        from snet_front import runtime as module

        self._module = module
        self.runtime = runtime
        restore = Restore(checkpointing.restore) if checkpointing.restore is not None else None
        self.restore = restore
        module.checkpoint_enable(runtime, restore)
        checkpointing.bind(self)

    def unfinished(self, plan: Any) -> list[tuple[int, int, int]]:
        """``(node, filled, patterns)`` of the saved cells holding records that no record reached."""
        return self.restore.unfinished(plan) if self.restore is not None else []

    def quiescent(self) -> bool:
        return bool(self._module.checkpoint_quiescent(self.runtime))

    def records_out(self) -> int:
        return int(self._module.checkpoint_records_out(self.runtime))

    def export_state(self) -> dict:
        return self._module.checkpoint_export(self.runtime)
