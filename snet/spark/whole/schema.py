"""The columns of a Spark-native run: what the source must have, and the output's types.

Decided on the driver before the job (exit status 2, nothing written): the
source must cover an input variant (:func:`check_source`); every label an
output can carry is a column (:func:`output_labels`), typed by its kind, a
box's ``TypedDict`` return annotation (:func:`annotated_types`), the input
column, or a run on the first records (:func:`sample_types`).
"""

from __future__ import annotations

import inspect
import logging
import typing
from typing import Any, Iterable

from snet.errors import SNetError, SNetUsageError
from snet.records import format_labels, is_tag_like

log = logging.getLogger("snet.spark")

SAMPLE = 100  # source records the driver runs the network on when a column's type is still unknown


def check_source(graph, columns: Iterable[str], source: str) -> None:
    """Refuse a source whose columns cover no variant of the network's input type."""
    have = set(columns)
    variants = graph.root.in_type
    if not variants or any(variant <= have for variant in variants):
        return
    columns = f"(columns: {', '.join(sorted(have)) or 'none'})"
    if len(variants) == 1:
        missing = sorted(variants[0] - have)
        plural = "s" if len(missing) > 1 else ""
        raise SNetUsageError(f"{source} lacks the column{plural} {', '.join(missing)} that the network's input "
                             f"{format_labels(variants[0])} needs {columns}")
    needs = "; ".join(f"{format_labels(v)} needs {', '.join(sorted(v - have))}" for v in variants)
    raise SNetUsageError(f"{source} lacks a column of every input variant of the network: {needs} {columns}")


def output_labels(graph, input_names: Iterable[str]) -> list[str]:
    """Every label an output record can carry: the network's output type, the input columns, the tags made
    anywhere in the network (flow inheritance can carry all of these through)."""
    labels: list[str] = []
    for variant in graph.root.out_type:
        labels.extend(sorted(label for label in variant if label not in labels))
    labels.extend(name for name in input_names if name not in labels)
    labels.extend(sorted({label for node in graph.nodes for variant in node.out_type for label in variant
                          if is_tag_like(label) and label not in labels}))
    return labels


def infer_types(graph, boxes, input_fields: dict, labels: list[str], sample=None,
                given: frozenset = frozenset()) -> tuple[dict, list[str]]:
    """({label: Spark type}, labels without one) for ``labels`` not in ``given`` (``--spark-schema``'s), by the
    rules of the module docstring; ``sample()`` (a run on the first records) is called only if a type is missing."""
    from pyspark.sql.types import LongType

    annotated = annotated_types(graph, boxes)
    types: dict[str, Any] = {}
    for label in labels:
        if label in given:
            continue
        if is_tag_like(label):
            types[label] = LongType()
        elif label in annotated:
            types[label] = annotated[label]
        elif label in input_fields:
            types[label] = input_fields[label].dataType
    unknown = [label for label in labels if label not in types and label not in given]
    if unknown and sample is not None:
        seen = sample_types(sample(), set(unknown))
        types.update(seen)
        unknown = [label for label in unknown if label not in seen]
    return types, unknown


def annotated_types(graph, boxes) -> dict:
    """{field: Spark type} from the return annotations of the network's boxes (``TypedDict`` results, see
    the module docstring); a box without one, or with an annotation of another form, adds nothing."""
    found: dict[str, Any] = {}
    for name in sorted(graph.used_boxes()):
        function = (boxes or {}).get(name)
        if function is None:
            continue
        try:
            hints = typing.get_type_hints(inspect.unwrap(function))
        except Exception as e:  # an annotation that does not resolve: none, as for an unannotated box
            log.debug("box %s: its annotations do not resolve: %s", name, e)
            continue
        for record in _typed_dicts(hints.get("return")):
            for label, hint in typing.get_type_hints(record).items():
                spark_type = python_type(hint)
                if spark_type is not None and not is_tag_like(label):
                    found.setdefault(label, spark_type)
    return found


def _typed_dicts(hint) -> list:
    """The ``TypedDict`` classes in a return annotation: itself, or inside a union, ``Optional``, a list or an
    iterator."""
    if hint is None:
        return []
    if typing.is_typeddict(hint):
        return [hint]
    return [record for arg in typing.get_args(hint) for record in _typed_dicts(arg)]


def python_type(hint):
    """The Spark type of a Python annotation (``int`` -> ``long``, ``list[str]`` -> ``array<string>``,
    ``Optional[X]`` -> X's), or None for one without a Spark type."""
    import datetime
    import decimal
    import types

    from pyspark.sql import types as T

    scalars = {bool: T.BooleanType(), int: T.LongType(), float: T.DoubleType(), str: T.StringType(),
               bytes: T.BinaryType(), bytearray: T.BinaryType(), datetime.datetime: T.TimestampType(),
               datetime.date: T.DateType(), decimal.Decimal: T.DecimalType(38, 18)}
    if hint in scalars:
        return scalars[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in args if arg is not type(None)]
        return python_type(inner[0]) if len(inner) == 1 else None
    if origin in (list, tuple, set, frozenset) and args:
        element = python_type(args[0])
        if element is not None and (origin is not tuple or len(args) == 1 or args[1:] == (...,)
                                    or all(python_type(a) == element for a in args)):
            return T.ArrayType(element, True)
        return None
    if origin is dict and len(args) == 2:
        key, value = python_type(args[0]), python_type(args[1])
        return T.MapType(key, value, True) if key is not None and value is not None else None
    return None


def sample_types(records: list[dict], labels: set[str]) -> dict:
    """{label: Spark type} of the values ``records`` hold for ``labels``, merged over the records (an
    ``int`` and a ``float`` make ``double``); a label whose values have no common type is refused."""
    from pyspark.sql.types import DoubleType, LongType, _infer_type, _merge_type

    found: dict[str, Any] = {}
    for record in records:
        for label in labels & record.keys():
            value = record[label]
            if value is None:
                continue
            try:
                spark_type = _infer_type(value)
            except Exception as e:
                log.debug("no Spark type for the value of %s: %s", label, e)
                continue
            before = found.get(label)
            if before is None:
                found[label] = spark_type
                continue
            if {type(before), type(spark_type)} == {LongType, DoubleType}:
                found[label] = DoubleType()
                continue
            try:
                found[label] = _merge_type(before, spark_type)
            except Exception:
                raise SNetUsageError(f"the output field {label!r} holds values of different types on the first "
                                     f"records ({before.simpleString()}, {spark_type.simpleString()}); give "
                                     f"its column type with --spark-schema, e.g. --spark-schema '{label} "
                                     f"{before.simpleString()}'") from None
    return found


def driver_sample(network, df, size: int = SAMPLE):
    """``sample()`` for :func:`infer_types`: the outputs of a run of ``network`` (the reference engine) over the
    first ``size`` records of ``df`` in a forked child (a box that ends its process ends the child, not snet);
    outputs made before a failure count, the failure is the job's to report."""
    from snet import isolation
    from snet.spark.tasks import dumps

    def sample() -> list[dict]:
        records = [{k: v for k, v in row.asDict(recursive=True).items() if v is not None}
                   for row in df.limit(size).collect()]

        def body() -> None:
            try:
                for out in network.run(records, engine="reference"):
                    isolation.send(isolation.Output(out))
            except SNetError as e:  # a run-time error of the network: the outputs before it stand
                isolation.send(isolation.Stopped(str(e)))

        child = isolation.Child(body, dumps=dumps)
        outputs: list[dict] = []
        try:
            for message in child.messages():
                if isinstance(message, isolation.Output):
                    outputs.append(message.record)
                else:
                    log.debug("the run on the first %d records to infer output types stopped: %s",
                              len(records), message)
        finally:
            child.end()
        return outputs
    return sample


def merge(types: dict, labels: list[str], override) -> "Any":
    """The output StructType: ``labels`` with ``types``, then ``override`` (a StructType or DDL) setting the
    types of the columns it names and adding the others."""
    from pyspark.sql.types import StructField, StructType

    given = {f.name: f for f in override.fields} if override is not None else {}
    fields = [given.get(label) or StructField(label, types[label], True) for label in labels]
    fields.extend(f for name, f in given.items() if name not in labels)
    return StructType(fields)


def parse(schema):
    """``schema`` (a StructType or a DDL string) as a StructType."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    if isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    if not isinstance(schema, StructType):
        raise SNetUsageError(f"spark_apply: schema must be a StructType or a DDL string, not {schema!r}")
    return schema
