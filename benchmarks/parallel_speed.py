"""One agent's runs across cores: the wall time of ``n_jobs = 1`` against ``n_jobs = 2`` (and
more), bitwise the same results, in one invocation.

``ldp_gym.run`` cuts an agent's runs into chunks of ``RUNS_PER_CHUNK`` (each with its own
streams) and runs the chunks in parallel processes (joblib's loky). Printed:

1. the best wall time of ``--repeat`` calls on one core (``n_jobs = 1``, this process pinned
   to one core, where the block path draws its blocks in the thread that plays them), then on
   every core with ``n_jobs = 1`` (one worker, which draws the next block in a background
   thread on the spare core: :mod:`ldp_gym.background`) and per worker count on every core
   (the worker pool is started and warmed by one untimed call first: loky keeps its workers
   between calls), its speed-up over one core, and whether the regret is bitwise that of one
   core;
2. ``--chunks``: the cost of a chunk's size, one process: CPU seconds per million
   run-rounds of one vector env of 25, 50 and 100 runs (``RUNS_PER_CHUNK`` raised so that
   each is one chunk), the figures behind the choice of ``RUNS_PER_CHUNK``.

Usage::

    python benchmarks/parallel_speed.py [--agent UCB1] [--runs 100] [--horizon 100000]
                                        [--workers 2] [--repeat 3] [--chunks]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np
from mab_speed import one_core  # benchmarks/ is the script's path

import ldp_gym
from ldp_gym import runner
from ldp_gym.agents import AGENTS


def spec(name: str):
    cls = AGENTS[name]
    return cls, dict(cls.test_params)


def wall(name: str, runs: int, horizon: int, n_jobs: int) -> tuple[float, np.ndarray]:
    cls, kw = spec(name)
    start = time.perf_counter()
    res = ldp_gym.run(cls.test_env, {name: (cls, kw)}, horizon=horizon, n_runs=runs, seed=0,
                      progress=False, n_jobs=n_jobs)
    return time.perf_counter() - start, res.regret[name]


def chunk_cost(name: str, runs: int, horizon: int) -> float:
    """CPU seconds per million run-rounds of one vector env of ``runs`` runs."""
    cls, kw = spec(name)
    saved = runner.RUNS_PER_CHUNK
    runner.RUNS_PER_CHUNK = max(runs, saved)
    try:
        start = time.process_time()
        ldp_gym.run(cls.test_env, {name: (cls, kw)}, horizon=horizon, n_runs=runs, seed=0,
                    progress=False)
        return (time.process_time() - start) / (runs * horizon) * 1e6
    finally:
        runner.RUNS_PER_CHUNK = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", default="UCB1", choices=sorted(AGENTS))
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--horizon", type=int, default=100_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunks", action="store_true")
    args = ap.parse_args()
    name = args.agent
    print(f"{name} on {AGENTS[name].test_env}: {args.runs} runs, T = {args.horizon:g}, "
          f"RUNS_PER_CHUNK = {runner.RUNS_PER_CHUNK}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    wall(name, 2 * runner.RUNS_PER_CHUNK, 1000, max(args.workers))  # compile, start the pool
    reference, alone = None, 0.0
    for where, n_jobs in [("one core", 1), *(("every core", n) for n in [1, *args.workers])]:
        times = []
        with one_core() if where == "one core" else contextlib.nullcontext():
            for _ in range(args.repeat):
                seconds, regret = wall(name, args.runs, args.horizon, n_jobs)
                times.append(seconds)
        if reference is None:
            reference, alone = regret, min(times)
        same = np.array_equal(regret, reference)
        print(f"  {where}, n_jobs = {n_jobs}: {min(times):.2f} s wall, "
              f"x{alone / min(times):.2f} one core, bitwise the same: {same}")
    if args.chunks:
        horizon = min(args.horizon, 20_000)
        for runs in (25, 50, 100):
            chunk_cost(name, runs, 1000)
            print(f"  one vector env of {runs} runs: {chunk_cost(name, runs, horizon):.3f} "
                  f"CPU s per million run-rounds (T = {horizon:g})")


if __name__ == "__main__":
    main()
