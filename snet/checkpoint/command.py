"""``snet run --checkpoint DIR``: the run's input, output and snapshots, set up before it starts.

:func:`open_checkpointed` checks that the run can take checkpoints (an input
file, an output file, no Spark), opens the directory, and on
a resume checks that nothing the run depends on changed: the network file,
the files the boxes come from, the input file up to the position read, the
output file up to the committed position, the engine.  Each refusal names
what changed and exits 2; ``--checkpoint-reset`` starts afresh.  It then
returns the gate (the records the engine reads) and the committed output
(the writer the command writes to).
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from snet.checkpoint.files import CommittedOutput, open_input, open_output
from snet.checkpoint.gate import DEFAULT_INTERVAL, Checkpointing, InputGate
from snet.checkpoint.store import CheckpointStore, box_file_digests, file_digest
from snet.deadletters import DeadLetters
from snet.errors import SNetUsageError
from snet.options import DEFAULT_ENGINE

RESET_HINT = "run with --checkpoint-reset to start afresh"


@attrs.define
class CheckpointedRun:
    """What ``snet run`` reads, writes and commits when it takes checkpoints."""

    checkpointing: Checkpointing
    records: InputGate
    output: CommittedOutput
    source: Any
    resumed: bool
    errors: Any = None  # the error file (`snet.deadletters.DeadLetters`) of --errors, or None

    @property
    def input_file(self) -> Any:
        """The input file object (for ``--progress``), or None."""
        return getattr(self.source, "f", None)

    def close(self) -> None:
        self.checkpointing.stop()
        self.source.close()
        if self.errors is not None:
            self.errors.close()


def refuse_unsupported(args: Any) -> None:
    """Refuse, before anything is opened, a run that cannot take checkpoints."""
    if args.input in (None, "-"):
        raise SNetUsageError("--checkpoint needs an input file (-i FILE): standard input cannot be read again "
                             "on a resume")
    if args.output in (None, "-"):
        raise SNetUsageError("--checkpoint needs an output file (-o FILE): standard output cannot be cut back "
                             "to the committed position on a resume")
    if args.errors == "-":
        raise SNetUsageError("--checkpoint needs an error file (--errors FILE), not standard output: it is cut "
                             "back to the committed position on a resume")
    if args.checkpoint_interval is not None and not args.checkpoint_interval > 0:
        raise SNetUsageError(f"--checkpoint-interval takes a positive number of seconds, "
                             f"not {args.checkpoint_interval}")


def identity(args: Any, network: Any, engine: str) -> dict:
    """What a resume must find unchanged, besides the input and output files' contents."""
    boxes = box_file_digests(network)
    return {"network": {"file": os.path.abspath(args.net_file), "sha256": file_digest(args.net_file),
                        "net": args.net},
            "boxes": boxes, "engine": engine,
            "input_file": os.path.abspath(args.input), "output_file": os.path.abspath(args.output),
            "errors_file": os.path.abspath(args.errors) if args.errors is not None else None}


def check_unchanged(manifest: dict, now: dict, directory: str) -> None:
    """Refuse a resume whose network, boxes, engine or files differ from the checkpoint's (exit 2)."""
    was = manifest
    if was["network"]["sha256"] != now["network"]["sha256"] or was["network"]["net"] != now["network"]["net"]:
        raise SNetUsageError(f"the network file {now['network']['file']} changed since the checkpoint in "
                             f"{directory}; {RESET_HINT}")
    for path, digest in sorted(was["boxes"].items()):
        if now["boxes"].get(path) != digest:
            raise SNetUsageError(f"the box file {path} changed since the checkpoint in {directory}; {RESET_HINT}")
    for path in sorted(set(now["boxes"]) - set(was["boxes"])):
        raise SNetUsageError(f"the boxes now come from {path} too, unlike at the checkpoint in {directory}; "
                             f"{RESET_HINT}")
    if was["engine"] != now["engine"]:
        raise SNetUsageError(f"the checkpoint in {directory} was taken by the {was['engine']} engine: resume with "
                             f"--engine {was['engine']}, or {RESET_HINT}")
    for key, what in (("input_file", "input"), ("output_file", "output")):
        if was[key] != now[key]:
            raise SNetUsageError(f"the checkpoint in {directory} belongs to a run with {what} file {was[key]}, "
                                 f"not {now[key]}; {RESET_HINT}")
    errors_was, errors_now = was.get("errors_file"), now["errors_file"]
    if errors_was != errors_now:
        was_text = f"error file {errors_was}" if errors_was else "no error file"
        now_text = f"--errors {errors_now}" if errors_now else "no --errors"
        raise SNetUsageError(f"the checkpoint in {directory} belongs to a run with {was_text}, not one with "
                             f"{now_text}: its failures are part of the committed state; {RESET_HINT}")


def open_checkpointed(args: Any, network: Any, options: Any, in_format: str, out_format: str,
                      hint: Any = None) -> CheckpointedRun:
    """Open the checkpoint directory, the input and the output of the run (see the module's docstring)."""
    from snet.recordio import open_writer

    engine = options.engine or DEFAULT_ENGINE
    store = CheckpointStore(args.checkpoint, reset=args.checkpoint_reset, exclusive=True)
    now = identity(args, network, engine)
    manifest = store.manifest
    if manifest is not None:
        check_unchanged(manifest, now, args.checkpoint)
        if manifest["output_format"] != out_format:
            raise SNetUsageError(f"the checkpoint in {args.checkpoint} wrote {manifest['output_format']} output, "
                                 f"not {out_format}; {RESET_HINT}")
    source = open_input(args.input, in_format, manifest["input"] if manifest else None, args.allow_pickle)
    errors = None
    try:
        restore = store.load_state() if manifest is not None else None
        if args.errors is not None:
            errors = DeadLetters(args.errors, args.allow_pickle, manifest.get("errors") if manifest else None)
        f = open_output(args.output, manifest["output"] if manifest else None)
    except BaseException:
        source.close()
        if errors is not None:
            errors.close()
        raise
    writer: Any = open_writer(f, out_format, allow_pickle=args.allow_pickle, hint=hint,
                              xml_mode=getattr(args, "xml_mode", "textual"))
    if manifest is not None and manifest["output"]["bytes"] > 0:
        writer.continue_file()
    output = CommittedOutput(f, writer)
    if manifest is not None:
        output.total = manifest["output"]["records"]
    interval = args.checkpoint_interval if args.checkpoint_interval is not None else DEFAULT_INTERVAL
    checkpointing = Checkpointing(store, interval, restore, output, source, {**now, "output_format": out_format},
                                  errors=errors, failures_before=manifest.get("failures", 0) if manifest else 0)
    return CheckpointedRun(checkpointing, InputGate(source.records, checkpointing), output, source,
                           manifest is not None, errors)
