"""Privacy wrappers that see the action (wrappers/feedback.py): the release of a step's
observation and reward together, with the policies of the reward wrappers (noise stream and its
key, secure mode, no info, round-by-round play, recorded arguments, privacy, spaces)."""

import doctest
import importlib

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import RecordConstructorArgs
from gymnasium.utils.env_checker import check_env

import ldp_gym
from ldp_gym.agents import UCB1
from ldp_gym.envs.base import INFO_KEYS
from ldp_gym.wrappers import mechanisms as M
from ldp_gym.wrappers.feedback import NOISE_KEY, FeedbackWrapper, VectorFeedbackWrapper
from ldp_gym.wrappers.mechanisms import LaplaceMechanism
from ldp_gym.wrappers.mechanisms.privacy import Privacy
from ldp_gym.wrappers.reward import (
    GaussianReward,
    LaplaceReward,
    VectorGaussianReward,
    VectorLaplaceReward,
)

K = 5  # arms of LDPMAB-v0


class OneHotRelease(FeedbackWrapper):
    """Test-only action-aware release: the observation is ``one_hot(action) * reward`` under
    ``LaplaceMechanism(dim=K)`` (l1 sensitivity K >= 2 covers any change of action and reward),
    the reward is the sum of the released vector. Everything released is post-processing of
    that one vector, so the unit is the user (action and reward; a MAB has no context); a reward
    of ``obs[action]`` would give the action away."""

    unit = "user"

    def __init__(self, env, epsilon, seed=None, *, secure=False, oracle_info=False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        self.epsilon, self.K = epsilon, int(env.action_space.n)
        space = gym.spaces.Box(-np.inf, np.inf, (self.K,), np.float64)
        super().__init__(env, seed=seed, secure=secure, oracle_info=oracle_info,
                         observation_space=space)

    def make_mechanism(self, seed):
        return LaplaceMechanism(self.epsilon, dim=self.K, seed=seed, secure=self.secure)

    def release(self, action, observation, reward):
        obs = self.mechanism(np.eye(self.K)[action] * reward)
        return obs, float(obs.sum())

    def release_reset(self, observation):
        return np.zeros(self.K)  # public: nothing happened yet


class VectorOneHotRelease(VectorFeedbackWrapper):
    """:class:`OneHotRelease` of every run of a vector env."""

    unit = "user"

    def __init__(self, env, epsilon, seed=None, *, secure=False, oracle_info=False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        self.epsilon, self.K = epsilon, int(env.single_action_space.n)
        space = gym.spaces.Box(-np.inf, np.inf, (self.K,), np.float64)
        super().__init__(env, seed=seed, secure=secure, oracle_info=oracle_info,
                         single_observation_space=space)

    def make_mechanism(self, seed):
        return LaplaceMechanism(self.epsilon, dim=self.K, seed=seed, secure=self.secure)

    def release(self, actions, observations, rewards):
        obs = self.mechanism(np.eye(self.K)[actions] * rewards[:, None])
        return obs, obs.sum(axis=1)

    def release_reset(self, observations):
        return np.zeros((self.num_envs, self.K))


class Raw(gym.Wrapper):
    """Below the privacy wrapper: records the raw rewards."""

    def __init__(self, env):
        super().__init__(env)
        self.raw = []

    def step(self, action):
        out = self.env.step(action)
        self.raw.append(out[1])
        return out


def _vec(n=4, horizon=None):
    return ldp_gym.make_vector_env("LDPMAB-v0", n, horizon)


def _noise_key(seed):
    return np.random.SeedSequence(seed, spawn_key=(NOISE_KEY,))


def test_reward_wrappers_are_feedback_wrappers():
    for cls in (LaplaceReward, GaussianReward):
        assert issubclass(cls, FeedbackWrapper) and issubclass(cls, gym.RewardWrapper)
    for cls in (VectorLaplaceReward, VectorGaussianReward):
        assert issubclass(cls, VectorFeedbackWrapper)
        assert issubclass(cls, gym.vector.VectorRewardWrapper)
    for cls in (OneHotRelease, VectorOneHotRelease):
        assert cls.needs_round_by_round is True


@pytest.mark.parametrize("seed_kw,key", [({}, 0), ({"seed": 7}, 7)])
def test_step_returns_the_release_of_action_observation_and_reward(seed_kw, key):
    """The release, bit for bit: the mechanism seeded under NOISE_KEY (from seed=, else from
    the reset seed) applied to one_hot(action) * raw reward; reset releases release_reset."""
    raw = Raw(gym.make("LDPMAB-v0"))
    env = OneHotRelease(raw, epsilon=1.0, **seed_kw)
    assert env.observation_space == gym.spaces.Box(-np.inf, np.inf, (K,), np.float64)
    obs, info = env.reset(seed=0)
    assert np.array_equal(obs, np.zeros(K)) and info == {}
    mirror = LaplaceMechanism(1.0, dim=K, seed=_noise_key(key))
    for t in range(30):
        a = (3 * t) % K
        obs, reward, terminated, truncated, info = env.step(a)
        expected = mirror(np.eye(K)[a] * raw.raw[-1])
        assert np.array_equal(obs, expected) and reward == expected.sum()
        assert obs in env.observation_space and info == {} and not terminated and not truncated


def test_noise_is_reseeded_and_domain_separated_like_the_reward_wrappers():
    """Without seed=, reset(seed=s) replays the noise and another s changes it; the stream is the
    one a reward wrapper derives from s (NOISE_KEY), never the env's (the raw rewards are those
    of the bare env); with seed=, resets do not touch it."""

    def noises(env, seeds, n=20):
        raw, out = env.env, []
        for s in seeds:
            env.reset(seed=s)
            del raw.raw[:]
            out.append([env.step(t % K)[0] - np.eye(K)[t % K] * raw.raw[t] for t in range(n)])
        return np.array(out)

    env = OneHotRelease(Raw(gym.make("LDPMAB-v0")), epsilon=1.0)
    z = noises(env, [0, 0, 1])
    assert np.array_equal(z[0], z[1]) and not np.array_equal(z[0], z[2])
    fixed = OneHotRelease(Raw(gym.make("LDPMAB-v0")), epsilon=1.0, seed=3)
    f = noises(fixed, [0, 0])
    assert not np.array_equal(f[0], f[1])  # one stream across resets
    plain = gym.make("LDPMAB-v0")
    plain.reset(seed=0)
    env.reset(seed=0)
    del env.env.raw[:]
    for _ in range(20):
        env.step(0)
    assert env.env.raw == [plain.step(0)[1] for _ in range(20)]
    # the reward wrapper's stream from the same reset seed, under the same key
    lap = LaplaceReward(Raw(gym.make("LDPMAB-v0")), epsilon=1.0)
    lap.reset(seed=0)
    noisy = [lap.step(0)[1] for _ in range(10)]
    mirror = LaplaceMechanism(1.0, seed=_noise_key(0))
    assert noisy == [float(mirror(r)) for r in lap.env.raw]


def test_secure_mode():
    env = OneHotRelease(gym.make("LDPMAB-v0"), epsilon=1.0, secure=True)
    assert isinstance(env.mechanism.rng, M.SecureGenerator)
    env.reset(seed=3)  # the env is seeded, the secure noise is not reseeded
    assert isinstance(env.mechanism.rng, M.SecureGenerator)
    assert env.step(0)[0].shape == (K,)
    assert env.privacy == Privacy("local", 1.0, 0.0, "user", secure=True)
    with pytest.raises(TypeError, match="secure"):
        OneHotRelease(gym.make("LDPMAB-v0"), epsilon=1.0, seed=0, secure=True)
    venv = VectorOneHotRelease(_vec(), epsilon=1.0, secure=True)
    venv.reset(seed=3)
    assert isinstance(venv.mechanism.rng, M.SecureGenerator)


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
@pytest.mark.filterwarnings("ignore:.*infinity")  # Laplace releases are unbounded
@pytest.mark.parametrize("oracle_info", [False, True])
def test_check_env_info_privacy_and_recorded_args(oracle_info):
    env = OneHotRelease(gym.make("LDPMAB-v0"), epsilon=0.5, oracle_info=oracle_info)
    check_env(env, skip_render_check=True)
    kwargs = env.spec.additional_wrappers[-1].kwargs
    assert kwargs == {"epsilon": 0.5, "seed": None, "secure": False, "oracle_info": oracle_info}
    assert env.privacy == Privacy("local", 0.5, 0.0, "user")
    env.reset(seed=0)
    info = env.step(1)[4]
    assert set(info) >= set(INFO_KEYS) if oracle_info else info == {}


def test_subclass_must_record_its_arguments():
    class Forgetful(FeedbackWrapper):
        def make_mechanism(self, seed):
            return LaplaceMechanism(1.0, seed=seed)

    with pytest.raises(TypeError, match="RecordConstructorArgs"):
        Forgetful(gym.make("LDPMAB-v0"))
    with pytest.raises(TypeError, match="oracle_info"):
        OneHotRelease(gym.make("LDPMAB-v0"), epsilon=1.0, oracle_info="yes")


def test_vector_release_spaces_noise_and_autoreset():
    venv = VectorOneHotRelease(_vec(n=4, horizon=2), epsilon=1.0)
    assert venv.single_observation_space.shape == (K,)
    assert venv.observation_space.shape == (4, K)
    obs, info = venv.reset(seed=0)
    assert np.array_equal(obs, np.zeros((4, K))) and info == {}
    actions = np.array([0, 1, 2, 3])
    first = venv.step(actions)
    venv.reset(seed=0)
    again = venv.step(actions)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert first[0] in venv.observation_space and first[4] == {}
    assert len(set(first[0][:, 0])) == 4  # one independent draw per run
    assert not venv.autoreset.any()
    assert venv.step(actions)[3].all()  # horizon 2: every run truncates
    assert not venv.autoreset.any()
    venv.step(actions)
    assert venv.autoreset.all()  # the runs start afresh, their actions ignored
    venv.step(actions)
    assert not venv.autoreset.any()


def test_runner_steps_a_feedback_wrapper_round_by_round():
    """UCB1 on LDPMAB would get blocks of drawn rounds; under the release every round goes
    through its step, and the label is the wrapper's guarantee."""
    calls = []

    def spied(num_envs, max_episode_steps, **kw):
        venv = ldp_gym.make_vector_env("LDPMAB-v0", num_envs, max_episode_steps, **kw)
        for name in ("step", "draw_block", "draw_sums"):
            method = getattr(venv, name)
            setattr(venv, name, lambda *a, _m=method, _n=name, **k: calls.append(_n) or _m(*a, **k))
        return venv

    ldp_gym.run(spied, {"UCB1": UCB1}, horizon=50, n_runs=3, seed=0, progress=False)
    assert calls and "step" not in calls  # the block path, without the wrapper
    del calls[:]
    res = ldp_gym.run(spied, {"UCB1": UCB1}, horizon=50, n_runs=3, seed=0, progress=False,
                      wrappers=[(VectorOneHotRelease, {"epsilon": 1.0})])
    assert calls == ["step"] * 50
    assert res.meta["privacy"]["UCB1"] == \
        "local DP, epsilon=1 per user (context, action and reward) via VectorOneHotRelease"
    secure = ldp_gym.run("LDPMAB-v0", {"UCB1": UCB1}, horizon=20, n_runs=2, progress=False,
                         wrappers=[(VectorOneHotRelease, {"epsilon": 1.0})], secure=True)
    assert secure.meta["privacy"]["UCB1"].endswith("secure noise via VectorOneHotRelease")


@pytest.mark.parametrize("module", ["ldp_gym.wrappers.feedback", "ldp_gym.wrappers.reward"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
