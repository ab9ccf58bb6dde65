"""The releases of bandit convex optimisation under LDP: Zheng et al. 2020, Alg 1 and Alg 2.

Zheng, Cai, Huang, Li and Wang (NeurIPS 2020), section 3, turn any
non-private bandit convex optimisation algorithm into an LDP one. They
privatise, on the user's side, what one round reveals:

* **one-point feedback**, Alg 1: the loss ``f_t(x_t)``, clipped to
  ``[-B, B]``, plus ``N(0, sigma^2)`` with
  ``sigma = 2B sqrt(2 ln(1.25/delta)) / epsilon``. That is the Gaussian reward
  wrapper on the reward ``-f_t(x_t)``. :func:`one_point` builds it for an env
  of :mod:`ldp_gym.envs.bco` with the env's declared B. It takes the classic
  calibration for epsilon < 1, where it holds, and the analytic one otherwise;
* **two-point feedback**, Alg 2: only
  ``D = f_t(x_1) - f_t(x_2) + n^T (x_1 - x_2)``, ``n ~ N(0, sigma^2 I_d)``,
  ``sigma = 2G sqrt(2 ln(1.25/delta)) / epsilon``, after clipping the
  difference to ``[-G ||x_1 - x_2||, G ||x_1 - x_2||]``.
  :class:`TwoPointGaussian` and :class:`VectorTwoPointGaussian` release it.

Neighbouring users hold two loss functions that are G-Lipschitz on X; their
differences at the same two points differ by at most ``2G ||x_1 - x_2||``,
and ``n^T (x_1 - x_2)`` is ``N(0, sigma^2 ||x_1 - x_2||^2)``. The wrapper
releases ``D = ||x_1 - x_2|| M(diff / ||x_1 - x_2||)`` with ``M`` the
float-safe Gaussian mechanism on ``[-G, G]``, of sensitivity 2G. This D has the
same law as the one above, and every float output is a multiple of one grid. The scaling by the
public ``||x_1 - x_2||`` is post-processing. The points are the ones the env
plays: the action projected radially on X, as the env does. The action is public.

The unit protected is one round's loss function, as in Zheng et al.'s model,
where every round is a new user. The envs here keep one f for a whole episode.
A user whose loss function is queried over several rounds is protected by the
composition of those releases.

Paths: the wrappers' ``step`` releases round by round. The runner's block path
of bandit convex optimisation, for every BCO agent, bypasses ``step`` and applies the
release itself, through ``block_release``. :class:`VectorOnePointGaussian`, which
:func:`one_point` builds on vector envs, and :class:`VectorTwoPointGaussian` have one.
The mechanism draws the noise of the block ahead from its stream. These are the same
numbers as its per-round calls. The compiled transform releases each round: the
arithmetic ``step`` uses, with :mod:`ldp_gym.wrappers.mechanisms.compiled`'s clip,
snap and add. The calls are traced as the per-round ones, through
:func:`~ldp_gym.wrappers.mechanisms.recording`, so the audits cover both paths.

What the learner sees of a two-point round is the centred pair
``(D/2, -D/2)`` as the observation and a reward of ``0.0``. So
``obs[0] - obs[1] = D``, the one quantity a two-point method uses. The level of
the losses is not released. ``info`` is ``{}`` unless ``oracle_info``.

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

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs
from numba import njit
from typing_extensions import override

from ldp_gym.envs.bco import project_point
from ldp_gym.protocols import ReleaseKernel
from ldp_gym.validation import check_input

from .feedback import STREAM_ARGS_DOC, FeedbackWrapper, VectorFeedbackWrapper
from .mechanisms import GaussianMechanism
from .mechanisms.compiled import clip_scalar, snap_add
from .mechanisms.noise import record_release, tracing
from .reward import GaussianReward, VectorGaussianReward

__all__ = ["TwoPointGaussian", "VectorOnePointGaussian", "VectorTwoPointGaussian", "one_point"]

_PAIR_SPACE = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)


# --------------------------------------------------------------------------- compiled
# The two-point release's arithmetic is compiled once and used by both paths of the runner:
# the wrappers' step (round by round) and the block path's kernels (``block_release``), so the
# released values are bitwise the same. The mechanism's transform (clip, snap, add the noise
# drawn ahead) is :mod:`ldp_gym.wrappers.mechanisms.compiled`'s.


@njit(cache=True, nogil=True)
def _gap_ratio(x, i, l0, l1, radius, dim, buf):  # pragma: no cover - compiled
    """Run i of x (N, 2d): the distance of its two points, projected onto the ball as the env
    plays them, and the loss difference divided by it. The ratio is 0.0 for the same point twice."""
    project_point(x[i, :dim], radius, buf[0])
    project_point(x[i, dim:2 * dim], radius, buf[1])
    sq = 0.0
    for q in range(dim):
        v = buf[0, q] - buf[1, q]
        sq += v * v
    gap = math.sqrt(sq)
    return gap, ((l0 - l1) / gap if gap > 0.0 else 0.0)


@njit(cache=True, nogil=True)
def _gaps_ratios(x, losses, radius, gaps, ratios):  # pragma: no cover - compiled
    """:func:`_gap_ratio` of every run."""
    dim = x.shape[1] // 2
    buf = np.empty((2, dim))
    for i in range(x.shape[0]):
        gaps[i], ratios[i] = _gap_ratio(x, i, losses[i, 0], losses[i, 1], radius, dim, buf)


@njit(cache=True, nogil=True)
def _two_point_feedback(x, losses, rewards, noise, params, seen, mech):  # pragma: no cover
    """The block path's two-point release of one round (:class:`~ldp_gym.protocols.ReleaseKernel`):
    ``D = gap M(diff / gap)``, M the float-safe Gaussian mechanism on ``[-G, G]`` with ``noise``
    its grid noise; seen = (0.0, D/2, -D/2). ``params`` holds G, its grid and the radius."""
    bound, grid, radius = params[0], params[1], params[2]
    dim = x.shape[1] // 2
    buf = np.empty((2, dim))
    for i in range(x.shape[0]):
        gap, ratio = _gap_ratio(x, i, losses[i, 0], losses[i, 1], radius, dim, buf)
        noisy = snap_add(clip_scalar(ratio, bound), noise[i], grid)
        mech[i] = noisy
        d = gap * noisy if gap > 0.0 else 0.0
        seen[i, 0] = 0.0
        seen[i, 1] = d / 2 + 0.0
        seen[i, 2] = -d / 2 + 0.0


@njit(cache=True, nogil=True)
def _one_point_feedback(x, losses, rewards, noise, params, seen, mech):  # pragma: no cover
    """The block path's one-point release of one round (:class:`~ldp_gym.protocols.ReleaseKernel`):
    the reward clipped to ``[-B, B]``, snapped, plus the grid noise; the constant observation
    is 0.0. ``params`` holds B and the grid."""
    bound, grid = params[0], params[1]
    for i in range(x.shape[0]):
        v = snap_add(clip_scalar(rewards[i], bound), noise[i], grid)
        mech[i] = v
        seen[i, 0] = v
        for j in range(1, seen.shape[1]):
            seen[i, j] = 0.0


def _block_kernel(mechanism: GaussianMechanism, feedback: Any, params: list[float], length: int,
                  n: int) -> ReleaseKernel:
    """A :class:`~ldp_gym.protocols.ReleaseKernel` of ``length`` rounds of n runs: the noise
    drawn ahead by the mechanism and the trace of the block's calls.

    Row s of the noise is what the mechanism's s-th call on n inputs adds. The trace, as
    :func:`~ldp_gym.wrappers.mechanisms.recording` keeps it, has one record per round, as the
    per-round calls make. Its input is the output minus the grid noise. That is exact, as
    both are on the grid.
    """
    noise = mechanism.noise((length, n))

    def record(outputs: np.ndarray) -> None:
        if not tracing():
            return
        for out, z in zip(outputs, noise[:len(outputs)], strict=True):
            record_release(type(mechanism).__name__, out - z, mechanism.snapped_sensitivity,
                    mechanism.sigma, mechanism.epsilon, mechanism.delta)
    return ReleaseKernel(feedback, np.array(params, dtype=np.float64), noise, record)


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
    """Zheng et al.'s Alg 1 release on a one-point env: the loss clipped to ``[-B, B]``, B the
    env's ``loss_bound``, plus Gaussian noise, ``sigma = 2B sqrt(2 ln(1.25/delta))/epsilon``.

    Args:
        env: a single or vector ``LDPBCO-v0`` env.
        epsilon: the epsilon of the guarantee per loss.
        delta: the delta of the guarantee per loss.
        seed: as :class:`~ldp_gym.wrappers.reward.GaussianReward`.
        calibration: ``'classic'`` or ``'analytic'``. Classic is Zheng's sigma, only for
            epsilon < 1. Default: classic below epsilon 1, analytic from 1 on.
        secure: as :class:`~ldp_gym.wrappers.reward.GaussianReward`.
        oracle_info: as :class:`~ldp_gym.wrappers.reward.GaussianReward`.

    Returns:
        the :class:`~ldp_gym.wrappers.reward.GaussianReward`. On a vector env it is a
        :class:`VectorOnePointGaussian`: a ``VectorGaussianReward`` that the runner's block
        path applies itself, as ``releases_blocks`` says. As a
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
        return VectorOnePointGaussian(env, **kwargs)
    return GaussianReward(env, **kwargs)


class VectorOnePointGaussian(VectorGaussianReward):
    """Zheng et al.'s Alg 1 release on a vector ``LDPBCO-v0`` env, as :func:`one_point` builds it.

    It is :class:`~ldp_gym.wrappers.reward.VectorGaussianReward` with symmetric bounds
    ``[-B, B]``. The runner's block path of bandit convex optimisation applies its release
    itself (``releases_blocks``, :meth:`block_release`). It uses the same noise, drawn ahead
    by the same mechanism and added by the compiled transform, so the released losses are
    bitwise those of :meth:`step`. Its ``step`` is the reward wrapper's, which releases round
    by round. Other block paths do not bypass it: ``needs_round_by_round`` stays True.

    Example:
        >>> import ldp_gym
        >>> venv = one_point(ldp_gym.make_vector_env("LDPBCO-v0", 3, 100), 1.0, 1e-5, seed=0)
        >>> type(venv).__name__, venv.releases_blocks, venv.needs_round_by_round
        ('VectorOnePointGaussian', True, True)
    """

    @property
    def releases_blocks(self) -> bool:
        """Whether the block path may apply the release: the compiled clip needs symmetric bounds."""
        return bool(self.mechanism.lower == -self.mechanism.upper)

    def block_release(self, length: int) -> ReleaseKernel:
        """The release of the next ``length`` rounds (:class:`~ldp_gym.protocols.ReleasesBlocks`)."""
        mech = self.mechanism
        assert isinstance(mech, GaussianMechanism)
        return _block_kernel(mech, _one_point_feedback, [mech.upper, mech.grid], length,
                             self.num_envs)


class _TwoPoint:
    """The two-point release of a batch of rounds, shared by the single and vector wrappers."""

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
        """``D`` (N,) for actions (N, 2d) and the env's losses (N, 2).

        The arithmetic is compiled, :func:`_gaps_ratios`, and shared with
        :meth:`VectorTwoPointGaussian.block_release`.
        """
        x = np.ascontiguousarray(np.asarray(actions, dtype=np.float64).reshape(-1, 2 * self.dim))
        losses = np.ascontiguousarray(check_input(losses, "losses").reshape(-1, 2))
        gap, ratio = np.empty(x.shape[0]), np.empty(x.shape[0])
        _gaps_ratios(x, losses, float(self.radius), gap, ratio)  # the points the env plays
        noisy = self.mechanism(ratio)  # clipped to [-G, G], then noised: float-safe
        return np.where(gap > 0, gap * noisy, 0.0)  # the same point twice: nothing released

    @staticmethod
    def _pair(d: np.ndarray) -> np.ndarray:
        return np.stack([d / 2, -d / 2], axis=-1) + 0.0  # + 0.0: no -0.0


_DOC = """
    Protected: the round's loss function, both losses, with unit ``"loss"``. Only ``D`` leaves
    the wrapper, as the observation ``(D/2, -D/2)`` with reward ``0.0``.

    Args:
        env: a single or vector ``LDPMultiPointBCO-v0`` env with 2 points per round.
        epsilon, delta: the guarantee per round's loss function.
        calibration: ``'classic'`` or ``'analytic'``. Classic is Zheng's sigma, for
            epsilon < 1. Default: classic below epsilon 1, analytic from 1 on.
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

    @override
    def release(self, action: Any, observation: Any, reward: Any) -> tuple[np.ndarray, float]:
        return self._pair(self._released(action, observation))[0], 0.0

    @override
    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros(2)


class VectorTwoPointGaussian(_TwoPoint, VectorFeedbackWrapper):
    __doc__ = "Vector-env version of :class:`TwoPointGaussian`: one independent draw per run.\n\n" \
        "    Runs that autoreset release nothing.\n" + _DOC + """
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

    #: the runner's block path applies the release itself (:meth:`block_release`)
    releases_blocks = True

    def block_release(self, length: int) -> ReleaseKernel:
        """The release of the next ``length`` rounds (:class:`~ldp_gym.protocols.ReleasesBlocks`):
        the compiled arithmetic of :meth:`release`, the noise drawn ahead by the mechanism."""
        mech = self.mechanism
        return _block_kernel(mech, _two_point_feedback, [self.lipschitz, mech.grid, self.radius],
                             length, self.num_envs)

    @override
    def release(self, actions: Any, observations: Any, rewards: Any) -> tuple[np.ndarray, np.ndarray]:
        d = self._released(actions, observations)
        d[self.autoreset] = 0.0  # a fresh run's observation carries no loss yet
        return self._pair(d), np.zeros(self.num_envs)

    @override
    def release_reset(self, observation: Any) -> np.ndarray:
        return np.zeros((self.num_envs, 2))
