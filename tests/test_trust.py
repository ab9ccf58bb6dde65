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


# ------------------------------------------------------------------ servers trust no message
def _local_agents():
    from ldp_gym.agents import AGENTS
    from ldp_gym.agents.base import LocalDPAgent

    return sorted((name, cls) for name, cls in AGENTS.items() if issubclass(cls, LocalDPAgent))


def _agent(cls, n=3):
    env = gym.make(cls.test_env, max_episode_steps=50)
    agent = cls.from_env(env, num_envs=n, seed=0, **cls.test_params)
    venv = gym.make_vec(cls.test_env, num_envs=n, vectorization_mode="vector_entry_point",
                        max_episode_steps=50)
    obs, _ = venv.reset(seed=0)
    for _ in range(5):  # a state that is not the initial one
        action = agent.act(obs)
        next_obs, reward, *_ = venv.step(action)
        agent.observe(obs, action, reward, next_obs)
        obs = next_obs
    return agent, venv, obs


def _arrays(agent):
    return {k: v.copy() for k, v in vars(agent).items() if isinstance(v, np.ndarray)}


def _garbage(report):
    """Reports a fuzzer sends: each part NaN, inf, None, a string, bools, a wrong shape, a
    ragged list; a part missing, an unknown part; not a mapping."""
    for key, value in report.items():
        value = np.asarray(value)
        for bad in (np.full(value.shape, np.nan), np.full(value.shape, np.inf), None, "x",
                    np.ones(value.shape, bool), np.zeros(value.shape + (2,)),
                    np.zeros((1,) + value.shape[1:]), [[1, 2], [3]], 1e300 * np.ones(value.shape),
                    np.full(value.shape, 10**6)):
            yield {**report, key: bad}
        yield {k: v for k, v in report.items() if k != key}
    yield {**report, "extra": np.zeros(3)}
    yield None
    yield [1, 2, 3]


@pytest.mark.parametrize("name,cls", _local_agents())
def test_a_server_refuses_a_bad_message_before_touching_its_state(name, cls):
    agent, venv, obs = _agent(cls)
    action = agent.act(obs)
    next_obs, reward, *_ = venv.step(action)
    good = agent.local_report(obs, action, reward, next_obs, agent.public_state())
    before = _arrays(agent)
    refused = 0
    for bad in _garbage(good):
        try:
            agent.update(bad)
        except (ValueError, TypeError) as exc:
            assert "\n" not in str(exc)
            refused += 1
            for k, v in before.items():
                assert np.array_equal(getattr(agent, k), v, equal_nan=True), (k, bad)
        else:  # accepted: it must have been a valid message (large finite values are)
            before = _arrays(agent)
            assert all(np.isfinite(v).all() for v in before.values() if v.dtype.kind == "f")
    assert refused >= len(good) * 8
    for _ in range(20):  # the state still learns from valid messages
        agent.update(agent.local_report(obs, action, reward, next_obs, agent.public_state()))
    assert all(np.isfinite(v).all() for v in _arrays(agent).values() if v.dtype.kind == "f")


@pytest.mark.parametrize("name,cls", _local_agents())
def test_local_report_refuses_garbage_with_one_clear_error(name, cls):
    agent, venv, obs = _agent(cls)
    action = agent.act(obs)
    next_obs, reward, *_ = venv.step(action)
    public = agent.public_state()
    args = {"obs": obs, "actions": action, "rewards": reward, "next_obs": next_obs,
            "public_state": public}
    for key in ("obs", "actions", "rewards", "next_obs"):
        value = np.asarray(args[key])
        for bad in (None, "x", np.full(value.shape, np.nan), value[:1], value[..., None],
                    np.ones(value.shape, bool), [[1], [2, 3]]):
            with pytest.raises((ValueError, TypeError)):
                agent.local_report(**{**args, key: bad})
    if agent.report_reads_public_state:
        for bad in (None, {}, {k: np.full(np.shape(v), np.nan) for k, v in public.items()},
                    {k: np.zeros((1,)) for k in public}):
            with pytest.raises((ValueError, TypeError)):
                agent.local_report(**{**args, "public_state": bad})


# ------------------------------------------------------------------ finite in, finite out
@pytest.mark.parametrize("name", ["FKM", "Saha-Tewari", "Hazan-Levy"])
def test_a_huge_finite_loss_never_makes_an_action_non_finite(name):
    from ldp_gym.agents import AGENTS

    cls = AGENTS[name]
    env = gym.make("LDPBCO-v0", max_episode_steps=100)
    agent = cls.from_env(env, seed=0, **cls.test_params)
    obs, _ = env.reset(seed=0)
    for reward in (1e308, -1e308, 1e308):
        action = agent.act(obs)
        agent.observe(obs, action, reward, obs)
    assert np.isfinite(agent.act(obs)).all()
    assert all(np.isfinite(v).all() for v in vars(agent).values()
               if isinstance(v, np.ndarray) and v.dtype.kind == "f")


@pytest.mark.parametrize("seed,error", [(-1, ValueError), (1.5, TypeError), ("abc", TypeError),
                                        (True, TypeError)])
@pytest.mark.parametrize("vector", [False, True])
def test_reset_refuses_a_bad_seed_naming_it(seed, error, vector):
    env = gym.make_vec("LDPMAB-v0", num_envs=2, vectorization_mode="vector_entry_point") \
        if vector else gym.make("LDPMAB-v0").unwrapped
    with pytest.raises(error, match="seed"):
        env.reset(seed=seed)


def test_an_epsilon_whose_noise_would_collapse_is_refused():
    from ldp_gym.agents import LDPUCB
    from ldp_gym.wrappers import LaplaceMechanism, LaplaceReward

    for build in (lambda e: LaplaceMechanism(e), lambda e: LDPUCB(5, epsilon=e, horizon=10),
                  lambda e: LaplaceReward(gym.make("LDPMAB-v0"), epsilon=e)):
        with pytest.raises(ValueError, match="epsilon"):
            build(1e-30)
        build(1e-12)


# ------------------------------------------------------------------ the independent audit's findings
@pytest.mark.parametrize("name", ["LDP-OLS (multi)", "LDP-SGD (multi)"])
def test_the_public_arm_of_a_multi_parameter_message_is_checked(name):
    from ldp_gym.agents import AGENTS

    cls = AGENTS[name]
    agent, venv, obs = _agent(cls, n=2)  # 5 rounds: in the warm-up (10 rounds per arm)
    action = agent.act(obs)
    next_obs, reward, *_ = venv.step(action)
    good = agent.local_report(obs, action, reward, next_obs, agent.public_state())
    before = _arrays(agent)
    for arm in ([3, 0], [-2, 0], [100, 0], [-1, -1]):  # K = 3; -1 only after the warm-up
        with pytest.raises(ValueError, match="arm"):
            agent.update({**good, "arm": np.array(arm)})
        for k, v in before.items():
            assert np.array_equal(getattr(agent, k), v), k
    agent.update(good)


@pytest.mark.parametrize("name,cls", _local_agents())
def test_local_report_takes_float16_and_refuses_masked_messages(name, cls):
    agent, venv, obs = _agent(cls, n=2)
    action = agent.act(obs)
    next_obs, reward, *_ = venv.step(action)
    rep = agent.local_report(np.asarray(obs, np.float16), action, reward,
                             np.asarray(next_obs, np.float16), agent.public_state())
    key = next(iter(rep))
    with pytest.raises(TypeError, match="masked"):
        agent.update({**rep, key: np.ma.masked_all(np.shape(rep[key]))})


def test_budgets_too_small_for_their_split_name_the_parameter():
    from ldp_gym.agents import CUCBLDP1, LDPMAB

    with pytest.raises(ValueError, match=r"auxiliary\[0\]\['epsilon'\]"):
        gym.make("LDPNonparametricBandit-v0", auxiliary=[{"n": 10, "epsilon": 1e-13}])
    env = gym.make("LDPNonparametricBandit-v0", max_episode_steps=50)
    with pytest.raises(ValueError, match="epsilon=1e-12 is split in 4 parts.*must be >= 4e-12"):
        LDPMAB.from_env(env, epsilon=1e-12)
    comb = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=50)
    with pytest.raises(ValueError, match="epsilon must be >= 4e-12"):
        CUCBLDP1.from_env(comb, epsilon=2e-12)


def test_a_reward_release_over_the_semi_bandit_release_is_accepted():
    from ldp_gym.wrappers import LaplaceReward, LaplaceSemiBandit

    env = LaplaceSemiBandit(gym.make("LDPCombinatorialBandit-v0"), epsilon=1.0, seed=0)
    assert LaplaceReward(env, epsilon=1.0, upper=4.0, seed=0).privacy.epsilon == 1.0
