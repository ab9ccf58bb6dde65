"""Bandit convex optimisation: one point (``LDPBCO-v0``) and k points (``LDPMultiPointBCO-v0``) per round.

Bandit convex optimisation, as in Flaxman, Kalai and McMahan 2005: every round the
learner plays a point x_t of the decision set X, the ball of radius R in R^d, and
observes only the loss ``f_t(x_t)`` of an unknown convex function. R is ``radius``,
default 1, and d is ``dim``, default 5. With multi-point feedback, as in Agarwal, Dekel
and Xiao 2010, it plays k points ``x_{t,1..k}`` of the same function f_t and observes
the k losses. k is ``points``, default 2. These are the settings of Zheng et al. (2020),
section 3. Their LDP releases, Alg 1 and Alg 2, clip to the loss bound B and the
Lipschitz constant G declared here.

Reward = -loss, so any Gymnasium learner maximises it. For one point the reward is
``-f_t(x_t)``, where ``f_t(x_t)`` is the observed, noisy loss. For k points it is minus
the mean of the k observed losses.

**Loss families** (``loss``). Every instance is drawn at reset from the env's
``np_random``: a centre c uniform in the ball of radius R/2, or a unit direction u
uniform on the sphere and an offset r uniform in [-R/2, R/2]. A centre in that ball
keeps the minimiser interior. Each family has its minimum 0 in X. It declares the
constants below for every instance of the family and every x in X. They are
attributes of the core, and the tests check them on random points.

=========  =========================  ==================  ===============  ==========  =======
``loss``   f(x)                       B (``loss_bound``)  G (lipschitz)    mu          beta
=========  =========================  ==================  ===============  ==========  =======
quadratic  (mu/2) ||x - c||^2         9 mu R^2/8 + noise  3 mu R / 2       mu          mu
absolute   ||x - c||_1 / sqrt(d)      3 R / 2 + noise     1                0           inf
logistic   psi(2 (<u, x> - r) / R)    psi(3) + noise      (2/R) tanh(3/2)  0 (d >= 2)  2 / R^2
=========  =========================  ==================  ===============  ==========  =======

with ``psi(z) = log(1 + e^z) + log(1 + e^-z) - 2 log 2 = 2 log cosh(z/2)``,
the logistic loss of a feature seen once with each label. Its minimum 0 lies on the
hyperplane ``<u, x> = r``, which crosses X, and ``psi(3) = 2 log cosh(3/2)`` is
about 1.705. B bounds ``|f_t(x)|``, noise included. G is the Lipschitz constant of
the noise-free loss on X. Its strong convexity mu is ``strong_convexity``; 0.0 means
only convex. Its smoothness beta is ``smoothness``; ``math.inf`` means not smooth.
Each constant is attained by some instance and point, so none can be lowered.
Quadratic and absolute attain them at ``c = -(R/2) v``, ``x = R v``,
``v = (1, ..., 1)/sqrt(d)``; logistic at ``r = -R/2``, ``x = R u``. In d = 1 the
logistic loss is strongly convex on X, with ``mu = 2 sech^2(3/2) / R^2``, which is
then declared.

**Regimes** (``regime``).

* ``stochastic``: one f drawn at reset, observed with bounded zero-mean noise,
  ``f_t(x) = f(x) + z_t``, ``z_t`` uniform on ``[-noise, noise]``. ``noise``
  defaults to 0.1. There is one ``z_t`` per round, shared by the k points, as
  the same function is queried at k points. The regret is the noise-free
  pseudo-regret ``f(x_t) - f(x*)``, with ``f(x*) = 0``.
* ``adversarial``: an oblivious adversary. Two instances a and b are drawn at
  reset: two centres, or one direction with two offsets. f_t alternates between
  them over phases of doubling length. Round t = 0, 1, 2, ... belongs to phase
  ``floor(log2(t + 1))``, with a in even phases and b in odd ones. So the sequence
  is fixed before the learner acts, and the best fixed point in hindsight keeps
  moving: the majority instance changes within every phase. The same noise z_t
  is added to the observed losses; being constant in x it cancels from the
  regret. The regret is the exact ``sum_t f_t(x_t) - min_{x in X} sum_t f_t(x)``
  at every round. The instantaneous regret of round t is
  ``f_t(x_t) - (M_t - M_{t-1})``, with the noise-free
  ``M_t = min_x sum_{s<=t} f_s(x)``. So its cumulative sum at any checkpoint is
  the regret against the best fixed point of the rounds so far. Instantaneous
  values may be negative. M_t has a closed form for every family, with
  ``n_a + n_b = t`` rounds of each instance. Quadratic:
  ``(mu/2) n_a n_b ||a - b||^2 / t``, summed by Welford's update without
  cancellation; the minimiser is the running mean of the centres, inside X.
  Absolute: ``min(n_a, n_b) ||a - b||_1 / sqrt(d)``; by the triangle inequality
  the minimiser is the majority centre. Logistic: the loss depends on x through
  ``z = 2 <u, x> / R`` only, and the first-order condition
  ``n_a tanh((z - z_a)/2) + n_b tanh((z - z_b)/2) = 0`` is a quadratic equation
  in ``e^z``. Its root lies between the two hyperplanes, inside X.

``info`` holds scalars per run, for evaluation only. ``expected_reward`` is minus
the noise-free loss, averaged over the k points. ``optimal_reward`` is
``-f(x*) = 0`` in the stochastic regime. In the adversarial one it is
``-(M_t - M_{t-1})``, the comparator's share of the round. ``regret`` is their
difference: the instantaneous regret averaged over the k points, as in Agarwal,
Dekel and Xiao 2010. ``projected`` says whether a point of the action was projected.
The core's ``comparator`` holds the best fixed point of each run. In the adversarial
regime it is the best fixed point of the rounds played so far.

**Actions and projection.** The action space is ``Box(-R, R, (k*d,), float64)``,
the bounding box of X^k, so that stable-baselines3 and any Gymnasium learner run
unchanged. Point i is ``action[i*d:(i+1)*d]``. An action must be a finite real
array of that shape: float32, float64 or integers. The shared checks of
:mod:`ldp_gym.validation` refuse NaN, inf, bools, strings and wrong shapes with one
clear error naming the action. Any finite point is then accepted. A point outside X,
inside the box or not, is projected radially, ``x -> R x / ||x||``, which is the
Euclidean projection onto the ball. Points outside the box are projected before the
box check, so a learner whose point leaves the box by rounding or exploration is not
refused. ``info["projected"]`` is True when some point of the action lay outside X
by more than rounding. The tolerance is relative 1e-12 on the squared norm.

**Observations.** One point: a constant float32 ``[0.0]``, as for every
context-free bandit here. One-point feedback reveals the reward only, and the
observation carries nothing private, so the Gaussian reward wrapper alone
makes the feedback private. k points: the k observed losses of the last round,
in ``Box(-B, B, (k,))``. They are float64, and zeros after reset. Two-point
methods take the difference of two nearly equal losses, at points ``2 rho`` apart,
``rho = log T / T``. At T = 1e6 float32 would round the losses by a visible
fraction of that difference. This observation is the private feedback itself.
The reward-only privacy wrappers refuse these envs, as ``private_observation``
says. Their release is :class:`~ldp_gym.wrappers.bco.TwoPointGaussian`.

**Paths.** Round by round, :meth:`BCOVectorEnv.step` admits the action
(:meth:`BCOCore.admit`), checks it and plays the round with the compiled
``_play``. The runner's block path (:class:`~ldp_gym.protocols.EvaluatesBlocks`)
draws the randomness of a block ahead with :meth:`BCOCore.draw_world`. That is the
noise's uniforms, which do not depend on the actions; the adversary's schedule is
deterministic. The block path then hands the agent's kernel the compiled round,
:meth:`BCOCore.round_kernel`, with the same admission, checks and ``_play``. So
both paths give bitwise the same rounds.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> import ldp_gym
    >>> env = gym.make("LDPBCO-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(5))
    >>> env.action_space.shape, sorted(info)
    ((5,), ['expected_reward', 'optimal_reward', 'projected', 'regret'])
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from numba import njit
from typing_extensions import override

from ldp_gym.protocols import RoundKernel
from ldp_gym.validation import check_int, check_real

from .base import BanditCore, BanditEnv, BanditVectorEnv

__all__ = ["LOSSES", "REGIMES", "BCOCore", "BCOEnv", "BCOVectorEnv", "MultiPointBCOCore",
           "MultiPointBCOEnv", "MultiPointBCOVectorEnv", "box_status", "project_point", "project_points",
           "psi"]

#: the loss families, by code (their position)
LOSSES = ("quadratic", "absolute", "logistic")
REGIMES = ("stochastic", "adversarial")
#: A point is reported as projected when its squared norm exceeds R^2 by more than this factor
#: (points outside X by rounding only, e.g. ``y + rho u`` with ``||y|| = R - rho`` computed in
#: floating point, are still brought onto X, silently).
PROJECTION_TOLERANCE = 1e-12
_OBS_SPACE = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
_NONE = np.empty(0)


@njit(cache=True, nogil=True)
def _psi(z):
    """``log(1 + e^z) + log(1 + e^-z) - 2 log 2 = 2 log cosh(z/2)``, as ``2 log1p(2 sinh(z/4)^2)``.

    That form is accurate near its minimum 0 at z = 0.
    """
    s = math.sinh(0.25 * z)
    return 2.0 * math.log1p(2.0 * s * s)


def psi(z: Any) -> np.ndarray:
    """:func:`_psi` on arrays: ``log(1 + e^z) + log(1 + e^-z) - 2 log 2``, elementwise."""
    s = np.sinh(np.multiply(z, 0.25))
    return 2.0 * np.log1p(2.0 * s * s)


@njit(cache=True, nogil=True, inline="always")
def _side(t):
    """Instance of round t (0-based) of the adversarial sequence: 0 (a) in even phases, 1 (b)
    in odd ones. Round t is in phase floor(log2(t + 1)), so the phases double in length."""
    m, phase = t + 1, 0
    while m > 1:
        m >>= 1
        phase += 1
    return phase & 1


@njit(cache=True, nogil=True)
def _logistic_best(n_a, n_b, ea, eb, za, zb):
    """Adversarial logistic: the minimiser z* and minimum of ``n_a psi(z - za) + n_b psi(z - zb)``
    (n_a + n_b >= 1; ea = e^za, eb = e^zb). With w = e^z the first-order condition
    ``n_a tanh((z - za)/2) + n_b tanh((z - zb)/2) = 0`` is ``w^2 + m (eb - ea) w - ea eb = 0``,
    ``m = (n_a - n_b)/(n_a + n_b)``; its positive root, computed without cancellation."""
    p = (n_a - n_b) / (n_a + n_b) * (eb - ea)
    prod = ea * eb
    q = math.sqrt(p * p + 4.0 * prod)
    w = 0.5 * (q - p) if p <= 0.0 else 2.0 * prod / (q + p)
    z = math.log(w)
    return z, n_a * _psi(z - za) + n_b * _psi(z - zb)


@njit(cache=True, nogil=True, inline="always")
def _shrink(x, i, start, dim, radius):
    """Factor projecting ``x[i, start:start + dim]`` radially onto the ball, and its squared
    norm."""
    sq = 0.0
    for q in range(dim):
        sq += x[i, start + q] * x[i, start + q]
    return (radius / math.sqrt(sq) if sq > radius * radius else 1.0), sq


@njit(cache=True, nogil=True)
def _evaluate(x, dim, radius, loss, mu, scale, centres, direction, offsets, sides, losses,
              flags):
    """Noise-free losses (N, k) of instance ``sides[i]`` of each run at the points x (N, k*d),
    projected radially onto the ball; ``flags[i]`` set where a point of run i lay outside it by
    more than rounding. One loop per family: a branch inside the loop would slow them all."""
    flag_r2 = radius * radius * (1.0 + PROJECTION_TOLERANCE)
    n, k = losses.shape
    if loss == 0:
        for i in range(n):
            for j in range(k):
                shrink, sq = _shrink(x, i, j * dim, dim, radius)
                flags[i] |= sq > flag_r2
                acc = 0.0
                for q in range(dim):
                    diff = x[i, j * dim + q] * shrink - centres[i, sides[i], q]
                    acc += diff * diff
                losses[i, j] = 0.5 * mu * acc
    elif loss == 1:
        inv = 1.0 / math.sqrt(dim)
        for i in range(n):
            for j in range(k):
                shrink, sq = _shrink(x, i, j * dim, dim, radius)
                flags[i] |= sq > flag_r2
                acc = 0.0
                for q in range(dim):
                    acc += abs(x[i, j * dim + q] * shrink - centres[i, sides[i], q])
                losses[i, j] = acc * inv
    else:
        for i in range(n):
            for j in range(k):
                shrink, sq = _shrink(x, i, j * dim, dim, radius)
                flags[i] |= sq > flag_r2
                acc = 0.0
                for q in range(dim):
                    acc += x[i, j * dim + q] * direction[i, q]
                losses[i, j] = _psi(scale * (acc * shrink - offsets[i, sides[i]]))


@njit(cache=True, nogil=True)
def _play(x, uniforms, fpar, ipar, centres, direction, offsets, counts, adv, forced, losses,
          out, projected):
    """One round of N runs, in place.

    The points x (N, k*d) are projected radially onto the ball, and their observed losses
    (N, k) are computed. The noise ``noise (2 u - 1)`` comes from the uniforms (N,) and is
    shared by the k points; there is none if ``uniforms`` is empty. ``out`` (4, N) gets the
    rewards, expected and optimal rewards, and regrets. ``projected`` (N,) gets the flags
    forced by :meth:`BCOCore.admit` or a point outside X. The adversary's counts move on.

    ``fpar``: radius, mu, logistic scale, noise; ``ipar``: points, dim, loss code,
    adversarial; ``counts`` (2, N): rounds played, rounds of instance b; ``adv`` (N, 4): the
    adversary's gap for the quadratic and absolute losses; M_t, e^{z_a}, e^{z_b} for the
    logistic one.
    """
    radius, mu, scale, noise = fpar[0], fpar[1], fpar[2], fpar[3]
    points, dim, loss, adversarial = ipar[0], ipar[1], ipar[2], ipar[3]
    n = x.shape[0]
    sides = np.zeros(n, dtype=np.int64)
    for i in range(n):
        if adversarial:
            sides[i] = _side(counts[0, i])
        projected[i] = forced[i]
        forced[i] = False
    _evaluate(x, dim, radius, loss, mu, scale, centres, direction, offsets, sides, losses,
              projected)
    for i in range(n):
        ti, nb, side = counts[0, i], counts[1, i], sides[i]
        total = 0.0
        for j in range(points):
            total += losses[i, j]
        clean = total / points
        inc = 0.0  # M_t - M_{t-1}; f(x*) = 0 in the stochastic regime
        if adversarial:
            if loss == 2:
                m = _logistic_best(ti + 1 - nb - side, nb + side, adv[i, 2], adv[i, 3],
                                   scale * offsets[i, 0], scale * offsets[i, 1])[1]
                inc = m - adv[i, 1]
                adv[i, 1] = m
            else:
                own = nb if side == 1 else ti - nb
                other = ti - own
                if loss == 0:    # Welford: (mu/2) ||a - b||^2 other^2 / (t (t + 1))
                    inc = adv[i, 0] * (other * other) / max(ti * (ti + 1.0), 1.0)
                elif own < other:  # the minority count min(n_a, n_b) grows by one
                    inc = adv[i, 0]
            counts[1, i] = nb + side
        counts[0, i] = ti + 1
        z = noise * (2.0 * uniforms[i] - 1.0) if uniforms.shape[0] else 0.0
        total = 0.0
        for j in range(points):
            losses[i, j] += z
            total += losses[i, j]
        out[0, i] = 0.0 - total / points
        out[1, i] = 0.0 - clean
        out[2, i] = 0.0 - inc
        out[3, i] = clean - inc


@njit(cache=True, nogil=True)
def _sides(t, out):
    for i in range(t.shape[0]):
        out[i] = _side(t[i])


@njit(cache=True, nogil=True)
def _logistic_comparators(t, n_b, exp_offsets, offsets, scale, out):
    """Adversarial logistic: z* of each run's rounds so far, or of round 1 before it is played."""
    for i in range(t.shape[0]):
        n_a = float(t[i] - n_b[i]) if t[i] > 0 else 1.0
        out[i] = _logistic_best(n_a, float(n_b[i]), exp_offsets[i, 0], exp_offsets[i, 1],
                                scale * offsets[i, 0], scale * offsets[i, 1])[0]


@njit(cache=True, nogil=True, inline="always")
def box_status(x, radius):
    """Status of the values of x (any shape): -1 if one is NaN or infinite, 1 if a finite one
    leaves [-radius, radius], else 0. The shared validation refuses NaN and infinite values.
    Inlined, and read in place: the block kernels call it every round. One pass without a
    branch (``v - v == 0`` is False for NaN and infinities only), which the compiler
    vectorises: a fifth of the time of testing and returning early."""
    finite, outside = True, False
    for v in x.flat:
        finite &= v - v == 0.0
        outside |= abs(v) > radius
    return -1 if not finite else 1 if outside else 0


#: A point whose squared norm, summed plainly, is below this fraction of R^2 lies inside X
#: whatever the rounding (relative error d 2^-53 of the sum; underflow only lowers it): its
#: projection is itself, not flagged, bitwise what the max-abs-scaled computation gives.
_CLEARLY_INSIDE = 1.0 - 1e-9


@njit(cache=True, nogil=True)
def project_point(src, radius, dst):
    """One point ``src`` (d,) projected radially onto the ball into ``dst`` (may be ``src``),
    inside the box despite rounding; returns whether it lay outside by more than rounding.
    Norms come from the max-abs-scaled point, so no finite point overflows."""
    d = src.shape[0]
    plain = 0.0
    for q in range(d):
        plain += src[q] * src[q]
    if plain <= _CLEARLY_INSIDE * radius * radius:  # the result below, without its divisions
        for q in range(d):
            dst[q] = src[q]
        return False
    top = 0.0
    for q in range(d):
        top = max(top, abs(src[q]))
    scale = top if top > 0.0 else 1.0
    sq = 0.0
    for q in range(d):
        v = src[q] / scale
        sq += v * v
    unit_norm = math.sqrt(sq)
    norm = top * unit_norm                        # inf beyond 1.8e308: still outside
    outside = norm > radius
    factor = radius / unit_norm if outside else 1.0
    for q in range(d):
        v = (src[q] / scale) * factor if outside else src[q]
        dst[q] = min(max(v, -radius), radius)
    return norm > radius * math.sqrt(1.0 + PROJECTION_TOLERANCE)


@njit(cache=True, nogil=True)
def _project_rows(rows, radius, out, flags):
    """:func:`project_point` on every row of ``rows`` (M, d)."""
    for i in range(rows.shape[0]):
        flags[i] = project_point(rows[i], radius, out[i])


@njit(cache=True, nogil=True)
def _admit_rows(x, points, dim, radius, forced):
    """:meth:`BCOCore.admit` of a finite float64 batch x (N, k*d) some value of which leaves
    the box ``[-radius, radius]`` (:func:`box_status` 1), in place: every point of every run
    projected onto X and ``forced[i]`` set where one of run i's lay outside it by more than
    rounding."""
    for i in range(x.shape[0]):
        for j in range(points):
            row = x[i, j * dim:(j + 1) * dim]
            if project_point(row, radius, row):
                forced[i] = True


@njit(cache=True, nogil=True)
def _play_admitted(x, uniforms, fpar, ipar, centres, direction, offsets, counts, adv, forced,
                   losses, out, projected):
    """The block path's round (:meth:`BCOCore.round_kernel`): the checks and projection of
    :meth:`BCOVectorEnv.step`, then :func:`_play`. The points x (N, k*d) must be finite, else
    nothing is played and False is returned. The projection is :func:`_admit_rows`, in place."""
    status = box_status(x, fpar[0])  # one pass: finite, and inside the box?
    if status < 0:
        return False
    if status:
        _admit_rows(x, ipar[0], ipar[1], fpar[0], forced)
    _play(x, uniforms, fpar, ipar, centres, direction, offsets, counts, adv, forced, losses,
          out, projected)
    return True


@njit(cache=True, nogil=True)
def _plain_feedback(x, losses, rewards, noise, params, seen, mech):
    """What the env shows of a round without a release (:meth:`BCOCore.round_kernel`):
    ``seen[:, 0]`` the rewards, ``seen[:, 1:]`` the observation. The observation is the k
    losses, or 0.0 for one point, whose observation is constant. ``noise``, ``params`` and
    ``mech`` are unused; a release's feedback function has this signature."""
    n, k = losses.shape
    for i in range(n):
        seen[i, 0] = rewards[i]
        if seen.shape[1] == 1 + k and k > 1:
            for j in range(k):
                seen[i, 1 + j] = losses[i, j]
        else:
            for j in range(1, seen.shape[1]):
                seen[i, j] = 0.0


_ARGS_DOC = """
    Args:
        dim: d (default 5).
        radius: R > 0, radius of the decision set X (default 1).
        loss: ``"quadratic"`` (default), ``"absolute"`` or ``"logistic"``.
        regime: ``"stochastic"`` (default) or ``"adversarial"`` (oblivious).
        noise: half-width of the uniform zero-mean noise on every observed loss; >= 0,
            default 0.1.
        mu: curvature of the quadratic loss, > 0 for it. The others take mu >= 0 and
            do not use it.
        {points}

    Attributes (of the core, ``env.unwrapped.core``):
        loss_bound: B, ``|f_t(x)| <= B`` on X, noise included; ``bounded_rewards = (-B, B)``.
        lipschitz: G, Lipschitz constant of the noise-free loss on X.
        strong_convexity: mu of the family; 0.0 means convex only.
        smoothness: beta of the family; ``math.inf`` means not smooth.
        comparator: (N, d) best fixed point of each run, for evaluation only.
        last_losses: (N, k) observed losses of the last round, float64, zeros after reset.
"""


def project_points(pts: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Points (..., d) projected radially onto the ball, inside the box ``[-radius, radius]^d``
    despite rounding, and whether each lay outside by more than rounding. Norms come from
    max-abs-scaled points, so that no finite point overflows. Compiled: :func:`project_point`
    is the one implementation of both paths of the runner."""
    pts = np.asarray(pts, dtype=np.float64)
    d = pts.shape[-1]
    rows = np.ascontiguousarray(pts.reshape(-1, d))
    out, flags = np.empty_like(rows), np.empty(rows.shape[0], dtype=bool)
    _project_rows(rows, float(radius), out, flags)
    return out.reshape(pts.shape), flags.reshape(pts.shape[:-1])


def _ball(rng: np.random.Generator, shape: tuple[int, ...], radius: float) -> np.ndarray:
    """Points uniform in the ball of ``radius``; the last axis holds the coordinates."""
    g = rng.standard_normal(shape)
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    g *= radius * rng.random(shape[:-1] + (1,)) ** (1.0 / shape[-1])
    return g


def _sphere(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    g = rng.standard_normal(shape)
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    return g


class BCOCore(BanditCore):
    __doc__ = """Bandit convex optimisation on the ball of radius R in R^d, on a batch of runs.
""" + _ARGS_DOC.format(points="points: k, points per round, default 1; >= 2 for multi-point "
                       "feedback.")

    public = ("dim", "radius", "points", "loss_bound", "lipschitz", "strong_convexity",
              "smoothness")

    min_points: ClassVar[int] = 1

    def __init__(self, *, dim: int = 5, radius: float = 1.0, loss: str = "quadratic",
                 regime: str = "stochastic", noise: float = 0.1, mu: float = 1.0,
                 points: int = 1):
        self.dim = check_int("dim", dim)
        self.radius = check_real("radius", radius, low=0.0)
        if not isinstance(loss, str) or loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        if not isinstance(regime, str) or regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
        self.loss, self.regime = loss, regime
        self.noise = check_real("noise", noise, low=0.0, low_open=False)
        self.mu = check_real("mu", mu, low=0.0, low_open=False)
        if loss == "quadratic" and self.mu == 0.0:
            raise ValueError("mu must be > 0 for the quadratic loss (its curvature), got 0.0")
        self.points = check_int("points", points, low=self.min_points)
        d, R = self.dim, self.radius
        if loss == "quadratic":
            bound, g, sc, beta = 9.0 * self.mu * R * R / 8.0, 1.5 * self.mu * R, self.mu, self.mu
        elif loss == "absolute":
            bound, g, sc, beta = 1.5 * R, 1.0, 0.0, math.inf
        else:
            bound, g, beta = float(psi(3.0)), 2.0 / R * math.tanh(1.5), 2.0 / (R * R)
            sc = 0.0 if d > 1 else 2.0 / (R * R * math.cosh(1.5) ** 2)
        self.loss_bound = bound + self.noise
        self.lipschitz, self.strong_convexity, self.smoothness = g, sc, beta
        self.reward_range = (-self.loss_bound, self.loss_bound)
        self.bounded_rewards = (-self.loss_bound, self.loss_bound)
        self.action_space = spaces.Box(-R, R, shape=(self.points * d,), dtype=np.float64)
        self.observation_space = _OBS_SPACE if self.points == 1 else spaces.Box(
            -self.loss_bound, self.loss_bound, shape=(self.points,), dtype=np.float64)
        self.private_observation = self.points > 1  # the losses: reward wrappers refuse it
        self.own_release = "TwoPointGaussian (the release of two-point feedback)"
        self._code = LOSSES.index(loss)
        self._adversarial = regime == "adversarial"
        self._scale = 2.0 / R                     # logistic: z = scale (<u, x> - r)
        self._fpar = np.array([R, self.mu, self._scale, self.noise])
        self._ipar = np.array([self.points, d, self._code, self._adversarial], dtype=np.int64)
        self._alloc(0)

    # ------------------------------------------------------------------ state
    def _alloc(self, n: int) -> None:
        j, d = (2 if self._adversarial else 1), self.dim
        logistic = self.loss == "logistic"
        # the instances: c of each (quadratic, absolute), or u and r of each (logistic)
        self.centres = np.zeros((n, j, d) if not logistic else (n, j, 0))
        self.direction = np.zeros((n, d) if logistic else (n, 0))
        self.offsets = np.zeros((n, j) if logistic else (n, 0))
        self.last_losses = np.zeros((n, self.points))
        self._counts = np.zeros((2, n), dtype=np.int64)
        self.t = self._counts[0]                  # rounds played in the episode
        self.n_b = self._counts[1]                # adversarial: rounds of instance b so far
        # adversarial: gap mu/2 ||a-b||^2 or ||a-b||_1/sqrt d; logistic: M_t, e^{z_a}, e^{z_b}
        self._adv = np.zeros((n, 4))
        self._forced = np.zeros(n, dtype=bool)    # runs whose action admit() projected

    @override
    def reset(self, rng, runs, n_runs):
        if self.t.shape[0] != n_runs:
            self._alloc(n_runs)
        m, j, d, half = len(runs), self.centres.shape[1], self.dim, self.radius / 2.0
        if self.loss == "logistic":
            self.direction[runs] = _sphere(rng, (m, d))
            self.offsets[runs] = half * (2.0 * rng.random((m, j)) - 1.0)
        else:
            self.centres[runs] = _ball(rng, (m, j, d), half)
        self.t[runs] = 0
        self.n_b[runs] = 0
        self._adv[runs, 1] = 0.0
        self.last_losses[runs] = 0.0
        self._forced[runs] = False
        if self._adversarial:
            self._instances_changed(runs)

    def _instances_changed(self, runs: Any) -> None:
        """Recompute the adversary's constants of ``runs`` from their instances."""
        if self.loss == "logistic":
            self._adv[runs, 2:] = np.exp(self._scale * self.offsets[runs])
            return
        diff = self.centres[runs, 0] - self.centres[runs, 1]
        self._adv[runs, 0] = 0.5 * self.mu * np.einsum("nd,nd->n", diff, diff) \
            if self.loss == "quadratic" else np.abs(diff).sum(axis=1) / math.sqrt(self.dim)

    @override
    def observe(self):
        if self.points == 1:
            return np.zeros((self.t.shape[0], 1), dtype=np.float32)
        return self.last_losses.copy()

    # ------------------------------------------------------------------ actions
    def admit(self, actions: Any, num_envs: int | None = None) -> Any:
        """Project the points of an action (batch) that leave the box onto X, so that the box
        check of the shared validation passes them; anything else is returned unchanged.

        ``num_envs`` is None for one run's action (shape ``(k*d,)``), else the batch size
        (shape ``(num_envs, k*d)``). Inputs that are not a finite real array of that shape are
        returned as they are, for :func:`~ldp_gym.validation.check_action` (or
        ``check_actions``) to refuse with its usual error. The runs projected here are
        remembered and reported as ``projected`` by the next :meth:`step`.
        """
        try:
            arr = np.asarray(actions)
        except (ValueError, TypeError):   # ragged: the shared validation says so
            return actions
        width = self.points * self.dim
        shape = (width,) if num_envs is None else (num_envs, width)
        if arr.shape != shape or self._forced.shape[0] != (num_envs or 1):
            return actions
        R = self.radius
        if arr.dtype == np.float64:
            if box_status(arr.reshape(-1), R) != 1:
                return actions
        elif arr.dtype.kind not in "iuf" or not np.isfinite(arr).all() \
                or not (arr.max() > R or arr.min() < -R):
            return actions
        pts = np.array(arr, dtype=np.float64).reshape(-1, width)   # a copy, projected in place
        _admit_rows(pts, self.points, self.dim, R, self._forced)
        return pts.reshape(shape)

    # ------------------------------------------------------------------ losses
    def losses(self, points: Any, side: Any = None) -> np.ndarray:
        """Noise-free losses (N, m) at points (N, m, d), projected onto X like actions.

        With ``side`` None, the losses are of the instance each run plays in its next round.
        With ``side`` 0 or 1, an int or (N,) array, they are of instance a or b. The
        stochastic regime has instance a only. For evaluation and tests; nothing is played.
        """
        x = np.ascontiguousarray(project_points(np.asarray(points, dtype=np.float64), self.radius)[0])
        n, m = x.shape[0], x.shape[1]
        if side is None:
            sides = np.zeros(n, dtype=np.int64)
            if self._adversarial:
                _sides(self.t, sides)
        else:
            sides = np.broadcast_to(np.asarray(side, dtype=np.int64), (n,)).copy()
        out = np.empty((n, m))
        _evaluate(x.reshape(n, -1), self.dim, self.radius, self._code, self.mu, self._scale,
                  self.centres, self.direction, self.offsets, sides, out, np.zeros(n, bool))
        return out

    @property
    def comparator(self) -> np.ndarray:
        """(N, d) best fixed point of each run.

        In the stochastic regime it is the minimiser of f. In the adversarial one it is the
        minimiser of the sum of the losses of the rounds played so far, or of f_1 before the
        first round.
        """
        if self.loss == "logistic":
            if not self._adversarial:
                return self.offsets[:, :1] * self.direction
            z = np.empty(self.t.shape[0])
            _logistic_comparators(self.t, self.n_b, self._adv[:, 2:], self.offsets, self._scale, z)
            return (z / self._scale)[:, None] * self.direction
        if not self._adversarial:
            return self.centres[:, 0].copy()
        n_b = self.n_b.astype(np.float64)
        n_a = np.where(self.t == 0, 1.0, self.t - n_b)   # before round 1: f_1's minimiser, a
        a, b = self.centres[:, 0], self.centres[:, 1]
        if self.loss == "absolute":
            return np.where((n_b > n_a)[:, None], b, a)
        return (n_a[:, None] * a + n_b[:, None] * b) / (n_a + n_b)[:, None]

    # ------------------------------------------------------------------ one round
    @override
    def step(self, rng, actions):
        n, k = self.t.shape[0], self.points
        x = np.ascontiguousarray(actions, dtype=np.float64).reshape(n, k * self.dim)
        uniforms = rng.random(n) if self.noise > 0.0 else _NONE
        losses, out, projected = np.empty((n, k)), np.empty((4, n)), np.empty(n, dtype=bool)
        _play(x, uniforms, self._fpar, self._ipar, self.centres, self.direction, self.offsets,
              self._counts, self._adv, self._forced, losses, out, projected)
        self.last_losses = losses
        return out[0], {"expected_reward": out[1], "optimal_reward": out[2], "regret": out[3],
                        "projected": projected}


    # ------------------------------------------------------------------ the block path
    def draw_world(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """The randomness of the next ``length`` rounds (:class:`~ldp_gym.protocols.EvaluatesBlocks`):
        the uniforms of the loss noise, (length, N), or (length, 0) without noise. Row s is
        the ``rng.random(N)`` that :meth:`step` draws in round s; one call draws the same
        stream. The adversary's schedule is deterministic; nothing else is random."""
        n = self.t.shape[0]
        return rng.random((length, n)) if self.noise > 0.0 else np.empty((length, 0))

    def round_kernel(self) -> RoundKernel:
        """The compiled round of the block path (:class:`~ldp_gym.protocols.EvaluatesBlocks`):
        ``_play_admitted(x, uniforms_row, *args)`` checks and projects the points as
        :meth:`BCOVectorEnv.step` does, then plays the round with :meth:`step`'s compiled
        :func:`_play`, on this core's state, which it moves on in place. Its buffers hold the
        last round's rewards, losses (:attr:`last_losses`), regrets and ``projected`` flags."""
        n, k = self.t.shape[0], self.points
        self.last_losses = np.zeros((n, k))
        out, projected = np.zeros((4, n)), np.zeros(n, dtype=bool)
        args = (self._fpar, self._ipar, self.centres, self.direction, self.offsets, self._counts,
                self._adv, self._forced, self.last_losses, out, projected)
        return RoundKernel(_play_admitted, args, _plain_feedback, out[0], self.last_losses,
                           out[3], projected)


class MultiPointBCOCore(BCOCore):
    """Bandit convex optimisation with k >= 2 points per round (``points``, default 2); other
    arguments as :class:`BCOCore`."""

    min_points = 2

    def __init__(self, *, points: int = 2, **kwargs: Any):
        super().__init__(points=points, **kwargs)


class BCOEnv(BanditEnv):
    __doc__ = """One-point bandit convex optimisation on the ball of radius R in R^d, for one run.
""" + _ARGS_DOC.format(points="points: k, points per round (default 1).") + """
    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import BCOEnv
        >>> env = BCOEnv(dim=3, loss="absolute", noise=0.0)
        >>> obs, info = env.reset(seed=0)
        >>> c = env.unwrapped.core.comparator[0]          # the best point (evaluation only)
        >>> obs, reward, terminated, truncated, info = env.step(c)
        >>> obs, reward, info["regret"]
        (array([0.], dtype=float32), 0.0, 0.0)
        >>> info = env.step(np.array([3.0, 0.0, 4.0]))[4]   # outside X: projected onto it
        >>> info["projected"], env.unwrapped.core.loss_bound
        (True, 1.5)
    """
    core_class = BCOCore
    core: BCOCore

    @override
    def step(self, action):
        # points outside the box are projected onto X before the shared action check
        return super().step(self.core.admit(action))


class MultiPointBCOEnv(BCOEnv):
    __doc__ = """Multi-point bandit convex optimisation for one run: k points of the same loss per round.
""" + _ARGS_DOC.format(points="points: k >= 2, points per round (default 2).") + """
    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import MultiPointBCOEnv
        >>> env = MultiPointBCOEnv(dim=2, points=2, regime="adversarial")
        >>> obs, info = env.reset(seed=0)
        >>> obs, env.action_space.shape                   # the k losses of the last round
        (array([0., 0.]), (4,))
        >>> x = np.array([0.1, 0.2, 0.1, -0.2])           # points (0.1, 0.2) and (0.1, -0.2)
        >>> obs, reward, terminated, truncated, info = env.step(x)
        >>> bool(np.isclose(reward, -obs.mean())), obs.shape
        (True, (2,))
    """
    core_class = MultiPointBCOCore


class BCOVectorEnv(BanditVectorEnv):
    """N runs of :class:`BCOEnv` in numpy, as a native vector env; actions (N, k*d) are projected
    onto X like :class:`BCOEnv`'s.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import BCOVectorEnv
        >>> envs = BCOVectorEnv(num_envs=4, max_episode_steps=100, loss="logistic")
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminated, truncated, info = envs.step(np.zeros((4, 5)))
        >>> obs.shape, rewards.shape, bool((envs.last_regret >= 0).all())
        ((4, 1), (4,), True)
        >>> envs.core.comparator.shape
        (4, 5)
    """

    core_class = BCOCore
    core: BCOCore

    @override
    def step(self, actions):
        # points outside the box are projected onto X before the shared action check
        return super().step(self.core.admit(actions, self.num_envs))


class MultiPointBCOVectorEnv(BCOVectorEnv):
    """N runs of :class:`MultiPointBCOEnv` in numpy, as a native vector env.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.envs import MultiPointBCOVectorEnv
        >>> envs = MultiPointBCOVectorEnv(num_envs=3, max_episode_steps=10, dim=2, points=3)
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminated, truncated, info = envs.step(np.zeros((3, 6)))
        >>> obs.shape, info["projected"].tolist()
        ((3, 3), [False, False, False])
    """

    core_class = MultiPointBCOCore
