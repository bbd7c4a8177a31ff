"""Which networks run whole inside Spark tasks (snet/spark/whole/distribute.py); no Spark needed."""

from __future__ import annotations

import pytest

import snet
from snet.spark.whole.distribute import distribution
from snet.spg.build import compile_source


def how(source: str):
    return distribution(compile_source(source, "n.snet"))


@pytest.mark.parametrize("source", [
    "net a connect [{x} -> {y=x}] .. [{y} -> {z=y}];",
    "net a { box f ((x) -> (y)); } connect (f ! <k>) | [{z} -> {z}];",
    "net a { box f ((x) -> (y)); } connect f * {y};",
])
def test_stateless_networks_need_no_partitioning(source):
    assert how(source).key is None


@pytest.mark.parametrize("source", [
    "net a connect [| {a}, {b} |] ! <k>;",
    "net a connect [| {a}, {b} |] !! <k>;",
    "net a { box f ((x) -> (a)); } connect f .. ([| {a}, {b} |] ! <k>) .. f;",
    "net a connect [{a, <k>} -> {a, <k>}] .. ([| {a}, {b} |] ! <k>);",
    "net a connect ([| {a}, {b} |] ! <k>) .. ([| {a, b}, {c} |] ! <k>);",
])
def test_state_inside_top_level_splits_is_partitioned_by_their_tag(source):
    assert how(source).key == "<k>"


@pytest.mark.parametrize("source,column,words", [
    ("net a connect [| {a}, {b} |];", 15, "a synchro-cell keeps state outside any index split"),
    ("net a connect ([| {a}, {b} |] * {a, b}) .. [{a} -> {a}];", 31, "a star with a synchro-cell"),
    ("net a connect [| {a}, {b} |] ! <lo>:<hi>;", 30, "a range split with state"),
    ("net a connect [{c} -> {d}] | ([| {a}, {b} |] ! <k>);", 46, "sits inside a parallel composition"),
    ("net a { box f ((x, <k>) -> (a, <k>)); } connect f .. ([| {a}, {b} |] ! <k>);", 49,
     "this stage may change <k> before the split"),
    ("net a connect [{x} -> {x, <k=1>}] .. ([| {a}, {b} |] ! <k>);", 15, "this stage may change <k>"),
    ("net a connect ([| {a}, {b} |] ! <k>) .. ([| {a, b}, {c} |] ! <j>);", 60, "an earlier one per <k>"),
])
def test_state_that_cannot_be_partitioned_is_named_with_its_position(source, column, words):
    with pytest.raises(snet.SNetNotDistributable) as caught:
        how(source)
    assert str(caught.value).startswith(f"n.snet:1:{column}: error: ")
    assert words in str(caught.value)
    assert str(caught.value).endswith("; run it on the driver instead")  # snet run says how: the fallback option
    assert caught.value.exit_status == 2
