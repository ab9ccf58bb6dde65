"""Run-steps per second of the four LDP agents on the single-parameter linear bandit (d=2, K=10).

Han et al.'s published implementation runs about 10 to 16 thousand steps per
second per run on 2 cores for this configuration (figure quoted by the issue;
their code is not run here). This script measures, in one run, the
vectorised runner with 10 and 100 runs and the step-by-step Gymnasium loop of
the same agent (one env, one run) as an in-process baseline. Each agent first
plays a short warm-up run, so that compiling its kernel (numba, cached on disk
after the first time) is not timed.

    python benchmarks/glm_speed.py [--horizon 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import ldp_gym
from ldp_gym.agents import LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB

PAPER = (10_000, 16_000)


def loop_speed(cls, steps: int) -> float:
    env = gym.make("LDPLinearBandit-v0", max_episode_steps=steps)
    agent = cls.from_env(env, epsilon=1.0, seed=0)
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        a = agent.act(obs)
        nxt, r, *_ = env.step(a)
        agent.observe(obs, a, r, nxt)
        obs = nxt
    return steps / (time.perf_counter() - start)


def runner_speed(cls, runs: int, horizon: int, repeat: int = 1) -> float:
    """Best of ``repeat`` timings (the least disturbed by other load on the machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        ldp_gym.run("LDPLinearBandit-v0", {"a": (cls, {"epsilon": 1.0})}, horizon=horizon,
                    n_runs=runs, seed=0, progress=False)
        best = min(best, time.perf_counter() - start)
    return runs * horizon / best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horizon", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is shown")
    args = p.parse_args()
    print(f"{'agent':<12}{'loop':>10}{'10 runs':>12}{'100 runs':>12}"
          f"{'x paper (10 runs)':>20}{'x paper (100 runs)':>20}")
    for cls in (LDPLinUCB, LDPGLOC, LDPOLS, LDPSGD):
        runner_speed(cls, 2, 1000)  # warm-up: compile
        loop = max(loop_speed(cls, min(args.horizon, 20_000)) for _ in range(args.repeat))
        r10 = runner_speed(cls, 10, args.horizon, args.repeat)
        r100 = runner_speed(cls, 100, args.horizon, args.repeat)
        ratios = [f"{r / PAPER[1]:>9.1f}-{r / PAPER[0]:<10.1f}" for r in (r10, r100)]
        print(f"{cls.name:<12}{loop:>10,.0f}{r10:>12,.0f}{r100:>12,.0f}" + "".join(ratios))
    print("run-steps per second; 'x paper' divides by the quoted 16k and 10k steps/s per run")


if __name__ == "__main__":
    main()
