"""Run-steps per second of the bandit convex optimisation agents: the runner against a loop.

For each agent, on its env (d = 5), in one process:

1. ``loop``: one env from ``gym.make``, one single-run agent, the textbook
   ``act / step / observe`` loop (the baseline);
2. ``runner``: ``ldp_gym.run`` with N runs (default 100) in the native vector
   env, non-private and under the agent's privacy wrapper (Zheng et al.'s
   Alg 1 or Alg 2 at epsilon = 1).

Ratios are against the loop measured in the same process. Usage::

    python benchmarks/bco_speed.py [--runs 100] [--horizon 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import ldp_gym
from ldp_gym.agents import FKM, TwoPointGD
from ldp_gym.wrappers import VectorTwoPointGaussian, one_point

DELTA = 1e-5


def loop_speed(cls, env_id: str, steps: int) -> float:
    env = gym.make(env_id, max_episode_steps=steps)
    agent = cls.from_env(env, seed=0)
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, action, reward, next_obs)
        obs = next_obs
    return steps / (time.perf_counter() - start)


def runner_speed(cls, env_id: str, runs: int, horizon: int, wrappers, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        ldp_gym.run(env_id, {"a": cls}, horizon=horizon, n_runs=runs, seed=0, progress=False,
                    wrappers=wrappers)
        best = min(best, time.perf_counter() - start)
    return runs * horizon / best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--horizon", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is shown")
    args = p.parse_args()
    private = {FKM: [(one_point, {"epsilon": 1.0, "delta": DELTA})],
               TwoPointGD: [(VectorTwoPointGaussian, {"epsilon": 1.0, "delta": DELTA})]}
    print(f"{'agent':<12}{'loop':>10}{'runner':>12}{'private':>12}{'x loop':>9}{'x loop (priv)':>15}")
    for cls, env_id in ((FKM, "LDPBCO-v0"), (TwoPointGD, "LDPMultiPointBCO-v0")):
        runner_speed(cls, env_id, 2, 100, (), 1)  # warm-up
        loop = loop_speed(cls, env_id, min(args.horizon, 5000))
        plain = runner_speed(cls, env_id, args.runs, args.horizon, (), args.repeat)
        priv = runner_speed(cls, env_id, args.runs, args.horizon, private[cls], args.repeat)
        print(f"{cls.name:<12}{loop:>10,.0f}{plain:>12,.0f}{priv:>12,.0f}"
              f"{plain / loop:>9.0f}{priv / loop:>15.0f}")
    print(f"run-steps per second, {args.runs} runs, d = 5; 'x loop' divides by the loop")


if __name__ == "__main__":
    main()
