"""The releases of bandit convex optimisation under LDP (Zheng et al. 2020, Alg 1 and Alg 2).

Zheng, Cai, Huang, Li and Wang (NeurIPS 2020), section 3, turn any
non-private bandit convex optimisation algorithm into an LDP one by
privatising, on the user's side, what one round reveals:

* **one-point feedback** (Alg 1): the loss ``f_t(x_t)``, clipped to
  ``[-B, B]``, plus ``N(0, sigma^2)`` with
  ``sigma = 2B sqrt(2 ln(1.25/delta)) / epsilon``. That is the Gaussian reward
  wrapper on the reward ``-f_t(x_t)``; :func:`one_point` builds it for an env
  of :mod:`ldp_gym.envs.bco` with the env's declared B (classic calibration for
  epsilon < 1, where it holds, analytic otherwise);
* **two-point feedback** (Alg 2): only
  ``D = f_t(x_1) - f_t(x_2) + n^T (x_1 - x_2)``, ``n ~ N(0, sigma^2 I_d)``,
  ``sigma = 2G sqrt(2 ln(1.25/delta)) / epsilon``, after clipping the
  difference to ``[-G ||x_1 - x_2||, G ||x_1 - x_2||]``
  (:class:`TwoPointGaussian`, :class:`VectorTwoPointGaussian`).

Neighbouring users hold two loss functions that are G-Lipschitz on X; their
differences at the same two points differ by at most ``2G ||x_1 - x_2||``,
and ``n^T (x_1 - x_2)`` is ``N(0, sigma^2 ||x_1 - x_2||^2)``. The wrapper
releases ``D = ||x_1 - x_2|| M(diff / ||x_1 - x_2||)`` with ``M`` the
float-safe Gaussian mechanism on ``[-G, G]`` (sensitivity 2G): the same law,
every float output a multiple of one grid, and the scaling by the public
``||x_1 - x_2||`` is post-processing. The points are the ones the env plays
(the action projected radially on X, as the env does); the action is public.

The unit protected is one round's loss function, as in Zheng et al.'s model,
where every round is a new user. A user whose loss function is queried over
several rounds (the envs here keep one f for a whole episode) is protected by
the composition of those releases.

What the learner sees of a two-point round is the centred pair
``(D/2, -D/2)`` as the observation (so ``obs[0] - obs[1] = D``, the one
quantity a two-point method uses) and a reward of ``0.0``: the level of the
losses is not released. ``info`` is ``{}`` unless ``oracle_info``.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> import ldp_gym
    >>> env = TwoPointGaussian(gym.make("LDPMultiPointBCO-v0"), epsilon=1.0, delta=1e-5, seed=0)
    >>> obs, info = env.reset(seed=0)
    >>> x = np.full(5, 0.1)
    >>> obs, reward, terminated, truncated, info = env.step(np.concatenate([x, -x]))
    >>> bool(obs[0] == -obs[1]), reward, info
    (True, 0.0, {})
    >>> print(env.privacy)
    local DP, epsilon=1, delta=1e-05 per loss function (the losses of one round)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs

from ldp_gym.envs.bco import project_points

from .feedback import STREAM_ARGS_DOC, FeedbackWrapper, VectorFeedbackWrapper
from .mechanisms import GaussianMechanism, check_input
from .reward import GaussianReward, VectorGaussianReward

__all__ = ["TwoPointGaussian", "VectorTwoPointGaussian", "one_point"]

_PAIR_SPACE = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)


def _core(env: Any) -> Any:
    core = getattr(getattr(env, "unwrapped", env), "core", None)
    if core is None or not hasattr(core, "lipschitz"):
        raise ValueError("env must be a bandit convex optimisation env of ldp_gym.envs.bco "
                         "(LDPBCO-v0 or LDPMultiPointBCO-v0)")
    return core


def _calibration(epsilon: Any) -> str:
    return "classic" if isinstance(epsilon, (int, float)) and epsilon < 1 else "analytic"


def one_point(env: Any, epsilon: float, delta: float, seed: Any = None, *,
              calibration: str | None = None, secure: bool = False,
              oracle_info: bool = False) -> GaussianReward | VectorGaussianReward:
    """Zheng et al.'s Alg 1 release on a one-point env: the loss clipped to ``[-B, B]`` (the
    env's ``loss_bound``) plus Gaussian noise, ``sigma = 2B sqrt(2 ln(1.25/delta))/epsilon``.

    Args:
        env: a single or vector ``LDPBCO-v0`` env.
        epsilon, delta: the guarantee per loss.
        calibration: ``'classic'`` (Zheng's sigma; only for epsilon < 1) or ``'analytic'``;
            default: classic below epsilon 1, analytic from 1 on.
        seed, secure, oracle_info: as :class:`~ldp_gym.wrappers.reward.GaussianReward`.

    Returns:
        the :class:`~ldp_gym.wrappers.reward.GaussianReward` (or its vector version). As a
        function of the env it is also a runner wrapper: ``wrappers=[(one_point, {"epsilon":
        1.0, "delta": 1e-5})]``.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> env = one_point(gym.make("LDPBCO-v0"), epsilon=0.5, delta=1e-5, seed=0)
        >>> _ = env.reset(seed=0)
        >>> print(env.privacy)
        local DP, epsilon=0.5, delta=1e-05 per reward
    """
    core = _core(env)
    if core.points != 1:
        raise ValueError("one_point needs a one-point env (LDPBCO-v0); two-point feedback is "
                         "released by TwoPointGaussian")
    b = core.loss_bound
    cal = _calibration(epsilon) if calibration is None else calibration
    kwargs = dict(epsilon=epsilon, delta=delta, lower=-b, upper=b, calibration=cal, seed=seed,
                  secure=secure, oracle_info=oracle_info)
    if hasattr(env, "num_envs"):
        return VectorGaussianReward(env, **kwargs)
    return GaussianReward(env, **kwargs)


class _TwoPoint:
    """The two-point release of a batch of rounds (shared by the single and vector wrappers)."""

    unit = "loss"
    mechanism: Any  # a GaussianMechanism on [-G, G] (make_mechanism)
    secure: bool

    def _init_two_point(self, env: Any, epsilon: Any, delta: Any, calibration: Any) -> None:
        core = _core(env)
        if core.points != 2:
            raise ValueError(f"TwoPointGaussian needs an env with 2 points per round, "
                             f"got points={core.points}")
        self.dim, self.radius, self.lipschitz = core.dim, core.radius, core.lipschitz
        cal = _calibration(epsilon) if calibration is None else calibration
        self._params = (epsilon, delta, cal)

    def make_mechanism(self, seed: Any) -> GaussianMechanism:
        eps, delta, cal = self._params
        g = self.lipschitz
        return GaussianMechanism(eps, delta, lower=-g, upper=g, calibration=cal, seed=seed,
                                 secure=self.secure)

    def _released(self, actions: Any, losses: Any) -> np.ndarray:
        """``D`` (N,) for actions (N, 2d) and the env's losses (N, 2)."""
        points = project_points(np.asarray(actions, dtype=np.float64).reshape(-1, 2, self.dim),
                                self.radius)[0]  # the points the env plays
        gap = np.linalg.norm(points[:, 0] - points[:, 1], axis=1)
        losses = check_input(losses, "losses").reshape(-1, 2)
        ratio = np.divide(losses[:, 0] - losses[:, 1], gap, out=np.zeros_like(gap),
                          where=gap > 0)
        noisy = self.mechanism(ratio)  # clipped to [-G, G], then noised: float-safe
        return np.where(gap > 0, gap * noisy, 0.0)  # the same point twice: nothing released

    @staticmethod
    def _pair(d: np.ndarray) -> np.ndarray:
        return np.stack([d / 2, -d / 2], axis=-1) + 0.0  # + 0.0: no -0.0


_DOC = """
    Protected: the round's loss function (both losses; unit ``"loss"``): only ``D`` leaves
    the wrapper, as the observation ``(D/2, -D/2)`` with reward ``0.0``.

    Args:
        env: a ``LDPMultiPointBCO-v0`` env with 2 points per round (single or vector).
        epsilon, delta: the guarantee per round's loss function.
        calibration: ``'classic'`` (Zheng's sigma, epsilon < 1) or ``'analytic'``; default:
            classic below epsilon 1, analytic from 1 on.
""" + STREAM_ARGS_DOC


class TwoPointGaussian(_TwoPoint, FeedbackWrapper):
    __doc__ = "Zheng et al.'s Alg 2 release of a two-point round: (epsilon, delta)-LDP per loss " \
        "function.\n" + _DOC + """
    Example:
        >>> import gymnasium as gym
        >>> import numpy as np
        >>> import ldp_gym
        >>> env = TwoPointGaussian(gym.make("LDPMultiPointBCO-v0"), epsilon=0.5, delta=1e-5)
        >>> obs, _ = env.reset(seed=0)
        >>> obs  # nothing released yet
        array([0., 0.])
        >>> obs, reward, *_ = env.step(np.zeros(10))  # the same point twice: D = 0
        >>> obs.tolist(), reward
        ([0.0, 0.0], 0.0)
"""

    def __init__(self, env: gym.Env, epsilon: float, delta: float, calibration: str | None = None,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, calibration=calibration,
                                       seed=seed, secure=secure, oracle_info=oracle_info)
        self._init_two_point(env, epsilon, delta, calibration)
        FeedbackWrapper.__init__(self, env, seed=seed, secure=secure, oracle_info=oracle_info,
                                 observation_space=_PAIR_SPACE)

    def release(self, action: Any, observation: Any, reward: Any) -> tuple[np.ndarray, float]:
        return self._pair(self._released(action, observation))[0], 0.0

    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros(2)


class VectorTwoPointGaussian(_TwoPoint, VectorFeedbackWrapper):
    __doc__ = "Vector-env version of :class:`TwoPointGaussian` (one independent draw per run; " \
        "runs that autoreset release nothing).\n" + _DOC + """
    Example:
        >>> import numpy as np
        >>> import ldp_gym
        >>> venv = VectorTwoPointGaussian(ldp_gym.make_vector_env("LDPMultiPointBCO-v0", 3, 100),
        ...                               epsilon=1.0, delta=1e-5, seed=0)
        >>> obs, _ = venv.reset(seed=0)
        >>> obs, rewards, *_ = venv.step(np.tile(np.r_[np.full(5, 0.1), np.full(5, -0.1)], (3, 1)))
        >>> obs.shape, rewards.tolist()
        ((3, 2), [0.0, 0.0, 0.0])
"""

    def __init__(self, env: Any, epsilon: float, delta: float, calibration: str | None = None,
                 seed: Any = None, *, secure: bool = False, oracle_info: bool = False):
        RecordConstructorArgs.__init__(self, epsilon=epsilon, delta=delta, calibration=calibration,
                                       seed=seed, secure=secure, oracle_info=oracle_info)
        self._init_two_point(env, epsilon, delta, calibration)
        VectorFeedbackWrapper.__init__(self, env, seed=seed, secure=secure,
                                       oracle_info=oracle_info,
                                       single_observation_space=_PAIR_SPACE)

    def release(self, actions: Any, observations: Any, rewards: Any) -> tuple[np.ndarray, np.ndarray]:
        d = self._released(actions, observations)
        d[self.autoreset] = 0.0  # a fresh run's observation carries no loss yet
        return self._pair(d), np.zeros(self.num_envs)

    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros((self.num_envs, 2))
