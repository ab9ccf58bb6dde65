"""Reward-privatising wrappers: the one-point black-box reduction (Zheng et al. 2020, Alg 1).

The user's reward is privatised before any learner sees it, so any agent
(third-party ones included) running on the wrapped env is private: everything
it can see (observation and reward) is post-processing of mechanism output
and of the observation. What is protected is the reward: the observation of a
MAB env is constant, but the contexts of a contextual env are passed through
unprivatised (use an LDP contextual agent to protect them).

``step`` and ``reset`` hand out an empty ``info``: the env's ``info`` is
computed from the private data (e.g. ``expected_reward`` is the raw reward of
an adversarial table, the noise-free mean of a linear bandit), as is anything
a wrapper below adds to it. ``oracle_info=True`` passes it through, for
evaluation only: it breaks the guarantee for whoever reads ``info``. The runner
needs no ``info``: it reads regret from the unwrapped env.

* :class:`LaplaceReward` / :class:`VectorLaplaceReward`: float-safe Laplace,
  epsilon-LDP per reward.
* :class:`GaussianReward` / :class:`VectorGaussianReward`: float-safe Gaussian,
  (epsilon, delta)-LDP per reward; ``calibration='classic'`` is Zheng et
  al.'s ``sigma = 2B sqrt(2 ln(1.25/delta))/epsilon`` for ``|f| <= B``
  (refused for epsilon >= 1), ``'analytic'`` (default) holds for any epsilon.

Rewards are clipped to the declared ``[lower, upper]`` first. Noise comes from
the wrapper's own stream: from ``seed`` if given, else from the reset seed, in
both cases under a spawn key of its own (never the env's stream, even for the
same integer); or, with ``secure=True``, from the OS CSPRNG (no seed accepted).
Seeded noise is for simulation: whoever knows the seed knows the noise.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=1.0)
    >>> obs, info = env.reset(seed=0)
    >>> _, reward, _, _, info = env.step(0)
    >>> isinstance(reward, float), info
    (True, {})
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs
from gymnasium.vector import VectorRewardWrapper

from .mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    check_bool,
    check_input,
    make_rng,
)
from .privacy import Privacy

__all__ = ["GaussianReward", "LaplaceReward", "VectorGaussianReward", "VectorLaplaceReward"]

#: Spawn key under which a wrapper derives its noise stream from the reset seed.
NOISE_KEY = 0x4C4450  # "LDP"


class _NoiseStream:
    """The wrapper's noise stream: from ``seed`` if given, else reseeded on every
    ``reset(seed=...)``, always under the wrapper's own spawn key (``NOISE_KEY``) so that it
    never replays the env's numbers; or the OS CSPRNG in secure mode (no seed accepted)."""

    mechanism: Mechanism
    secure: bool = False

    def _init_noise(self, seed: Any, secure: Any) -> None:
        make_rng(seed, secure=secure)  # validates seed and secure (secure refuses seeds)
        self.secure = bool(secure)
        self._fixed_seed = seed is not None or self.secure
        self.mechanism = self._make(self._key(seed))

    @staticmethod
    def _key(seed: Any) -> Any:
        if isinstance(seed, (int, np.integer)):
            return np.random.SeedSequence(int(seed), spawn_key=(NOISE_KEY,))
        return seed

    def _reseed(self, seed: int | None) -> None:
        if seed is not None and not self._fixed_seed:
            self.mechanism = self._make(self._key(seed))

    def _make(self, seed: Any) -> Mechanism:
        raise NotImplementedError

    @property
    def privacy(self) -> Privacy:
        """The guarantee: local DP per reward (epsilon, delta of the mechanism)."""
        eps, delta = self.mechanism.privacy
        return Privacy("local", eps, delta, "reward", secure=self.secure)


class _Laplace(_NoiseStream):
    def _setup(self, epsilon, lower, upper, seed, secure):
        self._params = (epsilon, lower, upper)
        self._init_noise(seed, secure)

    def _make(self, seed):
        return LaplaceMechanism(*self._params, seed=seed, secure=self.secure)


class _Gaussian(_NoiseStream):
    def _setup(self, epsilon, delta, lower, upper, calibration, seed, secure):
        self._params = (epsilon, delta, lower, upper, calibration)
        self._init_noise(seed, secure)

    def _make(self, seed):
        eps, delta, lower, upper, calibration = self._params
        return GaussianMechanism(eps, delta, lower=lower, upper=upper, calibration=calibration,
                                 seed=seed, secure=self.secure)


class _Release:
    """``reset`` and ``step`` of every privacy wrapper: the noise stream is reseeded, and
    ``info`` (computed from the private data) is kept out of the release unless ``oracle_info``
    opts in."""

    oracle_info: bool = False
    needs_round_by_round = True  # the runner's block path would bypass step (ldp_gym.protocols)

    def _set_oracle_info(self, oracle_info: Any) -> None:
        self.oracle_info = check_bool("oracle_info", oracle_info)

    def _release_info(self, info: dict) -> dict:
        return info if self.oracle_info else {}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._reseed(seed)
        obs, info = super().reset(seed=seed, options=options)
        return obs, self._release_info(info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, self._release_info(info)


class _SingleReward(_Release, gym.RewardWrapper, RecordConstructorArgs):
    def reward(self, reward: Any) -> float:
        return float(self.mechanism(check_input(reward, "reward")))


class _VectorReward(_Release, VectorRewardWrapper, RecordConstructorArgs):
    def rewards(self, rewards: Any) -> np.ndarray:
        return self.mechanism(check_input(rewards, "rewards"))


_ARGS_DOC = """
    Args:
        env: the env whose rewards are privatised.
        epsilon, delta: the guarantee per reward (delta for the Gaussian only).
        lower, upper: declared reward bounds; rewards are clipped to them first.
        calibration: ``'analytic'`` (any epsilon) or ``'classic'`` (epsilon < 1; Gaussian only).
        seed: the noise stream's seed (else derived from each ``reset(seed=...)``), always
            under the wrapper's own spawn key. Seeded noise is for simulation: whoever knows
            the seed knows the noise, and the same seed replays it.
        secure: draw the noise from the OS CSPRNG (deployment); refuses ``seed``.
        oracle_info: pass the env's ``info`` through (evaluation only: it is computed from
            the private data and breaks the guarantee for whoever reads it); default ``{}``.
"""


class LaplaceReward(_Laplace, _SingleReward):
    __doc__ = "Reward + float-safe Laplace noise: epsilon-LDP per reward in ``[lower, upper]``.\n" \
        + _ARGS_DOC

    def __init__(self, env: gym.Env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed,
                                       secure=secure, oracle_info=oracle_info)
        gym.RewardWrapper.__init__(self, env)
        self._setup(epsilon, lower, upper, seed, secure)
        self._set_oracle_info(oracle_info)


class GaussianReward(_Gaussian, _SingleReward):
    __doc__ = "Reward + float-safe Gaussian noise: (epsilon, delta)-LDP per reward in " \
        "``[lower, upper]``.\n" + _ARGS_DOC

    def __init__(self, env: gym.Env, epsilon: float, delta: float, lower: float = 0.0,
                 upper: float = 1.0, calibration: str = "analytic", seed: Any = None, *,
                 secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        gym.RewardWrapper.__init__(self, env)
        self._setup(epsilon, delta, lower, upper, calibration, seed, secure)
        self._set_oracle_info(oracle_info)


class VectorLaplaceReward(_Laplace, _VectorReward):
    __doc__ = "Vector-env version of :class:`LaplaceReward` (one independent draw per run).\n" \
        + _ARGS_DOC

    def __init__(self, env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed,
                                       secure=secure, oracle_info=oracle_info)
        VectorRewardWrapper.__init__(self, env)
        self._setup(epsilon, lower, upper, seed, secure)
        self._set_oracle_info(oracle_info)


class VectorGaussianReward(_Gaussian, _VectorReward):
    __doc__ = "Vector-env version of :class:`GaussianReward` (one independent draw per run).\n" \
        + _ARGS_DOC

    def __init__(self, env, epsilon: float, delta: float, lower: float = 0.0, upper: float = 1.0,
                 calibration: str = "analytic", seed: Any = None, *, secure: bool = False,
                 oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        VectorRewardWrapper.__init__(self, env)
        self._setup(epsilon, delta, lower, upper, calibration, seed, secure)
        self._set_oracle_info(oracle_info)
