"""Findings of the outside audit of issue 19 (privacy labels, servers, actions, seeds, users'
breakages): each test fails on the code before its fix."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import CUCBDP, CUCBLDP1, LDPMABAux
from ldp_gym.wrappers import Privacy


# ------------------------------------------------------------------ |S| <= K on every path
class _Greedy:
    """A third-party family that declares K = 2 and whose oracle returns 6 base arms."""

    m, K, alpha, beta = 8, 2, 1.0, 1.0

    def oracle(self, w):
        s = np.zeros(w.shape, bool)
        s[:, :6] = True
        return s


@pytest.mark.parametrize("cls", [CUCBDP, CUCBLDP1])
def test_agents_whose_budget_is_per_base_arm_refuse_more_than_k_arms(cls):
    agent = cls(8, family=_Greedy(), epsilon=1.0, horizon=100, seed=0)
    with pytest.raises(ValueError, match="family.oracle: a super arm has more than K = 2"):
        agent.act(np.zeros(16))
    env = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=100)
    agent = cls.from_env(env, epsilon=0.5, num_envs=2, seed=0)
    big = np.zeros((2, 20), np.int8)
    big[:, :20] = 1  # |S| = 20 > K = 4
    obs = np.zeros((2, 40), np.float32)
    next_obs = np.concatenate([np.full((2, 20), 0.5), big], axis=1).astype(np.float32)
    before = {k: v.copy() for k, v in vars(agent).items() if isinstance(v, np.ndarray)}
    with pytest.raises(ValueError, match="more than K = 4"):
        agent.observe(obs, big, np.full(2, 10.0), next_obs)
    for k, v in before.items():
        assert np.array_equal(getattr(agent, k), v), k


# ------------------------------------------------------------------ one guarantee per source
def test_the_auxiliary_budgets_are_stated_in_privacy_repr_and_results():
    aux = [{"n": 300, "epsilon": 8.0}, {"n": 200, "epsilon": 2.0}]
    env = gym.make("LDPNonparametricBandit-v0", max_episode_steps=200, auxiliary=aux)
    agent = LDPMABAux.from_env(env, epsilon=1.0, seed=0)
    p = agent.privacy
    assert p.epsilon == 1.0 and [(n, s.epsilon) for n, s in p.sources] == [
        ("auxiliary dataset 1", 8.0), ("auxiliary dataset 2", 2.0)]
    assert "auxiliary dataset 2: local DP, epsilon=2" in repr(agent)
    assert p.to_dict()["sources"][0]["epsilon"] == 8.0
    res = ldp_gym.run("LDPNonparametricBandit-v0", {"aux": (LDPMABAux, {"epsilon": 1.0})},
                      horizon=50, n_runs=2, seed=0, progress=False,
                      env_kwargs={"auxiliary": aux})
    assert "auxiliary dataset 1: local DP, epsilon=8" in res.table()
    with pytest.raises(ValueError, match="sources"):
        Privacy("local", 1.0, sources=(("x", 1.0),))
