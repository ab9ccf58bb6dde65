"""A stable-baselines3 PPO model on LDPGLMBandit-v0, run through the runner beside the papers' agents.

PPO is trained on the logistic contextual bandit with rewards privatised by
the Laplace wrapper (the black-box reduction: the model only ever sees
epsilon-LDP rewards), then evaluated with the LDP agents on the same
instances. theta* is fixed (``theta=[0.6, 0.8]``) so that a context-to-arm
policy can be learned across episodes.

Needs the sb3 extra (install the CPU torch first: ``pip install torch==2.13.0``).
Run: python examples/sb3_ppo_glm.py [--train-steps 20000]
"""

import argparse

import gymnasium as gym

import ldp_gym
from ldp_gym.agents import LDPGLOC, LDPSGD
from ldp_gym.agents.adapters import SB3Agent
from ldp_gym.wrappers.reward import LaplaceReward

THETA = [0.6, 0.8]


def main(train_steps: int = 20_000, horizon: int = 2000, n_runs: int = 10) -> ldp_gym.Results:
    from stable_baselines3 import PPO

    env = LaplaceReward(gym.make("LDPGLMBandit-v0", theta=THETA, max_episode_steps=256),
                        epsilon=1.0, lower=0.0, upper=1.0)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=train_steps)
    results = ldp_gym.run("LDPGLMBandit-v0",
                          {"PPO on Laplace rewards (eps=1)": lambda venv: SB3Agent(model),
                           "LDP-SGD (eps=1)": (LDPSGD, {"epsilon": 1.0}),
                           "LDP-GLOC (eps=1)": (LDPGLOC, {"epsilon": 1.0})},
                          horizon=horizon, n_runs=n_runs, seed=0, env_kwargs={"theta": THETA},
                          progress=False)
    print(results.table())
    return results


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-steps", type=int, default=20_000)
    main(p.parse_args().train_steps)
