r"""Run-steps per second of the combinatorial semi-bandit agents: the runner against a loop.

For CUCB, CUCB-LDP1, CUCB-LDP2 and CUCB-DP (epsilon = 1) on
``LDPCombinatorialBandit-v0`` (top-K family, m = 20 base arms, K = 4), in one
process:

1. ``loop``: one env from ``gym.make``, one single-run agent, the textbook
   ``act / step / observe`` loop (the baseline);
2. ``runner``: ``ldp_gym.run`` with N runs (default 100) in the native vector
   env: round by round (every run's round batched: the agent's index and the
   top-K oracle, the env's outcomes, rewards, regret and feedback mask), or by
   blocks where the runner has the block path of
   :class:`~ldp_gym.protocols.ScoresBlocks` settings;
3. ``blocks``: the block path itself, as the runner drives it (CUCB, CUCB-LDP1,
   CUCB-LDP2; CUCB-DP has none): the env draws every base arm's outcomes of
   512 rounds (``draw_outcomes``, one block ahead where a core is spare), the
   agent plays them in one compiled kernel (``play_outcomes``), the env scores
   the super arms (``score_block``), cumulative regret kept per run.

Each agent first plays a short warm-up run, so that compiling its kernels
(numba, cached on disk after the first time) is not timed. Ratios are against
the loop measured in the same process; the target of the issue is 1e6 run-steps
per second at 100 runs and 100 times the loop. Usage::

    python benchmarks/combinatorial_speed.py [--runs 100] [--horizon 2000] [--repeat 3] \\
        [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym
import numpy as np

import ldp_gym
from ldp_gym.agents import CUCB, CUCBDP, CUCBLDP1, CUCBLDP2
from ldp_gym.protocols import BlockPlay
from ldp_gym.runner.blocks import _prefetched

ENV = "LDPCombinatorialBandit-v0"
EPSILON = 1.0
#: the clock of every timing: wall time (default), or this process's CPU time (``--clock cpu``:
#: less sensitive to other load on a shared machine; numpy and numba run in this thread)
CLOCK = time.perf_counter


def _kwargs(cls) -> dict:
    return {} if cls is CUCB else {"epsilon": EPSILON}


def loop_speed(cls, env_kwargs: dict, steps: int) -> float:
    env = gym.make(ENV, max_episode_steps=steps, **env_kwargs)
    agent = cls.from_env(env, seed=0, **_kwargs(cls))
    obs, _ = env.reset(seed=0)
    start = CLOCK()
    for _ in range(steps):
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, action, reward, next_obs)
        obs = next_obs
    return steps / (CLOCK() - start)


def runner_speed(cls, env_kwargs: dict, runs: int, horizon: int, repeat: int) -> float:
    """Best of ``repeat`` timings (the least disturbed by other load on the machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = CLOCK()
        ldp_gym.run(ENV, {"a": (cls, _kwargs(cls))}, horizon=horizon, n_runs=runs, seed=0,
                    env_kwargs=env_kwargs, progress=False)
        best = min(best, CLOCK() - start)
    return runs * horizon / best


def blocks_speed(cls, env_kwargs: dict, runs: int, horizon: int, repeat: int) -> float:
    """Best of ``repeat`` timings of the block path (module docstring), or NaN without one."""
    best = float("inf")
    for _ in range(repeat):
        start = CLOCK()
        venv = gym.make_vec(ENV, num_envs=runs, vectorization_mode="vector_entry_point",
                            max_episode_steps=horizon, **env_kwargs)
        env = venv.unwrapped
        agent = cls.from_env(venv, seed=0, **_kwargs(cls))
        if agent.block_play is not BlockPlay.PLAYS_OUTCOMES:
            return float("nan")
        venv.reset(seed=0)
        cum = np.zeros(runs)
        for outcomes in _prefetched(env.draw_outcomes, horizon):  # the runner's blocks
            _, regret = env.score_block(agent.play_outcomes(outcomes), outcomes)
            cum += regret.sum(axis=1)
        best = min(best, CLOCK() - start)
    return runs * horizon / best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--horizon", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is shown")
    p.add_argument("--arms", type=int, default=20, help="m, the number of base arms")
    p.add_argument("--size", type=int, default=4, help="K, the largest super arm")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="time the wall clock, or this process's CPU time")
    args = p.parse_args()
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    env_kwargs = {"n_arms": args.arms, "max_size": args.size, "family": "topk"}
    print(f"{'agent':<12}{'loop':>10}{'runner':>14}{'x loop':>9}{'blocks':>14}{'x loop':>9}")
    for cls in (CUCB, CUCBLDP1, CUCBLDP2, CUCBDP):
        runner_speed(cls, env_kwargs, 2, 100, 1)  # warm-up: compile (batched and single run)
        loop_speed(cls, env_kwargs, 50)
        loop = loop_speed(cls, env_kwargs, min(args.horizon, 2000))
        fast = runner_speed(cls, env_kwargs, args.runs, args.horizon, args.repeat)
        blocks_speed(cls, env_kwargs, 2, 100, 1)  # warm-up
        by_blocks = blocks_speed(cls, env_kwargs, args.runs, args.horizon, args.repeat)
        print(f"{cls.name:<12}{loop:>10,.0f}{fast:>14,.0f}{fast / loop:>9.0f}"
              f"{by_blocks:>14,.0f}{by_blocks / loop:>9.0f}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"run-steps per second, {args.runs} runs, m = {args.arms}, K = {args.size}, top-K, "
          f"T = {args.horizon}, {args.clock} clock; 'x loop' divides by the loop; load average "
          f"{load:.2f}")


if __name__ == "__main__":
    main()
