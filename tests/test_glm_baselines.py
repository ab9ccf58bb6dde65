"""The non-private contextual agents: one compiled kernel on every path (bitwise), and the same
algorithm as a plain numpy reference (ridge regression by Sherman-Morrison, OGD for GLOC, SGD)."""

import gymnasium as gym
import numpy as np
import pytest
from scipy import special

import ldp_gym
from ldp_gym.agents import GLOC, GreedyOLS, GreedySGD, LinUCB

CASES = [(GreedyOLS, "LDPLinearBandit-v0"), (LinUCB, "LDPLinearBandit-v0"),
         (GLOC, "LDPGLMBandit-v0"), (GreedySGD, "LDPGLMBandit-v0"),
         (LinUCB, "LDPMultiParamLinearBandit-v0"), (GLOC, "LDPMultiParamGLMBandit-v0")]
STATE = ("theta", "inv", "u", "theta_hat", "t")


def _drawn(env_id, runs, rounds, seed=1):
    venv = ldp_gym.make_vector_env(env_id, runs, rounds)
    venv.reset(seed=seed)
    obs, rewards, _ = venv.draw_block(rounds)
    return venv, obs, rewards


@pytest.mark.parametrize("cls,env_id", CASES)
def test_block_path_is_bitwise_act_and_observe(cls, env_id):
    rounds, runs = 300, 3
    venv, obs, rewards = _drawn(env_id, runs, rounds)
    fast, ref = (cls.from_env(venv, seed=0) for _ in range(2))
    acts = np.concatenate([fast.play_block(obs[:, :101], rewards[:, :100]),
                           fast.play_block(obs[:, 100:], rewards[:, 100:])], axis=1)
    for s in range(rounds):
        a = ref.act(obs[:, s])
        assert np.array_equal(a, acts[:, s])
        ref.observe(obs[:, s], a, rewards[np.arange(runs), s, a], obs[:, s + 1])
    assert len(np.unique(acts)) > 1
    for name in STATE:
        assert np.array_equal(getattr(fast, name), getattr(ref, name)), name


@pytest.mark.parametrize("cls,env_id", CASES[:4])
def test_single_run_gymnasium_loop_is_the_block_path(cls, env_id):
    rounds = 200
    _, obs, rewards = _drawn(env_id, 1, rounds, seed=4)
    block = cls.from_env(gym.make(env_id, max_episode_steps=rounds), seed=0)
    acts = block.play_block(obs, rewards)[0]
    loop = cls.from_env(gym.make(env_id, max_episode_steps=rounds), seed=0)
    for s in range(rounds):
        a = loop.act(obs[0, s])
        assert a == acts[s]
        loop.observe(obs[0, s], a, float(rewards[0, s, a]), obs[0, s + 1])
    for name in STATE:
        assert np.array_equal(getattr(block, name), getattr(loop, name)), name


def _reference(cls, agent, obs, rewards):
    """The algorithm in plain numpy, over runs: actions and final theta."""
    n, length, k = rewards.shape
    d = agent.D
    x_all = obs[:, :length].reshape(n, length, k, d).astype(np.float64)
    inv = np.repeat(np.eye(d)[None] / agent.reg, n, axis=0)
    u, theta, theta_hat = np.zeros((n, d)), np.zeros((n, d)), np.zeros((n, d))
    mean = {"identity": lambda z: z, "logistic": special.expit}[agent.link]
    acts = np.empty((n, length), dtype=np.int64)
    for s in range(length):
        x = x_all[:, s]
        score = np.einsum("nkd,nd->nk", x, theta)
        if cls in (LinUCB, GLOC):
            t = s
            beta = (agent.noise_scale * np.sqrt(d * np.log((1 + t / agent.reg) / agent.alpha))
                    + np.sqrt(agent.reg)) if cls is LinUCB \
                else agent.beta_scale * np.sqrt(d * np.log1p(t + 1.0))
            score = score + beta * np.sqrt(np.maximum(np.einsum("nkd,nde,nke->nk", x, inv, x), 0))
        a = score.argmax(axis=1)
        acts[:, s] = a
        xa, r = x[np.arange(n), a], rewards[np.arange(n), s, a]
        if cls is GreedySGD:
            grad = (mean(np.clip(np.einsum("nd,nd->n", xa, theta), -50, 50)) - r)[:, None] * xa
            theta = theta - agent.step_size / (s + 1) * grad
            continue
        if cls is GLOC:
            z = np.einsum("nd,nd->n", xa, theta_hat)
            theta_hat = theta_hat - agent.step / np.sqrt(agent.horizon) \
                * (mean(np.clip(z, -50, 50)) - r)[:, None] * xa
            theta_hat /= np.maximum(1.0, np.linalg.norm(theta_hat, axis=1))[:, None]
            r = z
        vx = np.einsum("nde,ne->nd", inv, xa)
        inv = inv - vx[:, :, None] * vx[:, None, :] / (1 + np.einsum("nd,nd->n", xa, vx))[:, None, None]
        u = u + r[:, None] * xa
        theta = np.einsum("nde,ne->nd", inv, u)
    return acts, theta


@pytest.mark.parametrize("cls,env_id", CASES[:4])
def test_the_kernel_is_the_numpy_algorithm(cls, env_id):
    """Same actions as the numpy reference over 300 rounds of 4 runs, and theta equal to
    rounding (the kernel sums in another order)."""
    venv, obs, rewards = _drawn(env_id, 4, 300, seed=2)
    agent = cls.from_env(venv, seed=0)
    acts = agent.play_block(obs, rewards)
    ref_acts, ref_theta = _reference(cls, agent, obs, rewards)
    assert np.array_equal(acts, ref_acts)
    assert np.allclose(agent.theta, ref_theta, rtol=1e-9, atol=1e-12)
