"""Workload 3: a NumPy pipeline whose heavy stage releases the GIL (a matrix product), on every core.

Each record makes a 200 × 200 matrix, multiplies it by itself twice and
keeps its norm.  NumPy releases the GIL in the product, so threads run it
on more than one core; BLAS is held to one thread per call (the
``*_NUM_THREADS`` variables below, set before NumPy loads), so the
parallelism measured is each tool's, not the BLAS library's.

    python bench/peers/numpy_pipeline.py [--records N] [--rounds R]
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

import peers  # noqa: E402
from common import Contender, arguments, main  # noqa: E402

import snet  # noqa: E402

SIZE = 200


def make(r):
    rng = np.random.default_rng(r["seed"])
    return {"seed": r["seed"], "m": rng.standard_normal((SIZE, SIZE))}


def multiply(r):
    m = r["m"]
    return {"seed": r["seed"], "m": (m @ m) @ m}


def norm(r):
    return {"seed": r["seed"], "norm": round(float(np.linalg.norm(r["m"])), 6)}


STAGES = (make, multiply, norm)

NET = """
box make ((seed) -> (seed, m)); box multiply ((m) -> (m)); box norm ((m) -> (norm));
net pipeline connect make .. multiply .. norm;
"""


def snet_make(seed):
    return make({"seed": seed})


def snet_multiply(m):
    return {"m": (m @ m) @ m}  # (seed flows past the box: flow inheritance)


def snet_norm(m):
    return {"norm": round(float(np.linalg.norm(m)), 6)}


BOXES = {"make": snet_make, "multiply": snet_multiply, "norm": snet_norm}


def snet_run(workers: int) -> Contender:
    net = snet.load(NET, boxes=BOXES)
    return Contender(f"**snet `net.run`, {workers} worker{'s' if workers > 1 else ''}**",
                     lambda records: list(net.run(records, workers=workers)))


def threads_by_hand(workers: int) -> Contender:
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(workers)
    chain = peers.Chain(STAGES)
    return Contender(f"concurrent.futures.ThreadPoolExecutor({workers}).map, by hand",
                     lambda records: list(pool.map(chain, records)))


def contenders() -> list[Contender]:
    cores = os.cpu_count() or 2
    return [Contender("plain loop", peers.plain_loop(STAGES)),
            snet_run(cores), snet_run(1), threads_by_hand(cores),
            peers.dask_bag(STAGES, "threads", partitions=cores * 4), peers.bytewax(STAGES, 10),
            peers.beam(STAGES), peers.ray_data(STAGES)]


if __name__ == "__main__":
    args = arguments(__doc__.splitlines()[0], 600, rounds=3)
    records = [{"seed": i} for i in range(args.records)]
    main("3. NumPy, the GIL released", contenders(), records, args.records, args.rounds, args.only)
