"""Run-steps per second of the bandit convex optimisation agents: the runner against a loop.

For each agent, on its env (d = 5), in one process:

1. ``loop``: one env from ``gym.make``, one single-run agent, the textbook
   ``act / step / observe`` loop (the baseline);
2. ``runner``: ``ldp_gym.run`` with N runs (default 100) in the native vector
   env, non-private and under the agent's privacy wrapper (Zheng et al.'s
   Alg 1 or Alg 2 at epsilon = 1). Every agent takes the runner's block path
   (``_Evaluated``: the env's randomness, the agent's unit vectors and the
   release's noise drawn ahead, each block played in one compiled kernel),
   bitwise the numbers of round-by-round play.

Ratios are against the loop measured in the same process, in wall-clock time and
in CPU time (the CPU figures are the fairer comparison on a shared machine).
Usage::

    python benchmarks/bco_speed.py [--runs 100] [--horizon 20000] [--repeat 3]

The figures are in ``docs/speed.md`` (``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import ldp_gym
from ldp_gym.agents import FKM, HazanLevy, SahaTewari, TwoPointGD
from ldp_gym.wrappers import VectorTwoPointGaussian, one_point

DELTA = 1e-5


def loop_speed(cls, env_id: str, steps: int) -> tuple[float, float]:
    """Steps per second of the textbook loop: (wall clock, CPU time)."""
    env = gym.make(env_id, max_episode_steps=steps)
    agent = cls.from_env(env, seed=0)
    obs, _ = env.reset(seed=0)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, action, reward, next_obs)
        obs = next_obs
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


def runner_speed(cls, env_id: str, runs: int, horizon: int, wrappers,
                 repeat: int) -> tuple[float, float]:
    """Run-steps per second of the runner, the best of ``repeat``: (wall clock, CPU time)."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        ldp_gym.run(env_id, {"a": cls}, horizon=horizon, n_runs=runs, seed=0, progress=False,
                    wrappers=wrappers)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return runs * horizon / best, runs * horizon / best_cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--horizon", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is shown")
    args = p.parse_args()
    one = [(one_point, {"epsilon": 1.0, "delta": DELTA})]
    private = {FKM: one, SahaTewari: one, HazanLevy: one,
               TwoPointGD: [(VectorTwoPointGaussian, {"epsilon": 1.0, "delta": DELTA})]}
    head = f"{'agent':<12}{'loop':>10}{'runner':>12}{'private':>12}{'x loop':>9}{'x loop (priv)':>15}"
    rows: dict[str, list[str]] = {"wall clock": [], "CPU time": []}
    for cls in private:
        env_id = cls.test_env
        runner_speed(cls, env_id, 2, 100, (), 1)  # warm-up (compilation)
        runner_speed(cls, env_id, 2, 100, private[cls], 1)
        loop = loop_speed(cls, env_id, min(args.horizon, 5000))
        plain = runner_speed(cls, env_id, args.runs, args.horizon, (), args.repeat)
        priv = runner_speed(cls, env_id, args.runs, args.horizon, private[cls], args.repeat)
        for k, clock in enumerate(rows):
            rows[clock].append(f"{cls.name:<12}{loop[k]:>10,.0f}{plain[k]:>12,.0f}"
                               f"{priv[k]:>12,.0f}{plain[k] / loop[k]:>9.0f}"
                               f"{priv[k] / loop[k]:>15.0f}")
    for clock, lines in rows.items():
        print(f"{clock}:\n{head}\n" + "\n".join(lines))
    print(f"run-steps per second, {args.runs} runs, d = 5; 'x loop' divides by the loop")


if __name__ == "__main__":
    main()
