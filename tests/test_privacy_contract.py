"""The privacy label contract: every registered id x every privacy wrapper.

A privacy wrapper on a setting either refuses it (one line, naming what to use instead) or
everything the learner sees through it (observation, reward, info) depends on the private data
only through the release. The check of the second case: at epsilon = 1e-3 the release is
almost pure noise, so no coordinate of the learner's view of a round may correlate with the
round's raw reward (read beneath the wrapper), the action being fixed (it is public and the
raw reward depends on it). Over n = 3,200 rounds an independent coordinate
has |corr| about N(0, 1/n) (sd 0.018); the threshold 0.15 is 8 sd, a false-alarm rate below
1e-14 per coordinate (a few thousand coordinates in all), while a passed-through observation
that determines the reward (the semi-bandit outcomes) correlates above 0.4.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import VectorWrapper

import ldp_gym
from ldp_gym.wrappers import (
    GaussianReward,
    LaplaceReward,
    LaplaceSemiBandit,
    TwoPointGaussian,
    VectorGaussianReward,
    VectorLaplaceReward,
    VectorLaplaceSemiBandit,
    VectorTwoPointGaussian,
    one_point,
)

EPS = 1e-3
THRESHOLD = 0.15
N_RUNS, STEPS = 64, 50  # 3,200 rounds

WRAPPERS = {
    "LaplaceReward": (LaplaceReward, VectorLaplaceReward, {}),
    "GaussianReward": (GaussianReward, VectorGaussianReward, {"delta": 1e-5}),
    "one_point": (one_point, one_point, {"delta": 1e-5}),
    "TwoPointGaussian": (TwoPointGaussian, VectorTwoPointGaussian, {"delta": 1e-5}),
    "LaplaceSemiBandit": (LaplaceSemiBandit, VectorLaplaceSemiBandit, {}),
}


class _Raw(gym.Wrapper):
    """Keeps the raw reward of every step, beneath the privacy wrapper."""

    def step(self, action):
        out = super().step(action)
        self.raw = float(out[1])
        return out


class _VectorRaw(VectorWrapper):
    def step(self, actions):
        out = super().step(actions)
        self.raw = np.asarray(out[1], np.float64).copy()
        return out


def _numbers(info: dict, n: int) -> list[np.ndarray]:
    """The numeric values of ``info`` as (n,) columns."""
    cols = []
    for value in info.values():
        a = np.asarray(value)
        if a.dtype.kind in "biuf" and a.size:
            cols.extend(np.broadcast_to(a.reshape(n, -1) if a.size % n == 0 else a.ravel()[None],
                                        (n, max(a.size // n, 1))).T.astype(np.float64))
    return cols


def _worst_correlation(raw: np.ndarray, view: np.ndarray) -> float:
    view = view[:, view.std(axis=0) > 0]
    if raw.std() == 0 or not view.shape[1]:
        return 0.0
    c = (view - view.mean(0)).T @ (raw - raw.mean()) / len(raw)
    return float(np.max(np.abs(c / (view.std(0) * raw.std()))))


def _refused_or_independent(build, env, vector: bool) -> None:
    try:
        wrapped = build(env)
    except ValueError as exc:  # refused: one line naming the argument
        assert "\n" not in str(exc) and str(exc)
        return
    space = wrapped.single_action_space if vector else wrapped.action_space
    space.seed(1)
    action = space.sample()  # the same every round and run: the view may show the (public)
    if vector:  # action, on which the raw reward depends
        action = np.stack([action] * N_RUNS)
    wrapped.reset(seed=3)
    raws, views = [], []
    for _ in range(STEPS if vector else STEPS * N_RUNS):
        obs, reward, _, truncated, info = wrapped.step(action)
        n = N_RUNS if vector else 1
        cols = [np.asarray(obs, np.float64).reshape(n, -1),
                np.asarray(reward, np.float64).reshape(n, 1)]
        cols += [c[:, None] for c in _numbers(info, n)]
        views.append(np.concatenate(cols, axis=1))
        raws.append(np.atleast_1d(env.raw))
        assert not np.any(truncated)
    corr = _worst_correlation(np.concatenate(raws), np.concatenate(views))
    assert corr < THRESHOLD, f"the learner's view correlates {corr:.2f} with the raw reward"


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
@pytest.mark.parametrize("env_id", list(ldp_gym.ENV_SPECS))
def test_a_privacy_wrapper_refuses_a_setting_or_releases_everything_the_learner_sees(
        env_id, wrapper):
    if env_id == "LDPClassificationBandit-v0":
        pytest.importorskip("sklearn")
    single, vector, kwargs = WRAPPERS[wrapper]
    env = _Raw(gym.make(env_id, max_episode_steps=STEPS * N_RUNS + 1))
    _refused_or_independent(lambda e: single(e, epsilon=EPS, seed=0, **kwargs), env, False)
    venv = _VectorRaw(gym.make_vec(env_id, num_envs=N_RUNS, vectorization_mode="vector_entry_point",
                                   max_episode_steps=STEPS + 1))
    _refused_or_independent(lambda e: vector(e, epsilon=EPS, seed=0, **kwargs), venv, True)


def test_the_contract_check_flags_a_passed_through_private_observation(monkeypatch):
    """The mutant: the combinatorial setting's declaration removed, the reward wrapper
    accepts it and the check sees the outcomes through the observation."""
    from ldp_gym.envs.combinatorial import CombinatorialCore

    monkeypatch.setattr(CombinatorialCore, "private_observation", False)
    env = _Raw(gym.make("LDPCombinatorialBandit-v0", max_episode_steps=STEPS * N_RUNS + 1))
    with pytest.raises(AssertionError, match="correlates"):
        _refused_or_independent(lambda e: LaplaceReward(e, epsilon=EPS, seed=0, upper=4.0), env,
                                False)
