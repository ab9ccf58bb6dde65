"""Run-steps per second: the vectorised runner against a step-by-step Gymnasium loop, in one run.

Three measurements on ``LDPMAB-v0`` with the same agent class:

1. ``loop``: one env from ``gym.make``, one single-run agent, the textbook
   ``act / step / observe`` loop (the baseline);
2. ``runner``: ``ldp_gym.run`` with N runs in the native vector env;
3. ``draws``: the native vector env stepped with fixed actions and no agent:
   the cost of drawing the rewards alone (a ceiling for the runner).

Ratios are against the loop measured in the same process, so they do not
depend on the machine; each figure is the best of ``--repeat`` timings (the
least disturbed by other load). Usage::

    python benchmarks/runner_speed.py [--agent UCB1] [--runs 1000] [--horizon 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import ldp_gym
from ldp_gym.agents import AGENTS


def loop_speed(cls, kwargs, steps: int) -> float:
    env = gym.make("LDPMAB-v0", max_episode_steps=steps)
    agent = cls.from_env(env, seed=0, **kwargs)
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, action, reward, next_obs)
        obs = next_obs
    return steps / (time.perf_counter() - start)


def runner_speed(cls, kwargs, runs: int, horizon: int) -> float:
    start = time.perf_counter()
    ldp_gym.run("LDPMAB-v0", {"a": (cls, kwargs)}, horizon=horizon, n_runs=runs, seed=0,
                progress=False)
    return runs * horizon / (time.perf_counter() - start)


def draw_speed(runs: int, horizon: int) -> float:
    venv = ldp_gym.make_vector_env("LDPMAB-v0", runs, horizon)
    venv.reset(seed=0)
    actions = np.zeros(runs, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(horizon):
        venv.step(actions)
    return runs * horizon / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agent", default="UCB1", choices=list(AGENTS))
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--horizon", type=int, default=2000)
    p.add_argument("--loop-steps", type=int, default=20_000)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is shown")
    args = p.parse_args()
    cls = AGENTS[args.agent]
    kwargs = {"epsilon": args.epsilon} if "epsilon" in cls.test_params else {}
    runner_speed(cls, kwargs, 10, 100)  # warm-up: compiled code, caches
    loop = max(loop_speed(cls, kwargs, args.loop_steps) for _ in range(args.repeat))
    runner = max(runner_speed(cls, kwargs, args.runs, args.horizon) for _ in range(args.repeat))
    draws = max(draw_speed(args.runs, args.horizon) for _ in range(args.repeat))
    print(f"agent {args.agent}, {args.runs} runs x {args.horizon} rounds")
    print(f"{'what':<34}{'run-steps/s':>14}{'x loop':>10}")
    for name, v in (("step-by-step Gymnasium loop", loop), ("vectorised runner", runner),
                    ("reward draws alone (vector env)", draws)):
        print(f"{name:<34}{v:>14,.0f}{v / loop:>10.1f}")
    print(f"runner / draws alone: {runner / draws:.2f}")


if __name__ == "__main__":
    main()
