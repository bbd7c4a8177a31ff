"""The driver program of the cluster tests: ``python cluster_cases.py MASTER FOLDER CASE...``.

Runs in its own process (its own JVM, the cluster's client), for each
conformance case named, the case's network with every split on the cluster
(FRONT engine around the splits) and without Spark (the reference engine),
and prints one JSON line per case: ``{"case", "ordered", "spark", "local"}``.
Then it runs FOLDER/net.snet (a box module that imports modules beside it)
on the cluster and prints ``{"case": "helpers", "spark": [...]}``.
test_cluster.py compares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "conformance" / "cases"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plain(records) -> list:
    return json.loads(json.dumps(list(records)))


def main(master: str, folder: str, names: list[str]) -> None:
    import snet

    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.pyspark.python": sys.executable, "spark.executor.memory": "512m", "spark.cores.max": "2",
            "snet.boxes": "shipped"}  # the cluster shares this machine's files: take only what snet ships
    spark = {"spark_master": master, "spark_conf": conf, "spark_splits": "all", "engine": "front", "workers": 2,
             "spark_batch": 64}
    for name in names:
        case = CASES / name
        net = snet.load(str(case / "net.snet"))
        records = read_jsonl(case / "input.jsonl")
        ordered = json.loads((case / "case.json").read_text()).get("ordered", False)
        on_spark = plain(net.run(records, **spark))
        local = plain(net.run(records, engine="reference"))
        print(json.dumps({"case": name, "ordered": ordered, "spark": on_spark, "local": local}), flush=True)
    net = snet.load(str(Path(folder) / "net.snet"))
    out = plain(net.run([{"a": i, "<k>": i % 3} for i in range(6)], **spark))
    print(json.dumps({"case": "helpers", "spark": out}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
