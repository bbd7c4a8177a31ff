"""Record-file read and write rates, against the plain ``json`` line loop.

100,000 small records (an int, a float, a short string, a list of three
ints, a tag and a binding tag).  Each benchmark times one of the four
operations of ``snet.recordio``; the baseline, timed alternately in the same
process by ``conftest.paired``, is the loop every JSON Lines tool starts
from: ``json.loads`` per line for reading, ``json.dumps`` + newline per
record for writing.  ``ratio_to_json_loop`` > 1 means slower than that loop;
it says what validation, labels, pickling rules and (for XML) C4SNet text
cost on top of bare JSON.

    python3 -m pytest bench/test_bench_recordio.py --benchmark-only -s
"""

from __future__ import annotations

import io
import json

import pytest
from conftest import paired

from snet.recordio import open_writer, read_records

N = 100_000
RECORDS = [{"x": i, "y": i * 0.5, "name": f"item{i % 100}", "v": [i, i + 1, i + 2], "<t>": i % 7, "<#k>": i % 3}
           for i in range(N)]


def write_all(fmt: str) -> str:
    out = io.StringIO()
    writer = open_writer(out, fmt)
    write = writer.write
    for record in RECORDS:
        write(record)
    writer.close()
    return out.getvalue()


JSONL_BYTES = write_all("jsonl").encode()
XML_BYTES = write_all("xml").encode()


def json_read_loop() -> list[dict]:
    loads = json.loads
    return [loads(line) for line in io.BytesIO(JSONL_BYTES)]


def json_write_loop() -> str:
    out = io.StringIO()
    dumps = json.dumps
    write = out.write
    for record in RECORDS:
        write(dumps(record) + "\n")
    return out.getvalue()


def read_all(data: bytes, fmt: str) -> list[dict]:
    return list(read_records(io.BytesIO(data), fmt))


@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_read_rate(benchmark, report, fmt):
    data = JSONL_BYTES if fmt == "jsonl" else XML_BYTES

    def candidate():
        return read_all(data, fmt)

    assert candidate() == RECORDS
    benchmark.pedantic(candidate, rounds=3, iterations=1)
    figures = paired(candidate, json_read_loop, rounds=3)
    report(records_per_second=N / figures["candidate_s"], json_loop_records_per_second=N / figures["baseline_s"],
           ratio_to_json_loop=figures["ratio"], bytes_per_record=len(data) / N)


@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_write_rate(benchmark, report, fmt):
    def candidate():
        return write_all(fmt)

    assert read_all(candidate().encode(), fmt) == RECORDS
    benchmark.pedantic(candidate, rounds=3, iterations=1)
    figures = paired(candidate, json_write_loop, rounds=3)
    report(records_per_second=N / figures["candidate_s"], json_loop_records_per_second=N / figures["baseline_s"],
           ratio_to_json_loop=figures["ratio"])
