"""Quickstart: a private agent step by step, the black-box reduction, and a vectorised comparison.

Run: python examples/quickstart.py [--out regret.png]
"""

import argparse

import gymnasium as gym
import numpy as np

import ldp_gym
from ldp_gym.agents import LDPUCB, AdaPKLUCB, TsallisINF
from ldp_gym.wrappers.reward import LaplaceReward, VectorLaplaceReward


def main(out: str | None = None, horizon: int = 5000, n_runs: int = 20) -> ldp_gym.Results:
    # 1. one run, step by step: an epsilon-global-DP agent
    env = gym.make("LDPMAB-v0", max_episode_steps=1000)
    agent = AdaPKLUCB.from_env(env, epsilon=1.0, seed=0)
    obs, _ = env.reset(seed=0)
    regret = 0.0
    for _ in range(1000):
        action = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, action, reward, next_obs)
        regret += info["regret"]
        obs = next_obs
    print(f"AdaP-KLUCB ({agent.privacy}): regret after 1000 rounds {regret:.1f}")

    # 2. what a local-DP server receives: one noisy reward per user
    ldp = LDPUCB.from_env(env, epsilon=1.0, seed=0)
    obs, _ = env.reset(seed=1)
    action = ldp.act(obs)
    _, reward, *_ = env.step(action)
    ldp.observe(obs, action, reward, obs)
    print(f"LDP-UCB: the user saw reward {reward}, the server received {ldp.last_report}")

    # 3. the black-box reduction: any agent on a reward-privatised env is locally private
    private_env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0)
    private_env.reset(seed=2)
    print("Laplace-wrapped rewards:", [round(private_env.step(0)[1], 2) for _ in range(3)])

    # 4. vectorised comparison on the same instances
    results = ldp_gym.run("LDPMAB-v0", {"AdaP-KLUCB": (AdaPKLUCB, {"epsilon": 1.0}),
                                        "LDP-UCB": (LDPUCB, {"epsilon": 1.0})},
                          horizon=horizon, n_runs=n_runs, seed=0, progress=False)
    wrapped = ldp_gym.run("LDPMAB-v0", {"Tsallis-INF + Laplace": TsallisINF}, horizon=horizon,
                          n_runs=n_runs, seed=0, progress=False,
                          wrappers=[(VectorLaplaceReward, {"epsilon": 1.0})])
    results = results.merge(wrapped)
    print(results.table())
    if out:
        import matplotlib

        matplotlib.use("Agg")
        results.plot(logx=True).figure.savefig(out, dpi=100)
        print(f"wrote {out}")
    assert np.isfinite(results.mean("AdaP-KLUCB")).all()
    return results


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default=None, help="save the regret plot here")
    main(p.parse_args().out)
