"""The headline timings: what a user waits for at T = 1e7, wall seconds on this machine.

1. UCB1, KL-UCB and Thompson sampling through ``ldp_gym.run`` on ``LDPMAB-v0``, 100 runs of
   T = 1e7 each, every core (``n_jobs=-1``: the runs' chunks in parallel);
2. ``ldp-gym reproduce azize2022-fig2`` in its full size (T = 1e7, 20 runs, every agent and
   baseline of the experiment), every core, written to a temporary folder.

Each is timed once (minutes each; the first call of a kernel compiles it, cached on disk
afterwards, so run a quick experiment first on a fresh checkout). Usage::

    python benchmarks/headline.py [--horizon 10000000] [--runs 100] [--skip-experiment]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import ldp_gym
from ldp_gym.agents import KLUCB, UCB1, ThompsonSampling


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horizon", type=int, default=10**7)
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--skip-experiment", action="store_true")
    args = p.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; wall seconds, "
          f"n_jobs = -1")
    for cls in (UCB1, KLUCB, ThompsonSampling):
        ldp_gym.run("LDPMAB-v0", {cls.name: cls}, horizon=1000, n_runs=2, progress=False)
        start = time.perf_counter()
        ldp_gym.run("LDPMAB-v0", {cls.name: cls}, horizon=args.horizon, n_runs=args.runs,
                    seed=0, progress=False, n_jobs=-1)
        print(f"{cls.name:<10} {args.runs} runs x T = {args.horizon:.0e}: "
              f"{time.perf_counter() - start:8.1f} s", flush=True)
    if not args.skip_experiment:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ldp_gym", "reproduce", "azize2022-fig2",
                            "--jobs", "-1", "--quiet", "--out", os.path.join(tmp, "fig2")],
                           check=True, stdout=subprocess.DEVNULL)
            print(f"ldp-gym reproduce azize2022-fig2 (full: T = 1e7, 20 runs): "
                  f"{time.perf_counter() - start:8.1f} s", flush=True)


if __name__ == "__main__":
    main()
