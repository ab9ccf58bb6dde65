"""Randomness of the private streams and input checks on every path.

* Streams built from a user's seed are domain-separated: a mechanism, an agent's
  mechanisms and a privacy wrapper never draw the env's numbers, even when given
  the same integer as ``env.reset``.
* Secure mode reaches every private agent, on the per-round and the compiled
  path: every noise draw comes from the OS CSPRNG, seeds are refused for the
  private streams, and the noise cannot be replayed.
* NaN and inf are refused on the compiled block path as on the per-round path.
"""

import numpy as np
import pytest

import ldp_gym
from ldp_gym.agents import AGENTS, LDPGLOC, LDPOLS, LDPSGD, LDPLinUCB, LDPMultiOLS, LDPMultiSGD
from ldp_gym.experiments.compare import is_private
from ldp_gym.wrappers import mechanisms as M
from ldp_gym.wrappers.mechanisms import noise as N

PRIVATE = {name: cls for name, cls in AGENTS.items() if is_private(cls)}
COMPILED = [LDPOLS, LDPLinUCB, LDPGLOC, LDPSGD, LDPMultiOLS, LDPMultiSGD]


def _budget(cls):
    """The agent's test parameters, with epsilon = 1 unless it takes a zCDP rho."""
    params = dict(getattr(cls, "test_params", {}))
    return params if "rho" in params else {"epsilon": 1.0, **params}


def _agent(cls, n=4, **kw):
    venv = ldp_gym.make_vector_env(cls.test_env, n, 1000)
    params = {**_budget(cls), **kw}
    return venv, cls.from_env(venv, **params)


def _mechanisms(agent):
    """Every source of the agent's privacy noise: its mechanisms (the zCDP episode means
    included) and the users' own randomisers of a shuffle agent."""
    found = [v for v in vars(agent).values() if isinstance(v, (M.Mechanism, M.GaussianEpisodeMean))]
    return found + [_Randomiser(v) for k, v in vars(agent).items()
                    if k != "rng" and isinstance(v, (np.random.Generator, M.SecureGenerator))]


class _Randomiser:
    """A users' generator, seen as a mechanism with that ``rng``."""

    def __init__(self, rng):
        self.rng = rng


# ----------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("seed", [7, np.random.SeedSequence(7)])
def test_mechanism_streams_are_not_the_env_stream(seed):
    """A mechanism given the env's integer (or its SeedSequence) draws other numbers; before
    the domain separation it drew exactly ``default_rng(7)``, the env's stream."""
    env_numbers = np.random.default_rng(7).random(8)
    assert not np.array_equal(M.make_rng(seed).random(8), env_numbers)
    assert np.array_equal(M.make_rng(7).random(8), M.make_rng(np.random.SeedSequence(7)).random(8))


def test_same_seed_same_noise_and_a_generator_is_used_as_given():
    a, b = M.LaplaceMechanism(1.0, seed=3), M.LaplaceMechanism(1.0, seed=3)
    x = np.full(100, 0.5)
    assert np.array_equal(a(x), b(x))  # simulation: whoever knows the seed knows the noise
    g = np.random.default_rng(3)
    assert M.make_rng(g) is g


def test_negative_seed_is_refused():
    with pytest.raises(ValueError, match="seed"):
        M.LaplaceMechanism(1.0, seed=-1)


# ----------------------------------------------------------------------------- secure mode


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_secure_mode_reaches_every_mechanism_of_every_private_agent(name, monkeypatch):
    cls = PRIVATE[name]
    venv, agent = _agent(cls, secure=True, seed=1)
    mechs = _mechanisms(agent)
    assert agent.secure and mechs, name
    for m in mechs:
        assert isinstance(m.rng, M.SecureGenerator)
        for sub in getattr(m, "substreams", {}).values():
            assert isinstance(sub, M.SecureGenerator)
    drawn = []
    real = N.os.urandom
    monkeypatch.setattr(N.os, "urandom", lambda k: drawn.append(k) or real(k))
    obs, _ = venv.reset(seed=0)
    for _ in range(300):
        actions = agent.act(obs)
        next_obs, rewards, _, _, _ = venv.step(actions)
        agent.observe(obs, actions, rewards, next_obs)
        obs = next_obs
    # DP-SE releases only at the end of its first epoch (thousands of rounds): the runner's
    # secure test covers it
    assert sum(drawn) > 0 or name.startswith("DP-SE")
    assert "secure" in repr(agent)


def test_secure_mode_draws_every_noise_coordinate_from_the_os():
    """LDP-OLS, per round and compiled: its two noise streams (the 3 upper-triangle entries of
    W and the 2 of xi per user and round) are filled from os.urandom, 16 bytes per normal
    (Box-Muller on two 8-byte uniforms), in chunks drawn ahead: the first round draws exactly
    one chunk per stream, and the rounds after it, on both paths, use that chunk."""
    n, rounds = 6, 5
    venv, agent = _agent(LDPOLS, n=n, secure=True, seed=2)
    streams = agent.mechanism.streams
    assert all(isinstance(st.rng, M.SecureGenerator) for st in streams.values())
    obs, _ = venv.reset(seed=0)
    drawn = []
    real = N.os.urandom
    N.os.urandom, saved = (lambda k: drawn.append(k) or real(k)), N.os.urandom
    try:
        for _ in range(rounds):
            actions = agent.act(obs)
            next_obs, rewards, _, _, _ = venv.step(actions)
            agent.observe(obs, actions, rewards, next_obs)
            obs = next_obs
        chunks = 16 * sum(st.chunk for st in streams.values())
        assert sum(drawn) == chunks
        obs_b, rew_b, _ = venv.draw_block(rounds)
        agent.play_block(obs_b, rew_b)
        assert sum(drawn) == chunks
        assert (5 * n * 2 * rounds) < min(st.chunk for st in streams.values())
    finally:
        N.os.urandom = saved


@pytest.mark.parametrize("cls", COMPILED)
def test_secure_noise_cannot_be_replayed_on_the_compiled_path(cls):
    """Two agents with the same seed: identical states in simulation, different in secure mode."""
    states = {}
    for secure in (False, True):
        runs = []
        for _ in range(2):
            venv, agent = _agent(cls, secure=secure, seed=5)
            venv.reset(seed=0)
            agent.play_block(*venv.draw_block(20)[:2])
            runs.append(agent.theta.copy())
        states[secure] = runs
    assert np.array_equal(*states[False])
    assert not np.array_equal(*states[True])


def test_secure_mode_refuses_seeds_and_non_bools():
    with pytest.raises(TypeError, match="secure"):
        M.LaplaceMechanism(1.0, seed=0, secure=True)
    with pytest.raises(TypeError, match="secure"):
        LDPOLS(3, horizon=10, epsilon=1.0, secure="yes")


# ----------------------------------------------------------------------------- compiled path inputs


@pytest.mark.parametrize("cls", COMPILED)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_compiled_path_refuses_non_finite_rewards_and_contexts(cls, bad):
    venv, agent = _agent(cls, seed=0)
    venv.reset(seed=0)
    obs, rewards, _ = venv.draw_block(8)
    theta = agent.theta.copy()
    bad_rewards = rewards.copy()
    bad_rewards[1, 3, :] = bad
    with pytest.raises(ValueError, match="rewards must be finite"):
        agent.play_block(obs, bad_rewards)
    bad_obs = obs.copy()
    bad_obs[2, 4, 0] = bad
    with pytest.raises(ValueError, match="obs must be finite"):
        agent.play_block(bad_obs, rewards)
    assert np.array_equal(agent.theta, theta)  # nothing was played
    with pytest.raises(TypeError, match="rewards"):
        agent.play_block(obs, rewards > 0)


# ----------------------------------------------------------------------------- wrappers and runner


def test_wrapper_seeded_like_the_env_draws_independent_noise():
    """The issue's attack: a wrapper given the integer of ``env.reset`` drew the env's own
    stream, so its noise was correlated with the reward (-0.35). Now the noise is independent
    of the reward: |correlation| below 5 standard errors (false alarm about 6e-7)."""
    from ldp_gym.wrappers.reward import VectorGaussianReward, VectorLaplaceReward

    n, rounds = 2000, 20
    for cls, kw in ((VectorLaplaceReward, {}), (VectorGaussianReward, {"delta": 1e-5})):
        for seed_kw in ({"seed": 11}, {}):  # explicit seed, or derived from reset(seed=11)
            raw = ldp_gym.make_vector_env("LDPMAB-v0", n, rounds)
            wrapped = cls(ldp_gym.make_vector_env("LDPMAB-v0", n, rounds), epsilon=1.0,
                          **kw, **seed_kw)
            raw.reset(seed=11)
            wrapped.reset(seed=11)
            r, noise = [], []
            for _ in range(rounds):
                a = np.zeros(n, dtype=np.int64)
                r.append(raw.step(a)[1])
                noise.append(wrapped.step(a)[1] - r[-1])
            corr = np.corrcoef(np.concatenate(r), np.concatenate(noise))[0, 1]
            assert abs(corr) < 5 / np.sqrt(n * rounds), (cls.__name__, seed_kw, corr)


def test_wrapper_secure_mode_and_reward_validation():
    import gymnasium as gym

    from ldp_gym.wrappers.reward import GaussianReward, LaplaceReward

    env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0, secure=True)
    assert isinstance(env.mechanism.rng, M.SecureGenerator)
    env.reset(seed=3)  # the env is seeded, the secure noise is not reseeded
    assert isinstance(env.mechanism.rng, M.SecureGenerator)
    with pytest.raises(TypeError, match="secure"):
        GaussianReward(gym.make("LDPMAB-v0"), epsilon=1.0, delta=1e-5, seed=0, secure=True)
    with pytest.raises(TypeError, match="reward"):
        env.reward(True)


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_run_secure_draws_every_private_agents_noise_from_the_os(name, monkeypatch):
    """``run(..., secure=True)`` on every path the runner takes (per round, committed stretches
    for AdaP-* and DP-SE, speculative stretches for DP-UCB, compiled blocks for the LDP
    contextual agents): noise bytes come from os.urandom, and the label says so."""
    cls = PRIVATE[name]
    drawn = []
    real = N.os.urandom
    monkeypatch.setattr(N.os, "urandom", lambda k: drawn.append(k) or real(k))
    params = _budget(cls)
    horizon = 20_000 if name.startswith("DP-SE") else 600
    res = ldp_gym.run(cls.test_env, {name: (cls, params)}, horizon=horizon, n_runs=2, seed=0,
                      progress=False, secure=True)
    assert sum(drawn) > 0 and res.meta["secure"]
    assert res.meta["privacy"][name].endswith("secure noise")


def test_run_secure_with_wrappers_and_refusals():
    from ldp_gym.agents import UCB1
    from ldp_gym.wrappers.reward import VectorLaplaceReward

    res = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=200, n_runs=2, progress=False,
                      wrappers=[(VectorLaplaceReward, {"epsilon": 1.0})], secure=True)
    assert "secure noise via VectorLaplaceReward" in res.meta["privacy"]["UCB1"]
    with pytest.raises(TypeError, match="secure"):  # a seeded privacy wrapper cannot be secure
        ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=20, n_runs=2, progress=False,
                    wrappers=[(VectorLaplaceReward, {"epsilon": 1.0, "seed": 1})], secure=True)
    venv, seeded = _agent(LDPOLS, n=2, seed=0)
    with pytest.raises(ValueError, match="secure"):  # a ready-made agent with seeded noise
        ldp_gym.run(LDPOLS.test_env, {"A": seeded}, horizon=20, n_runs=2, progress=False,
                    secure=True)
    with pytest.raises(TypeError, match="secure"):
        ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=20, n_runs=2, secure=1)


def test_cli_run_secure(tmp_path):
    from ldp_gym.cli import main

    out = tmp_path / "res"
    assert main(["run", "LDPMAB-v0", "--agents", "AdaP-UCB", "--horizon", "300", "--runs", "2",
                 "--secure", "--quiet", "--out", str(out)]) == 0
    assert (out / "results.npz").exists()
    assert main(["run", "LDPMAB-v0", "--agents", "UCB1", "--horizon", "30", "--secure",
                 "--out", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "b").exists()
