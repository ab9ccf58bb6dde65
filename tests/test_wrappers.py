"""Reward wrappers: independent noise streams (R6/R7), RecordConstructorArgs, vector versions, no
oracle info in the release."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ldp_gym
from ldp_gym.envs.base import INFO_KEYS
from ldp_gym.wrappers.bco import TwoPointGaussian, VectorTwoPointGaussian
from ldp_gym.wrappers.mechanisms.privacy import Privacy
from ldp_gym.wrappers.reward import GaussianReward, LaplaceReward, VectorGaussianReward, VectorLaplaceReward
from ldp_gym.wrappers.semibandit import LaplaceSemiBandit, VectorLaplaceSemiBandit

#: Every key of the oracle info, with the masks of the vector envs.
ORACLE_KEYS = set(INFO_KEYS) | {f"_{k}" for k in INFO_KEYS}
SINGLE = [(LaplaceReward, {"epsilon": 1.0}), (GaussianReward, {"epsilon": 1.0, "delta": 1e-5})]
VECTOR = [(VectorLaplaceReward, {"epsilon": 1.0}),
          (VectorGaussianReward, {"epsilon": 1.0, "delta": 1e-5})]


class RawReward(gym.Wrapper):
    """Test helper below the privacy wrapper: records the raw rewards."""

    def __init__(self, env):
        super().__init__(env)
        self.raw = []

    def step(self, action):
        out = self.env.step(action)
        self.raw.append(out[1])
        return out


def rollout(noise_seed, env_seed=0, n=50):
    raw = RawReward(gym.make("LDPMAB-v0"))
    env = LaplaceReward(raw, epsilon=1.0, seed=noise_seed)
    env.reset(seed=env_seed)
    noisy = [env.step(i % 5)[1] for i in range(n)]
    return raw.raw, noisy


def test_changing_mechanism_seed_leaves_env_unchanged():
    raw1, noisy1 = rollout(1)
    raw2, noisy2 = rollout(2)
    assert raw1 == raw2 and noisy1 != noisy2


def test_noise_stream_is_not_the_env_stream():
    """Without an explicit seed, the noise is spawned from the reset seed under its own key: the
    noise is not a replay of the env's numbers, and the env's rewards are unaffected."""
    raw = RawReward(gym.make("LDPMAB-v0"))
    env = LaplaceReward(raw, epsilon=1.0)
    env.reset(seed=0)
    noisy = np.array([env.step(0)[1] for _ in range(200)])
    plain = gym.make("LDPMAB-v0")
    plain.reset(seed=0)
    assert raw.raw == [plain.step(0)[1] for _ in range(200)]
    u = np.random.default_rng(0).random(200)  # what the env's own generator draws
    assert abs(np.corrcoef(noisy - np.array(raw.raw), u)[0, 1]) < 0.35


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
@pytest.mark.parametrize("wrapper,kw", [(LaplaceReward, {"epsilon": 1.0}),
                                        (GaussianReward, {"epsilon": 1.0, "delta": 1e-5})])
def test_single_wrappers_pass_check_env_and_record_args(wrapper, kw):
    env = wrapper(gym.make("LDPMAB-v0"), **kw)
    check_env(env, skip_render_check=True)
    assert env.spec.additional_wrappers[-1].kwargs["epsilon"] == 1.0
    assert env.spec.additional_wrappers[-1].kwargs["oracle_info"] is False
    assert env.privacy == Privacy("local", 1.0, kw.get("delta", 0.0), "reward")
    oracle = wrapper(gym.make("LDPMAB-v0"), **kw, oracle_info=True)
    check_env(oracle, skip_render_check=True)
    assert gym.make(oracle.spec).oracle_info is True  # the opt-in is recorded in the spec


def _wrapped_rollout(wrapper, kw, env_id, pull, **extra):
    """The infos of reset and of 6 steps of a wrapped env of horizon 5 (the vector env's sixth
    step is an autoreset step)."""
    if issubclass(wrapper, gym.vector.VectorWrapper):
        env = wrapper(gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point",
                                   max_episode_steps=5), **kw, **extra)
        steps = 6
    else:
        env = wrapper(gym.make(env_id, max_episode_steps=5), **kw, **extra)
        steps = 5
    env.action_space.seed(0)
    infos = [env.reset(seed=0)[1]]
    infos += [env.step(pull(env_id, env.action_space))[4] for _ in range(steps)]
    return infos


@pytest.mark.parametrize("env_id", list(ldp_gym.ENV_SPECS))
@pytest.mark.parametrize("wrapper,kw", [pytest.param(w, kw, id=w.__name__) for w, kw in SINGLE + VECTOR])
def test_privacy_wrappers_release_no_oracle_info(wrapper, kw, env_id, pull):
    """reset and step hand out nothing computed from the private data outside the release: no
    oracle key (nor its mask) in info, unless oracle_info=True opts in for evaluation. A reward
    wrapper refuses an env whose observation is private feedback (multi-point BCO losses,
    semi-bandit outcomes): the setting's own release is checked instead."""
    own = {"MultiPoint": (VectorTwoPointGaussian, TwoPointGaussian, {"delta": 1e-5}),
           "Combinatorial": (VectorLaplaceSemiBandit, LaplaceSemiBandit, {})}
    for key, (vector, single, extra) in own.items():
        if key in env_id:
            with pytest.raises(ValueError, match="observation carries private feedback"):
                _wrapped_rollout(wrapper, kw, env_id, pull)
            wrapper = vector if "Vector" in wrapper.__name__ else single
            kw = {"epsilon": 1.0, **extra}
    for info in _wrapped_rollout(wrapper, kw, env_id, pull):
        assert info == {} and not set(info) & ORACLE_KEYS
    oracle = _wrapped_rollout(wrapper, kw, env_id, pull, oracle_info=True)
    no_best_arm = "BCO" in env_id or "Combinatorial" in env_id  # actions are arrays there
    keys = set(INFO_KEYS) - ({"optimal_action"} if no_best_arm else set())
    assert all(set(info) >= keys for info in oracle[1:])


def test_adversarial_table_reward_stays_out_of_info():
    """The audit's example: on a reward table, info["expected_reward"] is the raw reward."""
    table = np.random.default_rng(0).random((20, 3))
    env = LaplaceReward(gym.make("LDPAdversarialMAB-v0", reward_table=table), epsilon=1.0)
    oracle = LaplaceReward(gym.make("LDPAdversarialMAB-v0", reward_table=table), epsilon=1.0,
                           oracle_info=True)
    env.reset(seed=0)
    oracle.reset(seed=0)
    for t in range(20):
        assert env.step(t % 3)[4] == {}
        assert oracle.step(t % 3)[4]["expected_reward"] == table[t, t % 3]


@pytest.mark.parametrize("wrapper,kw", [(VectorLaplaceReward, {"epsilon": 1.0}),
                                        (VectorGaussianReward, {"epsilon": 2.0, "delta": 1e-6})])
def test_vector_wrappers(wrapper, kw):
    venv = wrapper(gym.make_vec("LDPMAB-v0", num_envs=6, vectorization_mode="vector_entry_point"), **kw)
    venv.reset(seed=0)
    _, r1, *_ = venv.step(np.zeros(6, int))
    venv.reset(seed=0)
    _, r2, *_ = venv.step(np.zeros(6, int))
    assert r1.shape == (6,) and np.array_equal(r1, r2) and len(set(r1)) == 6
    assert not hasattr(venv, "step_committed")  # sums of noisy rewards have no shortcut


def test_wrappers_validate():
    with pytest.raises(ValueError, match="epsilon"):
        LaplaceReward(gym.make("LDPMAB-v0"), epsilon=0.0)
    with pytest.raises(ValueError, match="epsilon < 1"):
        GaussianReward(gym.make("LDPMAB-v0"), epsilon=2.0, delta=1e-5, calibration="classic")
    with pytest.raises(ValueError, match="delta"):
        GaussianReward(gym.make("LDPMAB-v0"), epsilon=0.5, delta=0.0)
    with pytest.raises(TypeError, match="oracle_info"):
        LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0, oracle_info="yes")
