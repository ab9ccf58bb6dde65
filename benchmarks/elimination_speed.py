"""Shuffle-SE and Dist-DP-SE: the block path against the per-round loop.

For each agent on ``LDPMAB-v0`` (the paper's five Bernoulli arms, epsilon = 1), N runs of T
rounds, CPU seconds of:

* ``rounds``: the agent's ``act`` and ``observe``, one call each per round over the runs (the
  chosen arm's reward drawn with numpy), the loop a user writes around any agent;
* ``ldp-gym``: ``ldp_gym.run``, whose env draws blocks that the agent's kernel plays in one
  call per epoch end (``play_block``);
* ``numpy`` (Dist-DP-SE only): the same algorithm written in plain numpy the way a user would,
  each epoch's users of a run drawn at once (a Python loop over runs and epochs only), its
  Polya shares from ``Generator.negative_binomial`` (a float sampler: not the exact law
  ldp-gym draws, so this baseline does less work per user than the agent).

Each figure is the best of ``--repeat`` timings (CPU time of this process); the ratio
``rounds / ldp-gym`` compares figures of the same invocation. Usage::

    python benchmarks/elimination_speed.py [--runs 20] [--horizon 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ldp_gym
from ldp_gym.agents import DistDPSE, ShuffleSE
from ldp_gym.envs.mab import DEFAULT_MEANS

MEANS = np.array(DEFAULT_MEANS)


def rounds(cls: type, runs: int, horizon: int, seed: int = 0) -> float:
    """Regret of the agent's act/observe loop over ``runs`` (one step per round)."""
    rng = np.random.default_rng(seed)
    agent = cls(len(MEANS), epsilon=1.0, horizon=horizon, num_envs=runs, seed=seed)
    obs, regret = np.zeros((runs, 1)), 0.0
    for _ in range(horizon):
        a = agent.act(obs)
        agent.observe(obs, a, (rng.random(runs) < MEANS[a]).astype(np.float64), obs)
        regret += float((MEANS.max() - MEANS[a]).sum())
    return regret / runs


def block(cls: type, runs: int, horizon: int, seed: int = 0) -> float:
    """Regret through ``ldp_gym.run`` (the block path)."""
    res = ldp_gym.run("LDPMAB-v0", {"A": (cls, {"epsilon": 1.0})}, horizon=horizon, n_runs=runs,
                      seed=seed, env_kwargs={"means": DEFAULT_MEANS}, progress=False)
    return float(res.regret["A"][:, -1].mean())


def numpy_dist_dp_se(runs: int, horizon: int, seed: int = 0, epsilon: float = 1.0,
                     beta: float = 0.1) -> float:
    """Regret of Dist-DP-SE in plain numpy, epoch by epoch (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    gaps = MEANS.max() - MEANS
    total = 0.0
    for _ in range(runs):
        active, t, b = np.arange(len(MEANS)), 0, 1
        while t < horizon and len(active) > 1:
            R = 4 ** b
            g = math.ceil(epsilon * math.sqrt(R))
            tau = math.ceil(g * math.log(2 / beta) / epsilon)
            m, q = R * g + 2 * tau + 1, math.exp(-epsilon / g)
            users = min(R * len(active), horizon - t)  # the horizon may cut the epoch
            arms = np.repeat(active, R)[:users]
            total += gaps[arms].sum()
            t += users
            if users < R * len(active):
                break
            x = (rng.random((len(active), R)) < MEANS[active, None]) * g  # x g, whole here
            shares = rng.negative_binomial(1 / R, 1 - q, (2, len(active), R))
            y = np.mod((x + shares[0] - shares[1]).sum(axis=1), m)
            mu = np.where(y > R * g + tau, y - m, y) / g / R
            s = len(active)
            log4, log2 = math.log(4 * s * b * b / beta), math.log(2 * s * b * b / beta)
            w = (math.sqrt(log4 / (2 * R)) + math.sqrt(2) / epsilon * math.sqrt(log2) / R
                 + log2 / (epsilon * R))
            active = active[mu.max() - mu <= 2 * w]
            b += 1
        total += (horizon - t) * gaps[active[0]] if t < horizon else 0.0
    return total / runs


def cpu_time(fn, *args) -> tuple[float, float]:
    start = time.process_time()
    out = fn(*args)
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    block(DistDPSE, 2, 1000)  # warm-up
    print(f"N = {args.runs} runs, T = {args.horizon}, best of {args.repeat} (CPU s)")
    print(f"{'agent':<12} {'rounds':>9} {'ldp-gym':>9} {'speed-up':>9} {'regret r/b':>16}")
    for cls in (ShuffleSE, DistDPSE):
        r = min((cpu_time(rounds, cls, args.runs, args.horizon) for _ in range(args.repeat)),
                key=lambda x: x[0])
        b = min((cpu_time(block, cls, args.runs, args.horizon) for _ in range(args.repeat)),
                key=lambda x: x[0])
        print(f"{cls.name:<12} {r[0]:>9.2f} {b[0]:>9.2f} {r[0] / b[0]:>8.1f}x "
              f"{r[1]:>8.0f}/{b[1]:<7.0f}")
    n = min((cpu_time(numpy_dist_dp_se, args.runs, args.horizon) for _ in range(args.repeat)),
            key=lambda x: x[0])
    print(f"Dist-DP-SE in plain numpy (float shares): {n[0]:.2f} s, regret {n[1]:.0f}; "
          f"ldp-gym's exact kernel over it: {b[0] / n[0]:.2f}x the time")


if __name__ == "__main__":
    main()
