"""A whole network over a Spark DataFrame: :meth:`snet.api.Network.spark_apply`.

Rows are records (column names in the JSON Lines spelling, a null an absent
label).  :func:`map_partition` runs one engine per task over its partition;
a keyed network's input is repartitioned by its tag column and sorted by an
input sequence (:func:`prepare`, :mod:`snet.spark.whole.distribute`).  The
output schema is the caller's or inferred (:mod:`snet.spark.whole.schema`).
"""

from __future__ import annotations

import functools
import itertools
import logging
import uuid
from typing import Iterator

from snet.core.chains import box_chain
from snet.errors import SNetRuntimeError, SNetUsageError
from snet.spark.tasks import plan_for, rows, run_plan
from snet.spark.whole.distribute import Distribution, distribution

log = logging.getLogger("snet.spark")

SEQ = "__snet_seq"  # the input sequence column added before a shuffle
OUT_BATCH = 4096  # output records per Arrow batch


def output_schema(graph, input_schema, schema=None, drop: tuple[str, ...] = (), cli: bool = False, *,
                  boxes=None, sample=None, override=None):
    """The Spark schema of the outputs: ``schema`` (StructType or DDL) as given, else inferred
    (:mod:`snet.spark.whole.schema`), ``override`` (``--spark-schema``) replacing or adding types; ``cli``:
    errors name ``--spark-schema``, not ``schema=``."""
    from snet.spark.whole.schema import infer_types, merge, output_labels, parse

    if schema is not None:
        return parse(schema)
    override = parse(override) if override is not None else None
    inputs = {f.name: f for f in input_schema.fields if f.name not in drop}
    labels = output_labels(graph, inputs)
    given = frozenset(override.fieldNames()) if override is not None else frozenset()
    types, unknown = infer_types(graph, boxes, inputs, labels, sample, given)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        why = "no input column of that name, no box return annotation"
        if sample is not None:
            why += ", and no value in the outputs of the network on the first input records"
        what = f"cannot infer the type of output field{plural} {', '.join(repr(u) for u in unknown)} ({why})"
        example = ", ".join(f"{u} double" for u in unknown)
        if cli:
            raise SNetUsageError(f"{what}; give {'their' if plural else 'its'} column type{plural} with "
                                 f"--spark-schema, e.g. --spark-schema '{example}'")
        raise SNetUsageError(f"spark_apply: {what}; pass schema=, e.g. schema=\"{example}, ...\" with every "
                             "output column")
    return merge(types, labels, override)


_INTEGRAL = ("tinyint", "smallint", "int", "bigint")  # Spark's simpleString of the types a tag column may have


def check_columns(input_schema, drop: tuple[str, ...] = ()) -> None:
    """Refuse input columns that are no record labels, and tag columns that do not hold integers (records
    are refused for the same mistakes: :func:`snet.records.record_problem`)."""
    from snet.records import LABEL_RULE, is_valid_label

    for f in input_schema.fields:
        if f.name in drop:
            continue
        if not is_valid_label(f.name):
            raise SNetUsageError(f"input column {f.name!r} is not a record label ({LABEL_RULE}); select the "
                                 "columns the network reads, or rename them")
        if f.name.startswith("<") and f.dataType.simpleString() not in _INTEGRAL:
            kind = "binding tag" if f.name.startswith("<#") else "tag"
            raise SNetUsageError(f"input column {f.name} is a {kind}, which holds integers, but its type is "
                                 f"{f.dataType.simpleString()}; cast it to an integer type (e.g. "
                                 f"df.withColumn('{f.name}', df['`{f.name}`'].cast('long'))) or rename it")


def checked_schema(network, df, source: str, override=None, key: str | None = None, split_at: str = ""):
    """The output schema of a command-line run over ``df``, read from ``source``, once its columns are checked
    (exit status 2, nothing run): labels, tag types, ``key`` (the tag a split's state is partitioned by), the
    network's input type; ``override``: ``--spark-schema``."""
    from snet.spark.whole.schema import check_source, driver_sample

    check_columns(df.schema)
    if key is not None and key not in df.columns:
        raise SNetUsageError(f"the split at {split_at} keeps state per {key}, so the input is partitioned by its "
                             f"column {key}, which {source} lacks (columns: {', '.join(df.columns)})")
    check_source(network.graph, df.columns, source)
    return output_schema(network.graph, df.schema, None, cli=True, boxes=network.boxes,
                         sample=driver_sample(network, df), override=override)


def prepare(network, df, partitions: int | None = None, order: str | None = None):
    """Partition ``df`` as the network needs: (the DataFrame to map, the distribution, columns not records)."""
    how: Distribution = distribution(network.graph)
    columns = df.columns
    drop: tuple[str, ...] = () if order is None else (order,)
    if order is not None and order not in columns:
        raise SNetUsageError(f"spark_apply: order={order!r} is not a column of the DataFrame ({', '.join(columns)})")
    if how.key is None:
        if partitions is not None:
            df = df.repartition(partitions)
        return df, how, drop
    if how.key not in columns:
        raise SNetUsageError(f"spark_apply: the split at {how.where} keeps state per {how.key}, so the input is "
                             f"partitioned by the column {how.key!r}, which the DataFrame lacks "
                             f"(columns: {', '.join(columns)})")
    from pyspark.sql import functions as F

    seq = order
    if seq is None:
        seq, drop = SEQ, (SEQ,)
        df = df.withColumn(SEQ, F.monotonically_increasing_id())
    if partitions is None:
        from snet.spark.cluster.session import parallelism

        partitions = parallelism(df.sparkSession)
    df = df.repartition(partitions, F.col(f"`{how.key}`")).sortWithinPartitions(F.col(f"`{seq}`"))
    return df, how, drop


def spark_apply(network, df, schema=None, *, partitions: int | None = None, order: str | None = None,
                shipped_only: bool = False, task_warnings: bool = True, counter=None, project: bool | None = None):
    """See :meth:`snet.api.Network.spark_apply`; for ``snet run``: ``shipped_only`` (``snet.boxes=shipped``),
    ``task_warnings`` (off under ``-q``), ``counter`` (an accumulator of output rows), ``project`` (whether
    labels outside ``schema`` are left out, the default with a schema, or an error)."""
    if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
        raise SNetUsageError(f"spark_apply: partitions must be a positive int, not {partitions!r}")

    def task(context: bytes, drop: tuple[str, ...], out_json: str, project: bool):
        function = functools.partial(map_partition, uuid.uuid4().hex, context, drop, out_json, project,
                                     engine=TASK_ENGINE, warn=task_warnings)
        return function if counter is None else functools.partial(counted, function, counter)

    return map_network(network, df, task, schema, partitions=partitions, order=order, shipped_only=shipped_only,
                       project=project)


def map_network(network, df, task, schema=None, *, partitions: int | None = None, order: str | None = None,
                shipped_only: bool = False, project: bool | None = None):
    """``df`` partitioned as the network needs, mapped by the ``mapInArrow`` function ``task(context, drop,
    schema_json, project)`` gives (the run's :func:`map_partition`, or
    :func:`snet.spark.whole.salvage.salvage_partition` after a failed run)."""
    from snet.spark.cluster.shipping import shipped_context

    check_columns(df.schema, (order,) if order is not None else ())
    mapped, how, drop = prepare(network, df, partitions, order)
    out = output_schema(network.graph, df.schema, schema, drop, boxes=network.boxes)
    context = shipped_context(df.sparkSession, network.graph, 0, network.boxes, shipped_only=shipped_only)
    project = schema is not None if project is None else project
    return mapped.mapInArrow(task(context, drop, out.json(), project), out)


class Writer:
    """Output records to Arrow batches of the output schema."""

    def __init__(self, schema_json: str, project: bool):
        import json

        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        self.pa = pa
        self.schema = to_arrow_schema(StructType.fromJson(json.loads(schema_json)))
        self.names = set(self.schema.names)
        self.project = project

    def batch(self, records: list[dict]):
        pa = self.pa
        if not self.project:
            names = self.names
            for record in records:
                if not names.issuperset(record):
                    raise SNetRuntimeError(self._lacks(record))
        arrays = []
        for f in self.schema:
            name = f.name  # a pyarrow Field makes a new str at each read: once per column, not per record
            values = [r.get(name) for r in records]
            try:
                arrays.append(pa.array(values, type=f.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                bad = next((v for v in values if v is not None and not _fits(pa, v, f.type)), None)
                raise SNetRuntimeError(f"spark_apply: output label {f.name} holds {bad!r} "
                                       f"({type(bad).__name__}), which does not fit its column type {f.type} "
                                       f"({e})") from None
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _lacks(self, record: dict) -> str:
        """The error of an output record with a label that no column holds: the label and the record."""
        from snet.records import format_labels

        extra = sorted(record.keys() - self.names)
        shown = repr(record)
        shown = shown if len(shown) <= 300 else shown[:300] + "…"
        return (f"spark_apply: the output record {format_labels(record)} has label{'s' if len(extra) > 1 else ''} "
                f"{', '.join(extra)}, which no output column holds (columns: {', '.join(self.schema.names)}); "
                f"give {'them' if len(extra) > 1 else 'it'} a column (--spark-schema, schema=): {shown}")


def _fits(pa, value, type_) -> bool:
    try:
        pa.array([value], type=type_)
        return True
    except Exception:
        return False


def map_partition(run_id: str, context: bytes, drop: tuple[str, ...], schema_json: str, project: bool,
                  batches, engine: str = "front", warn: bool = True) -> Iterator:
    """The ``mapInArrow`` function: one fresh engine (:func:`snet.spark.tasks.run_plan`) over this partition's
    records; a chain of boxes without one, an input batch at a time (:func:`box_chain`)."""
    plan = plan_for(run_id, context)
    writer = Writer(schema_json, project)
    chain = box_chain(plan)
    if chain is not None:  # a batch at a time: a list of records in, a list out
        from snet.core.chains import chain_records, walk_maker

        pending: list[dict] = []
        for batch in batches:
            pending.extend(chain_records(chain, rows(batch, drop), walk_maker()))
            if len(pending) >= OUT_BATCH:
                whole = len(pending) - len(pending) % OUT_BATCH
                for start in range(0, whole, OUT_BATCH):
                    yield writer.batch(pending[start:start + OUT_BATCH])
                del pending[:whole]
        if pending:
            yield writer.batch(pending)
        return
    execution = run_plan(plan, (r for batch in batches for r in rows(batch, drop)), engine)
    try:
        while out := list(itertools.islice(execution, OUT_BATCH)):
            yield writer.batch(out)
    finally:
        execution.close()
    for warning in execution.warnings if warn else ():
        log.warning("%s", warning)


def counted(function, counter, batches):
    """``function``'s output batches, their rows added to the accumulator ``counter`` once all are out (a failed
    task's updates are dropped by Spark, a retried one's counted once)."""
    rows = 0
    for batch in function(batches):
        rows += batch.num_rows
        yield batch
    counter.add(rows)


TASK_ENGINE = "front"  # the tasks' engine, read by spark_apply; "reference" for the benchmark's baseline
