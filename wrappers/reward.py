"""Reward-privatising wrappers: the one-point black-box reduction (Zheng et al. 2020, Alg 1).

The user's reward is privatised before any learner sees it, so any agent
(third-party ones included) running on the wrapped env is private: everything
it can see (observation and reward) is post-processing of mechanism output
(the observation of a MAB env is constant).

* :class:`LaplaceReward` / :class:`VectorLaplaceReward`: float-safe Laplace,
  epsilon-LDP per reward.
* :class:`GaussianReward` / :class:`VectorGaussianReward`: Gaussian,
  (epsilon, delta)-LDP per reward; ``calibration='classic'`` is Zheng et
  al.'s ``sigma = 2B sqrt(2 ln(1.25/delta))/epsilon`` for ``|f| <= B``
  (refused for epsilon >= 1), ``'analytic'`` (default) holds for any epsilon.

Rewards are clipped to the declared ``[lower, upper]`` first. Noise comes from
the wrapper's own stream: from ``seed`` if given, else spawned from the reset
seed under a key of its own (never the env's stream).

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0)
    >>> obs, info = env.reset(seed=0)
    >>> _, reward, *_ = env.step(0)
    >>> isinstance(reward, float)
    True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs
from gymnasium.vector import VectorRewardWrapper

from .mechanisms import GaussianMechanism, LaplaceMechanism, Mechanism

__all__ = ["GaussianReward", "LaplaceReward", "VectorGaussianReward", "VectorLaplaceReward"]

#: Spawn key under which a wrapper derives its noise stream from the reset seed.
NOISE_KEY = 0x4C4450  # "LDP"


class _NoiseStream:
    """Reseeds the wrapper's mechanism on ``reset(seed=...)`` from a stream of its own."""

    mechanism: Mechanism

    def _init_noise(self, seed: Any) -> None:
        self._fixed_seed = seed is not None
        self.mechanism = self._make(seed)

    def _reseed(self, seed: int | None) -> None:
        if seed is not None and not self._fixed_seed:
            self.mechanism = self._make(np.random.SeedSequence(seed, spawn_key=(NOISE_KEY,)))

    def _make(self, seed: Any) -> Mechanism:
        raise NotImplementedError

    @property
    def privacy(self) -> tuple[float, float]:
        return self.mechanism.privacy


class _Laplace(_NoiseStream):
    def _setup(self, epsilon, lower, upper, seed):
        self._params = (epsilon, lower, upper)
        self._init_noise(seed)

    def _make(self, seed):
        return LaplaceMechanism(*self._params, seed=seed)


class _Gaussian(_NoiseStream):
    def _setup(self, epsilon, delta, lower, upper, calibration, seed):
        self._params = (epsilon, delta, lower, upper, calibration)
        self._init_noise(seed)

    def _make(self, seed):
        eps, delta, lower, upper, calibration = self._params
        return GaussianMechanism(eps, delta, lower=lower, upper=upper, calibration=calibration,
                                 seed=seed)


class _SingleReward(gym.RewardWrapper, RecordConstructorArgs):
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._reseed(seed)
        return super().reset(seed=seed, options=options)

    def reward(self, reward: Any) -> float:
        return float(self.mechanism(np.asarray(reward, dtype=np.float64)))


class _VectorReward(VectorRewardWrapper, RecordConstructorArgs):
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._reseed(seed)
        return super().reset(seed=seed, options=options)

    def rewards(self, rewards: Any) -> np.ndarray:
        return self.mechanism(np.asarray(rewards, dtype=np.float64))


class LaplaceReward(_Laplace, _SingleReward):
    """Reward + float-safe Laplace noise: epsilon-LDP per reward in ``[lower, upper]``."""

    def __init__(self, env: gym.Env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed)
        gym.RewardWrapper.__init__(self, env)
        self._setup(epsilon, lower, upper, seed)


class GaussianReward(_Gaussian, _SingleReward):
    """Reward + Gaussian noise: (epsilon, delta)-LDP per reward in ``[lower, upper]``."""

    def __init__(self, env: gym.Env, epsilon: float, delta: float, lower: float = 0.0,
                 upper: float = 1.0, calibration: str = "analytic", seed: Any = None):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed)
        gym.RewardWrapper.__init__(self, env)
        self._setup(epsilon, delta, lower, upper, calibration, seed)


class VectorLaplaceReward(_Laplace, _VectorReward):
    """Vector-env version of :class:`LaplaceReward` (one independent draw per run)."""

    def __init__(self, env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed)
        VectorRewardWrapper.__init__(self, env)
        self._setup(epsilon, lower, upper, seed)


class VectorGaussianReward(_Gaussian, _VectorReward):
    """Vector-env version of :class:`GaussianReward` (one independent draw per run)."""

    def __init__(self, env, epsilon: float, delta: float, lower: float = 0.0, upper: float = 1.0,
                 calibration: str = "analytic", seed: Any = None):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed)
        VectorRewardWrapper.__init__(self, env)
        self._setup(epsilon, delta, lower, upper, calibration, seed)
