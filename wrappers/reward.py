"""Reward-privatising wrappers: the one-point black-box reduction (Zheng et al. 2020, Alg 1).

The user's reward is privatised before any learner sees it. So any agent
running on the wrapped env is private, third-party ones included: everything
it can see, observation and reward, is post-processing of mechanism output
and of the observation. What is protected is the reward. The observation of a
MAB env is constant, but the contexts of a contextual env are passed through
unprivatised. Use an LDP contextual agent to protect them.

``step`` and ``reset`` hand out an empty ``info``. The env's ``info`` is
computed from the private data, as is anything a wrapper below adds to it.
For example, ``expected_reward`` is the raw reward of an adversarial table,
or the noise-free mean of a linear bandit. ``oracle_info=True`` passes it through, for
evaluation only: it breaks the guarantee for whoever reads ``info``. The runner
needs no ``info``: it reads regret from the unwrapped env.

They are releases of :class:`~ldp_gym.wrappers.feedback.FeedbackWrapper` /
:class:`~ldp_gym.wrappers.feedback.VectorFeedbackWrapper` that noise the
reward and pass the observation through. They share the policies of these
bases: the noise stream, ``info``, ``needs_round_by_round``, the spec and ``privacy``.

* :class:`LaplaceReward` / :class:`VectorLaplaceReward`: float-safe Laplace,
  epsilon-LDP per reward.
* :class:`GaussianReward` / :class:`VectorGaussianReward`: float-safe Gaussian,
  (epsilon, delta)-LDP per reward. ``calibration='classic'`` is Zheng et
  al.'s ``sigma = 2B sqrt(2 ln(1.25/delta))/epsilon`` for ``|f| <= B``,
  refused for epsilon >= 1. ``'analytic'``, the default, holds for any epsilon.

Rewards are clipped to the declared ``[lower, upper]`` first. Settings whose
observation is itself private feedback (``private_observation``) are refused,
since a reward wrapper would pass it through. Such observations are the losses
of multi-point bandit convex optimisation and the outcomes of a combinatorial
semi-bandit's super arm. Noise comes from the wrapper's own stream: from
``seed`` if given, else from the reset seed. In both cases it is drawn under a
spawn key of its own, so it is never the env's stream, even for the same
integer. With ``secure=True`` it comes from the OS CSPRNG instead, and no seed
is accepted. Seeded noise is for simulation: whoever knows the seed knows the noise.

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

from ldp_gym.validation import check_input

from .feedback import NOISE_KEY, STREAM_ARGS_DOC, FeedbackWrapper, VectorFeedbackWrapper
from .mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = ["GaussianReward", "LaplaceReward", "VectorGaussianReward", "VectorLaplaceReward"]
__all__ += ["NOISE_KEY"]  # re-exported from .feedback, where the noise stream lives


class _Laplace:
    def make_mechanism(self, seed):
        return LaplaceMechanism(*self._params, seed=seed, secure=self.secure)


class _Gaussian:
    def make_mechanism(self, seed):
        eps, delta, lower, upper, calibration = self._params
        return GaussianMechanism(eps, delta, lower=lower, upper=upper, calibration=calibration,
                                 seed=seed, secure=self.secure)


class _SingleReward(FeedbackWrapper, gym.RewardWrapper):
    """A release that noises the reward and passes the observation through."""

    passes_observation = True

    mechanism: LaplaceMechanism | GaussianMechanism

    def release(self, action: Any, observation: Any, reward: Any) -> tuple[Any, float]:
        return observation, self.reward(reward)

    def reward(self, reward: Any) -> float:
        return float(self.mechanism(check_input(reward, "reward")))


class _VectorReward(VectorFeedbackWrapper, VectorRewardWrapper):
    """A release that noises the rewards and passes the observations through."""

    passes_observation = True

    mechanism: LaplaceMechanism | GaussianMechanism

    def release(self, actions: Any, observations: Any, rewards: Any) -> tuple[Any, np.ndarray]:
        return observations, self.rewards(rewards)

    def rewards(self, rewards: Any) -> np.ndarray:
        return self.mechanism(check_input(rewards, "rewards"))


_ARGS_DOC = """
    Protected: the reward, clipped to ``[lower, upper]`` and then noised by the mechanism;
    the observation is passed through as it is.

    Args:
        env: the env whose rewards are privatised.
        epsilon, delta: the guarantee per reward; delta for the Gaussian only.
        lower, upper: declared reward bounds; rewards are clipped to them first.
        calibration: ``'analytic'``, for any epsilon, or ``'classic'``, for epsilon < 1.
            For the Gaussian only.
""" + STREAM_ARGS_DOC


class LaplaceReward(_Laplace, _SingleReward):
    __doc__ = "Reward + float-safe Laplace noise: epsilon-LDP per reward in ``[lower, upper]``.\n" \
        + _ARGS_DOC + """
    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> env = LaplaceReward(gym.make("LDPMAB-v0"), epsilon=0.5, seed=1)
        >>> _ = env.reset(seed=0)
        >>> print(env.privacy)
        local DP, epsilon=0.5 per reward
        >>> isinstance(env.step(0)[1], float)
        True
"""

    def __init__(self, env: gym.Env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed,
                                       secure=secure, oracle_info=oracle_info)
        self._params = (epsilon, lower, upper)
        FeedbackWrapper.__init__(self, env, seed=seed, secure=secure, oracle_info=oracle_info)


class GaussianReward(_Gaussian, _SingleReward):
    __doc__ = "Reward + float-safe Gaussian noise: (epsilon, delta)-LDP per reward in " \
        "``[lower, upper]``.\n" + _ARGS_DOC + """
    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> env = GaussianReward(gym.make("LDPMAB-v0"), epsilon=1.0, delta=1e-5)
        >>> _ = env.reset(seed=0)
        >>> print(env.privacy)
        local DP, epsilon=1, delta=1e-05 per reward
        >>> env.step(0)[4]  # no oracle info in the release
        {}
"""

    def __init__(self, env: gym.Env, epsilon: float, delta: float, lower: float = 0.0,
                 upper: float = 1.0, calibration: str = "analytic", seed: Any = None, *,
                 secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        self._params = (epsilon, delta, lower, upper, calibration)
        FeedbackWrapper.__init__(self, env, seed=seed, secure=secure, oracle_info=oracle_info)


class VectorLaplaceReward(_Laplace, _VectorReward):
    __doc__ = "Vector-env version of :class:`LaplaceReward`, with one independent draw per run.\n" \
        + _ARGS_DOC + """
    Example:
        >>> import numpy as np
        >>> import ldp_gym
        >>> venv = VectorLaplaceReward(ldp_gym.make_vector_env("LDPMAB-v0", 4, 100), epsilon=1.0)
        >>> _ = venv.reset(seed=0)
        >>> venv.step(np.zeros(4, int))[1].shape
        (4,)
"""

    def __init__(self, env, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, lower=lower, upper=upper, seed=seed,
                                       secure=secure, oracle_info=oracle_info)
        self._params = (epsilon, lower, upper)
        VectorFeedbackWrapper.__init__(self, env, seed=seed, secure=secure,
                                       oracle_info=oracle_info)


class VectorGaussianReward(_Gaussian, _VectorReward):
    __doc__ = "Vector-env version of :class:`GaussianReward`, with one independent draw per run.\n" \
        + _ARGS_DOC + """
    Example:
        >>> import numpy as np
        >>> import ldp_gym
        >>> venv = VectorGaussianReward(ldp_gym.make_vector_env("LDPMAB-v0", 4, 100),
        ...                             epsilon=1.0, delta=1e-5)
        >>> _ = venv.reset(seed=0)
        >>> rewards = venv.step(np.zeros(4, int))[1]
        >>> _ = venv.reset(seed=0)  # no seed given: the reset seed reseeds the noise
        >>> bool((venv.step(np.zeros(4, int))[1] == rewards).all())
        True
"""

    def __init__(self, env, epsilon: float, delta: float, lower: float = 0.0, upper: float = 1.0,
                 calibration: str = "analytic", seed: Any = None, *, secure: bool = False,
                 oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, lower=lower, upper=upper,
                                       calibration=calibration, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
        self._params = (epsilon, delta, lower, upper, calibration)
        VectorFeedbackWrapper.__init__(self, env, seed=seed, secure=secure,
                                       oracle_info=oracle_info)
