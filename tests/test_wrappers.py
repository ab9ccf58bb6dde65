"""Reward wrappers: independent noise streams (R6/R7), RecordConstructorArgs, vector versions."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ldp_gym  # noqa: F401
from ldp_gym.wrappers.reward import GaussianReward, LaplaceReward, VectorGaussianReward, VectorLaplaceReward


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
    assert env.privacy[0] == 1.0


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
