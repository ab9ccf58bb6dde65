"""Bandit convex optimisation agents: one-point and two-point feedback, all non-private.

One point per round:

* :class:`FKM`, of Flaxman, Kalai and McMahan 2005, samples on a sphere and takes
  any convex or strongly convex loss;
* :class:`SahaTewari`, of Saha and Tewari 2011, is for convex smooth losses;
* :class:`HazanLevy`, of Hazan and Levy 2014, is for strongly convex smooth losses.

The last two sample on ellipsoids shaped by the self-concordant barrier of the
ball. Two points per round: :class:`TwoPointGD`, of Agarwal, Dekel and Xiao 2010,
named "ADX".

The decision set is the ball X = R B of radius R in R^d, set by ``radius`` and
``dim``. The action space is ``Box(-R, R, (d,))``, or ``Box(-R, R, (2d,))`` for two
points, with point i being ``action[i*d:(i+1)*d]``. The agents read the loss off the
feedback: ``f_t(x_t) = -reward`` for one point. For two points they read only the
difference ``f_t(x_{t,1}) - f_t(x_{t,2}) = next_obs[:, 0] - next_obs[:, 1]``, and never
the reward. The declared constants of the losses tune the schedules: the bound B, the
Lipschitz constant G, the strong convexity mu and the smoothness beta.
:meth:`~BCOAgent.from_env` reads them off the env's core; constructor arguments
override them.

Privacy, by the black-box reduction of Zheng et al. (2020): every agent here is
an ordinary non-private algorithm, and its ``privacy`` is ``None``. Run a one-point
agent on an env whose reward passes through the Gaussian reward wrapper,
``GaussianReward`` / ``VectorGaussianReward`` with ``lower=-B, upper=B``.
``ldp_gym.wrappers.bco.one_point`` builds it so: the loss clipped to [-B, B] plus
N(0, sigma^2), sigma = 2B sqrt(2 ln(1.25/delta))/eps. The whole interaction is then
Zheng's Alg 1, (eps, delta)-LDP per user's loss by their Thm 2; the agent only
post-processes the releases. Run the two-point agent behind the two-point release
wrapper, ``TwoPointGaussian`` / ``VectorTwoPointGaussian``. It releases the
difference of the two losses, clipped to G ||x_1 - x_2||, plus n^T (x_1 - x_2),
n ~ N(0, sigma^2 I_d), sigma = 2G sqrt(2 ln(1.25/delta))/eps. The interaction is then
Zheng's Alg 2, (eps, delta)-LDP per user's pair of losses by their Thm 5.

Paths: every agent plays round by round, through ``act``, the env's ``step`` and
``observe``. Every agent here also plays whole blocks of the runner's block path
(``block_play = PLAYS_EVALUATED``, :meth:`FKM.play_world`): FKM, ADX, Saha-Tewari and
Hazan-Levy. One compiled kernel runs
act, the env's compiled round, the release's compiled transform if a release wraps
the env, and observe. The unit vectors are drawn ahead from the agent's stream, so
the block is bitwise the rounds played one by one. No release formula is written
here: the env and the wrapper hand their compiled functions over.

All agents are batch-first: N runs advance together on (N, d) arrays, and unit
vectors are drawn for all runs at once. The barrier methods use closed forms of the
ball's barrier. Its Hessian is a multiple of the identity plus a rank-one term, so
its inverse square root is explicit and needs no eigendecomposition.

Example:
    >>> import numpy as np
    >>> from ldp_gym.agents import FKM
    >>> theta = np.array([0.5, -0.2, 0.0])             # f(x) = ||x - theta||^2
    >>> agent = FKM(dim=3, radius=1.0, loss_bound=4.0, lipschitz=4.0, horizon=2000,
    ...             num_envs=8, seed=0)
    >>> obs = np.zeros((8, 1))
    >>> for _ in range(2000):
    ...     x = agent.act(obs)
    ...     loss = ((x - theta) ** 2).sum(axis=1)
    ...     agent.observe(obs, x, -loss, obs)             # reward = -loss
    >>> bool(np.linalg.norm(agent.y.mean(axis=0) - theta) < 0.3)
    True
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from typing import Any, ClassVar

import numba
import numpy as np
from gymnasium import spaces
from numba import njit
from typing_extensions import override

from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import check_actions, check_int, check_real
from ldp_gym.wrappers.mechanisms.noise import draw_normals

from .base import Agent

__all__ = ["FKM", "SCHEDULES", "BCOAgent", "HazanLevy", "SahaTewari", "TwoPointGD",
           "ellipsoid_point"]

#: Values of ``schedule`` (FKM and ADX): ``auto`` picks ``strongly_convex`` when mu > 0.
SCHEDULES = ("auto", "convex", "strongly_convex")


_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
_INLINE: dict[str, Any] = dict(_JIT, inline="always")
_NO_PARAMS = np.empty(0)


# --------------------------------------------------------------------------- compiled steps
# One implementation of every step, compiled, one row (run) at a time: at 100 runs and d = 5 a
# numpy expression costs more in dispatch than in arithmetic.


@njit(**_JIT)
def _unit_row(z, i):  # pragma: no cover - compiled
    """Row i of z divided by its norm, in place. A standard Gaussian row becomes uniform on the
    unit sphere, as its law is rotation invariant."""
    d = z.shape[1]
    s = 0.0
    for j in range(d):
        s += z[i, j] * z[i, j]
    norm = math.sqrt(s)
    for j in range(d):
        z[i, j] /= norm


@njit(**_INLINE)
def _onto_box(v, bound):  # pragma: no cover - compiled
    """``v``, or ``+-bound`` where rounding carried v at most 4 ulps past ``[-bound, bound]``."""
    near = bound * (1.0 + 2.0 ** -50)
    return min(max(v, -bound), bound) if -near <= v <= near else v


@njit(**_INLINE)
def _sphere_play(z, s, rho, y, u, out, bound):  # pragma: no cover - compiled
    """The Gaussian rows ``z[s]`` (N, d) made unit rows into u, and the points written:
    ``out[:, :d] = y + rho u`` and, when out has 2d columns, ``out[:, d:] = y - rho u``.

    ``z`` (L, N, d) holds the draws of L rounds; the block path reads round s of them in
    place, the per-round path passes its (N, d) draws as ``z[None]`` with ``u`` on the same
    memory (each row is read before it is written). y lies in the ball of radius
    ``bound - rho``, so only rounding can carry a coordinate past the box ``[-bound, bound]``
    (by an ulp, seen at d = 1), which the action space would refuse: such a coordinate, at
    most 4 ulps out, is put on the box (:func:`_onto_box`). Every other point is unchanged,
    and one further out (a y set by hand) is still refused. The rows are made unit here, not
    through :func:`_unit_row`: that call per row measured 4-8 % slower in the block kernel."""
    n, d = u.shape
    two = out.shape[1] == 2 * d
    for i in range(n):
        q = 0.0
        for j in range(d):
            q += z[s, i, j] * z[s, i, j]
        norm = math.sqrt(q)
        for j in range(d):
            v = z[s, i, j] / norm
            u[i, j] = v
            step = rho * v
            out[i, j] = _onto_box(y[i, j] + step, bound)
            if two:
                out[i, d + j] = _onto_box(y[i, j] - step, bound)


@njit(**_INLINE)
def _step_project(y, u, values, scale, cap):  # pragma: no cover - compiled
    """``y_i <- Proj_{cap B}(y_i + scale values_i u_i)`` row by row, in place. The projection is
    radial: ``y min(1, cap / ||y||)``."""
    n, d = y.shape
    for i in range(n):
        c = scale * values[i]
        s = 0.0
        for j in range(d):
            v = y[i, j] + c * u[i, j]
            y[i, j] = v
            s += v * v
        if s > cap * cap:
            f = cap / math.sqrt(s)
            for j in range(d):
                y[i, j] *= f


@njit(**_JIT)
def _ellipsoid(x, u, normalize, radius, lam, scale, gain, y, w):  # pragma: no cover - compiled
    """Ellipsoidal sampling with the ball's barrier ``R(x) = -ln(radius^2 - ||x||^2)``, row by row:
    ``y = x + scale M^{-1/2} u`` and ``w = gain M^{1/2} u``, ``M = grad^2 R(x) + lam I``.

    ``grad^2 R(x) = (2/s) I + (4/s^2) x x^T`` with ``s = radius^2 - ||x||^2``: M has the
    eigenvalue ``a^2 = 2/s + lam`` on the orthogonal complement of x and
    ``b^2 = a^2 + 4 ||x||^2 / s^2`` along x, so ``M^{1/2} = a I + c x x^T`` and
    ``M^{-1/2} = I/a - c/(a b) x x^T`` with ``c = (b - a)/||x||^2 = 4/(s^2 (a + b))``: no
    eigendecomposition, no division by ||x|| (exact at x = 0). With ``normalize``, the rows of
    u (Gaussian) are first made unit vectors in place.
    """
    n, d = x.shape
    r2 = radius * radius
    for i in range(n):
        if normalize:
            _unit_row(u, i)
        sq = 0.0
        xu = 0.0
        for j in range(d):
            sq += x[i, j] * x[i, j]
            xu += x[i, j] * u[i, j]
        s = r2 - sq
        a = math.sqrt(2.0 / s + lam)
        b = math.sqrt(a * a + 4.0 * sq / (s * s))
        c = 4.0 / (s * s * (a + b))
        k_inv = c * xu / (a * b)
        k_half = c * xu
        for j in range(d):
            v = x[i, j] + scale * (u[i, j] / a - k_inv * x[i, j])
            # strictly inside the ball in exact arithmetic (the Dikin ellipsoid of radius 1 is);
            # the clip only keeps rounding at the boundary inside the Box bounds
            y[i, j] = min(max(v, -radius), radius)
            w[i, j] = gain * (a * u[i, j] + k_half * x[i, j])


#: FTRL points stay within ``radius * _INSIDE`` (< radius in floating point)
_INSIDE = 1.0 - 1e-12


@njit(**_JIT)
def _barrier_root(a, radius):  # pragma: no cover - compiled
    """The root r in [0, radius) of ``a (radius^2 - r^2) = 2 r`` (a >= 0), computed stably:
    ``r = a radius^2 / (1 + sqrt(1 + (a radius)^2))``, capped at
    ``radius (1 - 1e-12)``. For huge a the root rounds to the radius, where the barrier
    is infinite."""
    r = a * radius * radius / (1.0 + math.sqrt(1.0 + (a * radius) ** 2))
    return min(r, radius * _INSIDE)


@njit(**_JIT)
def _saha_tewari_update(grad_sum, w, rewards, eta, radius, x):  # pragma: no cover - compiled
    """``S += f w`` (f = -reward: g_t = f_t(y_t) w) and the FTRL point over the ball,
    ``x = argmin eta S^T x - ln(radius^2 - ||x||^2) = -r S/||S||`` with r the root of
    ``eta ||S|| (radius^2 - r^2) = 2 r``."""
    n, d = x.shape
    for i in range(n):
        s = 0.0
        for j in range(d):
            grad_sum[i, j] -= rewards[i] * w[i, j]
            s += grad_sum[i, j] * grad_sum[i, j]
        norm = math.sqrt(s)
        factor = _barrier_root(eta * norm, radius) / norm if norm > 0.0 else 0.0  # r / ||S||
        for j in range(d):
            x[i, j] = -factor * grad_sum[i, j]


@njit(**_INLINE)
def _hazan_levy_radius(norm, curvature, eta, radius, iterations):  # pragma: no cover - compiled
    """``(r, steps)``: r in [0, radius) the root of ``phi(r) = curvature r + (2/eta) r /
    (radius^2 - r^2) - norm``, by at most ``iterations`` Newton steps (``steps`` taken).

    phi is increasing and convex on [0, radius). Newton's method starts at an upper bound of the
    root: the smaller of the roots without the barrier and without the quadratic. It decreases
    monotonically to the root, every iterate inside the ball; r is kept strictly inside, also
    where the root rounds to the radius."""
    r2, k = radius * radius, 2.0 / eta
    r = min(norm / curvature, _barrier_root(eta * norm, radius))
    steps = 0
    for _ in range(iterations):
        gap = r2 - r * r
        phi = curvature * r + k * r / gap - norm
        if phi <= 0.0:
            break
        step = phi / (curvature + k * (r2 + r * r) / (gap * gap))
        steps += 1
        if not r - step < r:   # converged to rounding
            break
        r = max(r - step, 0.0)
    return min(r, radius * _INSIDE), steps


@njit(**_JIT)
def _hazan_levy_update(c, w, rewards, mu, curvature, eta, radius, iterations,
                       x):  # pragma: no cover - compiled
    """``c += g_t - mu x_t`` (g_t = f_t(y_t) w, f = -reward) and the FTRL point
    ``x = argmin c^T x + (curvature/2) ||x||^2 + R(x)/eta = -r c/||c||``, r the root of
    :func:`_hazan_levy_radius` at ``norm = ||c||``. Returns the most Newton steps any row took.
    """
    n, d = x.shape
    most = 0
    for i in range(n):
        s = 0.0
        for j in range(d):
            c[i, j] -= rewards[i] * w[i, j] + mu * x[i, j]
            s += c[i, j] * c[i, j]
        norm = math.sqrt(s)
        r, steps = _hazan_levy_radius(norm, curvature, eta, radius, iterations)
        most = max(most, steps)
        factor = -r / norm if norm > 0.0 else 0.0
        for j in range(d):
            x[i, j] = factor * c[i, j]
    return most


# --------------------------------------------------------------------------- the block path
# FKM and ADX play a block of an EvaluatesBlocks setting (ldp_gym.protocols) in one kernel:
# every round, act (the compiled step of ``act``), the setting's compiled round (``play``),
# the release's compiled feedback (or the env's own), observe (the compiled step of
# ``observe``). The randomness was drawn ahead by its owners (the env's, the agent's unit
# vectors, the release's noise), in the order of round-by-round play, and the functions are the
# ones round-by-round play calls: the block is bitwise the rounds played one by one.


#: The fields of a block kernel's ``world`` argument, in order: the setting's draws (L, N, ...)
#: and arguments, the release's parameters and noise (L, N), the setting's round outputs, what
#: the learner saw, the release's recorded noise (L, N) and the block's regrets and flags.
WORLD_FIELDS = ("draws", "args", "params", "noise", "rewards", "losses", "regret", "projected",
                "seen", "mech", "regrets", "flags")


@njit(**_INLINE)
def _world_round(x, xa, radius, play, feedback, world, s):  # pragma: no cover - compiled
    """Round ``s`` of a block kernel after act.

    The setting's compiled round runs its checks, projection and round on a copy ``xa`` of
    the points. Then observe's check of the agent's own action, made as it is copied (every
    value finite and in ``[-radius, radius]``, as :func:`~ldp_gym.envs.bco.box_status` 0),
    and ``feedback`` gives what the learner sees. The round's regret and projected flags are
    kept. Returns False for an action the env or ``observe`` refuses; nothing of that round is
    then played or learned.
    """
    draws, args, params, noise, rewards, losses, regret, projected, seen, mech, regrets, \
        flags = world
    refused = False  # observe's check of the agent's own action (finite, in the box), as copied
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            xa[i, j] = v
            refused |= not abs(v) <= radius  # (a NaN compares False: refused)
    if not play(xa, draws[s], *args):
        return False
    if refused:
        return False
    feedback(x, losses, rewards, noise[s], params, seen, mech[s])
    regrets[s, :] = regret
    flags[s, :] = projected
    return True


@njit(**_INLINE)
def _clipped_seen(seen, i, column, loss_cap):  # pragma: no cover - compiled
    """Run i's loss seen (``seen[i, column]``) clipped to ``[-loss_cap, loss_cap]``, as
    ``observe`` clips it (:attr:`BCOAgent.loss_cap`)."""
    return min(max(seen[i, column], -loss_cap), loss_cap)


def _gd_block(normals, state, rule, play, feedback, world, x):  # pragma: no cover - compiled
    """Rounds of FKM (``two`` False) or ADX (``two`` True) on a drawn block.

    ``normals`` (L, N, d) are the agent's draws; ``state = (y, u)`` its state (in place);
    ``rule = (rho, t0, mu, eta, gain, cap, loss_cap, radius, two)`` its constants, the step
    size ``1/(mu t)`` when mu > 0, else eta; ``world`` (:data:`WORLD_FIELDS`) the setting's
    side, ``play(x, draws[s], *args)`` its round and ``feedback(x, losses, rewards, noise[s],
    params, seen, mech[s])`` what the learner sees, ``seen`` (N, 1 + k): the reward, then the
    observation. Returns the rounds played: L, or the round whose action the env or the
    agent refuses. x then holds that action, and nothing of that round was learned."""
    y, u = state
    rho, t0, mu, eta, gain, cap, loss_cap, radius, two = rule
    seen = world[8]
    n_rounds = normals.shape[0]
    xa = np.empty_like(x)
    values = np.empty(x.shape[0])
    for s in range(n_rounds):
        _sphere_play(normals, s, rho, y, u, x, radius)  # act: u unit, x = y + rho u (y - rho u)
        if not _world_round(x, xa, radius, play, feedback, world, s):
            return s
        t = t0 + s + 1
        step = 1.0 / (mu * t) if mu > 0.0 else eta
        for i in range(values.shape[0]):  # D = f(x_1) - f(x_2) from the observation; f = -reward
            values[i] = _clipped_seen(seen, i, 1, loss_cap) - _clipped_seen(seen, i, 2, loss_cap) \
                if two else _clipped_seen(seen, i, 0, loss_cap)
        _step_project(y, u, values, (-step if two else step) * gain, cap)
    return n_rounds


#: which barrier algorithm :func:`_barrier_block` plays
_SAHA_TEWARI, _HAZAN_LEVY = 0, 1


def _barrier_block(normals, state, rule, play, feedback, world,
                   x):  # pragma: no cover - compiled
    """Rounds of Saha-Tewari (``kind`` 0) or Hazan-Levy (1) on a drawn block, as
    :func:`_gd_block` plays FKM.

    ``state = (center, u, w, totals, newton)``: act is :func:`_ellipsoid` around the FTRL
    point ``center``, with Saha-Tewari's fixed radius ``delta`` or Hazan-Levy's
    ``lam = eta mu t``; observe clips the loss seen to ``loss_cap``, then runs
    :func:`_saha_tewari_update` on the gradient sum ``totals`` or :func:`_hazan_levy_update`
    on ``c``, whose Newton steps of the last round go to ``newton[0]``.
    ``rule = (kind, t0, delta, eta, mu, iterations, loss_cap, radius)``; ``play``,
    ``feedback`` and ``world`` as for :func:`_gd_block`. Returns the rounds played, as
    :func:`_gd_block`."""
    center, u, w, totals, newton = state
    kind, t0, delta, eta, mu, iterations, loss_cap, radius = rule
    seen = world[8]
    n_rounds, n, d = normals.shape
    xa = np.empty_like(x)
    seen_loss = np.empty(n)
    for s in range(n_rounds):
        u[:] = normals[s]
        t = t0 + s                            # rounds observed before this one
        if kind == _SAHA_TEWARI:
            _ellipsoid(center, u, True, radius, 0.0, delta, d / delta, x, w)
        else:
            _ellipsoid(center, u, True, radius, eta * mu * (t + 1), 1.0, d / 1.0, x, w)
        if not _world_round(x, xa, radius, play, feedback, world, s):
            return s
        for i in range(n):
            seen_loss[i] = _clipped_seen(seen, i, 0, loss_cap)
        if kind == _SAHA_TEWARI:
            _saha_tewari_update(totals, w, seen_loss, eta, radius, center)
        else:
            newton[0] = _hazan_levy_update(totals, w, seen_loss, mu, mu * (t + 1), eta, radius,
                                           iterations, center)
    return n_rounds


#: A block kernel compiled for each type of its data: its function arguments are typed by
#: their signatures (numba's first-class function types), so that the kernel is cached on disk
#: and calls any compiled round and feedback of those signatures.
_BLOCK_KERNELS: dict[tuple, Any] = {}


def _type_key(value: Any) -> Any:
    """What numba's type of ``value`` depends on, found without typing it: an array's dtype,
    dimensions, layout and flags, a tuple's items, another value's Python type. Typing a
    block's ~30 arrays with ``numba.typeof`` took 0.45 ms a block."""
    if isinstance(value, np.ndarray):
        f = value.flags
        return value.dtype.str, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned
    if isinstance(value, tuple):
        return tuple(_type_key(v) for v in value)
    return type(value)


def _block_kernel(block: Any, args: tuple) -> Any:
    """``block`` (:func:`_gd_block` or :func:`_barrier_block`) compiled for the types of its
    arguments ``args``: ``normals, state, rule, play, feedback, world, x``. The round and
    feedback functions are typed by the arguments they are called with."""
    key = (block.__name__, _type_key(tuple(args[i] for i in (0, 1, 2, 5, 6))))
    kernel = _BLOCK_KERNELS.get(key)
    if kernel is None:
        normals, state, rule, world, x = (numba.typeof(args[i]) for i in (0, 1, 2, 5, 6))
        ty = numba.types
        fields = dict(zip(WORLD_FIELDS, world.types))
        row = ty.Array(fields["draws"].dtype, fields["draws"].ndim - 1, "C")
        noise_row, mech_row = ty.Array(ty.float64, 1, "C"), ty.Array(ty.float64, 1, "C")
        play = ty.FunctionType(ty.boolean(x, row, *fields["args"].types))
        feedback = ty.FunctionType(ty.none(x, fields["losses"], fields["rewards"], noise_row,
                                           fields["params"], fields["seen"], mech_row))
        sig = ty.int64(normals, state, rule, play, feedback, world, x)
        kernel = _BLOCK_KERNELS[key] = njit(sig, **_JIT)(block)
    return kernel


def ellipsoid_point(x: np.ndarray, u: np.ndarray, radius: float, lam: float = 0.0,
                    scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(x + scale M^{-1/2} u, M^{1/2} u)`` row by row, ``M = grad^2 R(x) + lam I`` for the barrier
    ``R(x) = -ln(radius^2 - ||x||^2)`` of the ball: the compiled step the barrier agents play
    with. u holds unit rows, and x (N, d) lies strictly inside the ball."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    u = np.array(u, dtype=np.float64)
    y, w = np.empty_like(x), np.empty_like(x)
    _ellipsoid(x, u, False, float(radius), float(lam), float(scale), 1.0, y, w)
    return y, w


def _release_noise(env: Any) -> float:
    """The standard deviation of the noise a reward release between the agent and the env adds
    to each loss, 0.0 without one. It is sigma for a Gaussian release, and sqrt(2) times the
    scale for a Laplace one."""
    while env is not None and hasattr(env, "env"):
        mech = getattr(env, "mechanism", None)
        if mech is not None and getattr(env, "unit", None) == "reward":
            if hasattr(mech, "sigma"):
                return float(mech.sigma)
            if hasattr(mech, "scale"):
                return math.sqrt(2.0) * float(mech.scale)
        env = env.env
    return 0.0


class BCOAgent(Agent):
    """Base of the bandit convex optimisation agents: the ball, the loss constants, the schedule.

    Args:
        dim: d, the dimension of one point; default 5, the env's.
        radius: R, the radius of the ball X (> 0). X contains the ball of radius r = R, which
            is the inner radius the schedules use.
        points: points played per round: 1 for the one-point agents, 2 for ADX. ``from_env``
            reads it off the env. A number the algorithm does not play is refused.
        loss_bound: B > 0, declared bound on |f_t| over X.
        loss_noise: the standard deviation of the noise a release adds to every observed loss.
            Under Zheng et al.'s Alg 1 it is the Gaussian reward wrapper's sigma.
            :meth:`from_env` reads it off a reward wrapper of the env, and takes 0 without one.
            The one-point schedules are tuned for the released losses' range
            :attr:`loss_range`, as Zheng et al.'s Thm 3 tunes the black box.
        lipschitz: G > 0, declared Lipschitz constant of f_t on X.
        strong_convexity: mu >= 0; 0 means not strongly convex.
        smoothness: beta > 0, ``inf`` for non-smooth losses.
        horizon: T, required: every schedule uses it.
        num_envs, seed, secure: as for every :class:`~ldp_gym.agents.Agent`. ``n_arms`` is
            accepted for the common signature and unused, as the action space is a Box.

    Every parameter is validated when the agent is built, with one ``ValueError`` naming it,
    or ``TypeError`` for wrong types. ``observe`` learns from the round the last ``act``
    played, through its direction u_t, which the agent keeps. The action passed is validated
    against the action space, not re-read.
    """

    supported_action_spaces: ClassVar[tuple[type[spaces.Space], ...]] = (spaces.Box,)
    test_env: ClassVar[str] = "LDPBCO-v0"
    needs_horizon: ClassVar[bool] = True
    #: Points the algorithm plays per round.
    points_per_round: ClassVar[int] = 1

    def __init__(self, *, dim: int = 5, radius: float = 1.0, points: int | None = None,
                 loss_bound: float = 1.0, lipschitz: float = 1.0, strong_convexity: float = 0.0,
                 smoothness: float = math.inf, loss_noise: float = 0.0, **kwargs: Any):
        # checked in _make_action_space, after the base class has checked its own arguments
        self._given = {"dim": dim, "radius": radius, "points": points, "loss_bound": loss_bound,
                       "lipschitz": lipschitz, "strong_convexity": strong_convexity,
                       "smoothness": smoothness, "loss_noise": loss_noise}
        n_arms = kwargs.pop("n_arms", 1)
        super().__init__(n_arms, **kwargs)
        del self._given

    # ------------------------------------------------------------------ construction
    @classmethod
    def space_params(cls, space: spaces.Space) -> dict[str, Any]:
        """``radius``, and ``dim`` for ``points_per_round`` points, of a ``Box(-R, R, (m,))`` action
        space of floats; the env's core then gives the number of points and d (``env_params``)."""
        box = space if isinstance(space, spaces.Box) else None
        ok = box is not None and len(box.shape) == 1 and box.dtype.kind == "f"
        if ok:
            assert box is not None
            low, high = np.asarray(box.low, np.float64), np.asarray(box.high, np.float64)
            ok = bool(high.size and np.isfinite(high).all() and (high > 0).all()
                      and (high == high[0]).all() and (low == -high).all())
        if not ok:
            raise ValueError(f"{cls.name} needs a Box(-R, R, (points * d,)) action space of floats "
                             f"(points of the ball of radius R), not {space}")
        assert box is not None
        return {"radius": float(box.high[0]), "dim": max(box.shape[0] // cls.points_per_round, 1)}

    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        """The ball and the declared loss constants, read off the env's public description
        of its setting (``env.unwrapped.setting``)."""
        setting = getattr(env.unwrapped, "setting", None) or {}
        keys = ("dim", "radius", "points", "loss_bound", "lipschitz", "strong_convexity",
                "smoothness")
        if not all(k in setting for k in keys):
            raise ValueError(f"env: {cls.name} needs a bandit convex optimisation env "
                             f"(LDPBCO-v0 or LDPMultiPointBCO-v0)")
        out = {k: setting[k] for k in keys}
        out["dim"], out["points"] = int(out["dim"]), int(out["points"])
        for k in keys[3:]:
            out[k] = float(out[k])
        out["radius"] = float(out["radius"])
        out["loss_noise"] = _release_noise(env)
        return out

    def _make_action_space(self) -> spaces.Space:
        self._check_params(**self._given)
        box = spaces.Box(-self.radius, self.radius, (self.points * self.dim,), np.float64)
        str(box)  # gymnasium fills low_repr / high_repr on first str(): not inside a refused call
        return box

    def _check_params(self, dim: Any, radius: Any, points: Any, loss_bound: Any, lipschitz: Any,
                      strong_convexity: Any, smoothness: Any, loss_noise: Any) -> None:
        self.loss_noise = check_real("loss_noise", loss_noise, low=0.0, low_open=False)
        self.dim = check_int("dim", dim)
        self.radius = check_real("radius", radius, low=0.0)
        self.points = self.points_per_round if points is None else check_int("points", points)
        if self.points != self.points_per_round:
            raise ValueError(f"points: {self.name} plays {self.points_per_round} point(s) per "
                             f"round, got points={self.points}")
        self.loss_bound = check_real("loss_bound", loss_bound, low=0.0)
        self.lipschitz = check_real("lipschitz", lipschitz, low=0.0)
        self.strong_convexity = check_real("strong_convexity", strong_convexity, low=0.0,
                                           low_open=False)
        if isinstance(smoothness, numbers.Real) and not isinstance(smoothness, (bool, np.bool_)) \
                and smoothness == math.inf:
            self.smoothness = math.inf
        else:
            self.smoothness = check_real("smoothness", smoothness, low=0.0)
        self._check_algorithm()
        self._schedule()

    @property
    def loss_range(self) -> float:
        """The bound the one-point schedules are tuned for, as Zheng et al.'s Thm 3 tunes the
        black box under their Alg 1.

        It is B, plus ``loss_noise sqrt(2 ln(2T))`` when a release adds noise to the loss. A
        released loss stays within it but for probability 1/T.
        """
        return self.loss_bound + self.loss_noise * math.sqrt(2.0 * math.log(2.0 * self.rounds))

    @property
    def loss_cap(self) -> float:
        """What an observed loss is clipped to before it is learned from: B, plus 40 sd of a
        release's noise.

        No released loss reaches it but with probability below 1e-300. The clip keeps every
        finite input, 1e308 included, from making an action or the state non-finite.
        """
        return self.loss_bound + 40.0 * self.loss_noise

    def _observe(self, obs, actions, rewards, next_obs):
        cap = self.loss_cap
        self._learn(obs, actions, np.clip(rewards, -cap, cap), np.clip(next_obs, -cap, cap))

    @abstractmethod
    def _learn(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
               next_obs: np.ndarray) -> None:
        """Learn from a round whose losses (``rewards``, ``next_obs``) lie in
        ``[-loss_cap, loss_cap]``."""
        raise NotImplementedError

    @property
    def rounds(self) -> int:
        """The horizon T, which every schedule here uses."""
        horizon = getattr(self, "horizon", None)
        if horizon is None:
            raise ValueError(f"{self.name} needs horizon (the number of rounds T)")
        return int(horizon)

    def _check_algorithm(self) -> None:
        """Refuse losses the algorithm is not made for, with one clear error naming the parameter."""

    @abstractmethod
    def _schedule(self) -> None:
        """Compute the schedule's constants from the horizon and the declared constants."""
        raise NotImplementedError

    def _init_state(self, n: int) -> None:
        self.u = np.zeros((n, self.dim))   # this round's unit vectors (zero before the first act)
        self.t = 0                         # rounds observed (every run advances together)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, radius={self.radius:g}, "
                f"horizon={self.horizon}, num_envs={self.num_envs})")


class _SchedulePicker(BCOAgent):
    """A ``schedule`` argument: ``convex``, ``strongly_convex`` (needs mu > 0) or ``auto``."""

    eta: float  # the constant step of the convex schedule (set by _schedule)

    def __init__(self, *, schedule: str = "auto", **kwargs: Any):
        if not isinstance(schedule, str) or schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        self.schedule_arg = schedule
        super().__init__(**kwargs)

    def _check_algorithm(self) -> None:
        if self.schedule_arg == "strongly_convex" and self.strong_convexity == 0.0:
            raise ValueError("schedule='strongly_convex' needs strong_convexity > 0")
        self.schedule = ("strongly_convex" if self.strong_convexity > 0 else "convex") \
            if self.schedule_arg == "auto" else self.schedule_arg

    def step_size(self, t: int) -> float:
        """eta_t of round t (1-based): ``1/(mu t)`` strongly convex, the constant eta otherwise."""
        return 1.0 / (self.strong_convexity * t) if self.schedule == "strongly_convex" else self.eta


class _PlaysWorld(BCOAgent):
    """Agents that also play blocks of an :class:`~ldp_gym.protocols.EvaluatesBlocks` setting in
    one compiled kernel (``block_play = PLAYS_EVALUATED``, :meth:`play_world`): the runner's
    block path. A subclass names its kernel (``_block``) and gives its state and rule
    (:meth:`_block_state`, :meth:`_block_rule`)."""

    block_play = BlockPlay.PLAYS_EVALUATED
    _block: ClassVar[Any]

    @abstractmethod
    def _block_state(self) -> tuple:
        """The kernel's ``state`` argument: the agent's arrays, updated in place."""
        raise NotImplementedError

    @abstractmethod
    def _block_rule(self) -> tuple:
        """The kernel's ``rule`` argument: the agent's constants and its round count."""
        raise NotImplementedError

    def play_world(self, world: np.ndarray, round_kernel: Any,
                   release: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play ``len(world)`` rounds of N runs in one compiled kernel: act, the setting's
        compiled round (``round_kernel``, :class:`~ldp_gym.protocols.RoundKernel`), the
        release's compiled feedback (``release``, :class:`~ldp_gym.protocols.ReleaseKernel`),
        observe. With ``release`` None the feedback is the env's. The rounds are bitwise those
        played by ``act``, the env's ``step`` under the release's wrapper, and ``observe``. The
        unit vectors are drawn ahead from the agent's stream in one call, which gives the same
        numbers.

        Returns:
            ``(regrets, projected, seen)``: the instantaneous regrets (L, N), the env's
            ``projected`` flags (L, N) and what the learner saw of the last round (N, 1 + k):
            the reward, then the observation.

        Raises:
            ValueError: an action the env's ``step`` or ``observe`` refuses, as they would. The
                rounds before it are played and learned from.
        """
        length, n, k = int(world.shape[0]), self._n, self.points
        regrets, flags = np.empty((length, n)), np.empty((length, n), dtype=bool)
        mech, seen = np.zeros((length, n)), np.zeros((n, 1 + k))
        x = np.empty((n, k * self.dim))
        if release is None:
            feedback, params, noise = round_kernel.feedback, _NO_PARAMS, np.empty((length, 0))
        else:
            feedback, params, noise = release.feedback, release.params, release.noise
        rk = round_kernel
        sides = (world, rk.args, params, noise, rk.rewards, rk.losses, rk.regret, rk.projected,
                 seen, mech, regrets, flags)
        args = (draw_normals(self.rng, length * n * self.dim).reshape(length, n, self.dim),
                self._block_state(),
                self._block_rule(), rk.play, feedback, sides, x)
        done = _block_kernel(type(self)._block, args)(*args)
        self.t += done
        if release is not None:
            release.record(mech[:done])
        if done < length:   # the error of round-by-round play
            check_actions(self.action_space, x, n)
            raise AssertionError("the block kernel refused an action the checks accept")
        return regrets, flags, seen


class _GradientDescent(_SchedulePicker, _PlaysWorld):
    """FKM and ADX: gradient descent on y from sphere sampling around it. On the block path
    :func:`_gd_block` plays their rounds."""

    _block = staticmethod(_gd_block)
    rho: float
    y: np.ndarray
    _cap: float
    _gain: float

    def _block_state(self) -> tuple:
        return self.y, self.u

    def _block_rule(self) -> tuple:
        mu = self.strong_convexity if self.schedule == "strongly_convex" else 0.0
        return (float(self.rho), int(self.t), float(mu), float(self.eta), float(self._gain),
                float(self._cap), float(self.loss_cap), float(self.radius), self.points == 2)


# =========================================================================== one point


class FKM(_GradientDescent):
    """FKM: the bandit gradient descent of Flaxman, Kalai and McMahan 2005, with one-point sphere sampling.

    Algorithm BGD of Flaxman, Kalai and McMahan (2005), "Online convex optimization in
    the bandit setting: gradient descent without a gradient", batched over runs. With
    y_1 = 0, every round draws u_t uniform on the unit sphere and plays
    ``x_t = y_t + rho u_t``. From the loss f_t(x_t) = -reward it forms the one-point
    estimate ``g_t = (d / rho) f_t(x_t) u_t``. By their Lemma 1 this is unbiased for the
    gradient of the smoothed loss E_v f_t(y + rho v), v uniform in the unit ball. It
    steps ``y_{t+1} = Proj_{(1 - xi) X}(y_t - eta_t g_t)``, so that x_t stays in X:
    X contains the ball of radius r = R, and xi = rho / r.

    The ``schedule`` argument picks the schedule. Its default, ``auto``, picks the strongly
    convex one when mu > 0:

    * ``convex``: their Theorem 2 for L-Lipschitz losses, the T^{3/4} bound, with
      their C = B, L = G and r = R for the ball. It takes
      ``rho = T^{-1/4} sqrt(R r d B / (3 (G r + B)))``, ``xi = rho / r`` and their step
      ``nu = R / (B sqrt(T))`` on ``f_t(x_t) u_t``, that is ``eta = nu rho / d`` on g_t.
      The expected regret is at most ``2 T^{3/4} sqrt(3 R d B (G + B / r))``.
    * ``strongly_convex``, for mu > 0: ``eta_t = 1/(mu t)``, as in Hazan, Agarwal and Kale
      2007, and ``rho = ((d B)^2 (1 + ln T) / (3 mu G T))^{1/3}``, ``xi = rho / r``. This
      rho balances the terms ``(d B / rho)^2 (1 + ln T) / (2 mu)`` and ``3 G rho T`` of the
      regret of that step on the smoothed losses. The regret is O(T^{2/3}), the one-point
      strongly convex rate of Agarwal, Dekel and Xiao (2010) that Zheng et al. (2020),
      Table 1, privatise.

    In both, ``rho`` is capped at ``r / 2``, so ``xi <= 1/2``. The theorems need T large
    enough that their rho is below r anyway.

    Privacy: none; it is an ordinary non-private agent. Under the Gaussian reward wrapper,
    :func:`~ldp_gym.wrappers.bco.one_point` with B from the env, it is Zheng et al.
    (2020)'s Alg 1 for BCO: (epsilon, delta)-LDP per user's loss, by their Thm 2.
    :meth:`from_env` then tunes the schedule for the released losses, through
    ``loss_noise``. The regret is O~(T^{3/4}/eps) convex and O~(T^{2/3}/eps) strongly
    convex, as in their Table 1.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import FKM
        >>> agent = FKM(dim=2, radius=1.0, loss_bound=2.0, lipschitz=3.0, horizon=10_000,
        ...             schedule="convex", seed=0)
        >>> round(agent.rho, 4), round(agent.xi, 4), agent.schedule
        (0.0516, 0.0516, 'convex')
        >>> x = agent.act(np.zeros(1))                  # one point of the ball
        >>> bool(np.linalg.norm(x) <= 1.0), x.shape
        (True, (2,))
        >>> agent.observe(np.zeros(1), x, -float(x @ x), np.zeros(1))
        >>> bool(np.linalg.norm(agent.y) <= 1.0 - agent.xi)
        True
    """

    name = "FKM"

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"schedule": "convex"}]

    def _schedule(self) -> None:
        T, d, R, B, G = self.rounds, self.dim, self.radius, self.loss_range, self.lipschitz
        r = R  # the ball contains r B with r = R
        if self.schedule == "convex":
            rho = T ** -0.25 * math.sqrt(R * r * d * B / (3.0 * (G * r + B)))
        else:
            rho = ((d * B) ** 2 * (1.0 + math.log(T)) / (3.0 * self.strong_convexity * G * T)) \
                ** (1.0 / 3.0)
        self.rho = min(rho, 0.5 * r)
        self.xi = self.rho / r
        self.nu = R / (B * math.sqrt(T))
        self.eta = self.nu * self.rho / d
        self._cap = (1.0 - self.xi) * R
        self._gain = d / self.rho

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        self.y = np.zeros((n, self.dim))   # the gradient-descent point, in (1 - xi) X

    def _act(self, obs: np.ndarray) -> np.ndarray:
        self.rng.standard_normal(out=self.u)
        x = np.empty_like(self.y)
        _sphere_play(self.u[None], 0, self.rho, self.y, self.u, x, self.radius)  # x = y + rho u
        return x

    def _learn(self, obs, actions, rewards, next_obs):
        self.t += 1
        # y <- Proj(y - eta_t (d/rho) f u), f = -reward
        _step_project(self.y, self.u, rewards, self.step_size(self.t) * self._gain, self._cap)


class _BarrierAgent(_PlaysWorld):
    """Ellipsoidal sampling around x_t with the barrier ``R(x) = -ln(R^2 - ||x||^2)`` of the ball,
    a nu-self-concordant barrier with nu = 1; x_1 = argmin R = 0. On the block path
    :func:`_barrier_block` plays its rounds."""

    _block = staticmethod(_barrier_block)

    #: self-concordance parameter of the ball's barrier
    nu: ClassVar[float] = 1.0

    def _check_algorithm(self) -> None:
        if self.smoothness == math.inf:
            raise ValueError(f"smoothness: {self.name} needs beta-smooth losses (finite "
                             f"smoothness), got inf")

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        self.x = np.zeros((n, self.dim))   # the FTRL point, strictly inside the ball
        self.w = np.zeros((n, self.dim))   # this round's g_t / f_t(y_t)

    def _explore(self, lam: float, scale: float) -> np.ndarray:
        """Draw u_t and play ``y_t = x_t + scale M^{-1/2} u_t``; keep ``w = (d/scale) M^{1/2} u_t``,
        ``M = grad^2 R(x_t) + lam I``."""
        self.rng.standard_normal(out=self.u)
        y = np.empty_like(self.x)
        _ellipsoid(self.x, self.u, True, self.radius, lam, scale, self.dim / scale, y, self.w)
        return y


class SahaTewari(_BarrierAgent):
    """Saha-Tewari: FTRL with the ball's barrier and ellipsoidal one-point estimates, for convex
    beta-smooth losses, from Saha and Tewari 2011.

    Algorithm 1 of Saha and Tewari (2011), "Improved regret guarantees for online smooth
    convex optimization with bandit feedback", batched over runs. It uses the SCRiBLe-style
    sampling of Abernethy, Hazan and Rakhlin 2008, with a time-invariant exploration radius
    delta. With the barrier ``R(x) = -ln(R^2 - ||x||^2)`` (nu = 1) and x_1 = 0:

    * ``A_t = delta (grad^2 R(x_t))^{-1/2}``, ``grad^2 R(x) = (2/s) I + (4/s^2) x x^T``,
      ``s = R^2 - ||x||^2``. The inverse square root has a closed form,
      :func:`ellipsoid_point`;
    * play ``y_t = x_t + A_t u_t``, u_t uniform on the unit sphere. y_t is inside X, as the
      Dikin ellipsoid of radius delta <= 1 is;
    * ``g_t = d f_t(y_t) A_t^{-1} u_t`` with f_t(y_t) = -reward;
    * ``x_{t+1} = argmin_x eta sum_{s<=t} g_s^T x + R(x)``, in closed form for the ball:
      ``x_{t+1} = -eta S_t R^2 / (1 + sqrt(1 + eta^2 ||S_t||^2 R^2))``, S_t = sum g_s.

    Schedule: delta and eta of order T^{-1/6} and T^{-2/3}, as in their main theorem, for
    regret O~(T^{2/3}). The constants are this implementation's. They balance the three
    terms of its regret decomposition on the ball: ``nu ln T / eta`` from FTRL,
    ``2 eta T (d B / delta)^2`` from the local norms of g_t, and ``beta R^2 delta^2 T / 2``
    from smoothing, since ``||(grad^2 R)^{-1}|| <= R^2 / 2``::

        delta = min(1, (2 sqrt(2) d B sqrt(nu ln T / T) / (beta R^2))^{1/3})
        eta   = delta sqrt(nu ln T / (2 T)) / (d B)

    with ln T floored at 1.

    Privacy: none; it is an ordinary non-private agent. Under the Gaussian reward wrapper,
    :func:`~ldp_gym.wrappers.bco.one_point` with B from the env, it is Zheng et al.
    (2020)'s Alg 1 with this black box, as in their Corollary 4. :meth:`from_env` then
    tunes the schedule for the released losses, through ``loss_noise``. It is
    (epsilon, delta)-LDP per user's loss by Thm 2, with regret O~(T^{2/3}/eps) for convex
    smooth losses.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import SahaTewari
        >>> agent = SahaTewari(dim=3, radius=1.0, loss_bound=4.0, lipschitz=4.0,
        ...                    smoothness=2.0, horizon=5000, num_envs=4, seed=0)
        >>> theta = np.array([0.5, 0.0, -0.3])
        >>> obs = np.zeros((4, 1))
        >>> for _ in range(5000):
        ...     y = agent.act(obs)
        ...     agent.observe(obs, y, -((y - theta) ** 2).sum(axis=1), obs)
        >>> bool((np.linalg.norm(agent.x, axis=1) < 1.0).all())    # strictly inside
        True
        >>> bool(np.linalg.norm(agent.x.mean(axis=0) - theta) < 0.3)
        True
    """

    name = "Saha-Tewari"

    def _schedule(self) -> None:
        T, d, R, B = self.rounds, self.dim, self.radius, self.loss_range
        log_t = max(math.log(T), 1.0)
        self.delta = min(1.0, (2.0 * math.sqrt(2.0) * d * B * math.sqrt(self.nu * log_t / T)
                               / (self.smoothness * R * R)) ** (1.0 / 3.0))
        self.eta = self.delta * math.sqrt(self.nu * log_t / (2.0 * T)) / (d * B)

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        self.grad_sum = np.zeros((n, self.dim))

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return self._explore(0.0, self.delta)

    def _learn(self, obs, actions, rewards, next_obs):
        self.t += 1
        _saha_tewari_update(self.grad_sum, self.w, rewards, self.eta, self.radius, self.x)

    def _block_state(self) -> tuple:
        return self.x, self.u, self.w, self.grad_sum, np.zeros(1, dtype=np.int64)

    def _block_rule(self) -> tuple:
        return (_SAHA_TEWARI, int(self.t), float(self.delta), float(self.eta), 0.0, 0,
                float(self.loss_cap), float(self.radius))


class HazanLevy(_BarrierAgent):
    """Hazan-Levy: FTRL with time-shrinking ellipsoidal sampling, for mu-strongly convex and
    beta-smooth losses, from Hazan and Levy 2014.

    Algorithm 1 of Hazan and Levy (2014), "Bandit convex optimization: towards tight
    bounds", batched over runs. It uses the barrier ``R(x) = -ln(R^2 - ||x||^2)`` of the
    ball (nu = 1) and x_1 = argmin R = 0:

    * ``B_t = (grad^2 R(x_t) + eta mu t I)^{-1/2}``, in closed form: the Hessian is
      ``(2/s) I + (4/s^2) x x^T``, s = R^2 - ||x||^2, as in :func:`ellipsoid_point`;
    * play ``y_t = x_t + B_t u_t``, u_t uniform on the unit sphere. y_t is inside X: the
      Dikin ellipsoid of radius 1 is, and B_t only shrinks it;
    * ``g_t = d f_t(y_t) B_t^{-1} u_t`` with f_t(y_t) = -reward;
    * ``x_{t+1} = argmin_x sum_{s<=t} (g_s^T x + (mu/2) ||x - x_s||^2) + R(x) / eta``.
      For the ball this is exact and one-dimensional: with ``c = sum_s (g_s - mu x_s)``,
      ``x_{t+1} = -r c / ||c||`` where r in [0, R) solves
      ``mu t r + (2/eta) r / (R^2 - r^2) = ||c||``. The left side is increasing and convex
      in r. Newton's method starts from an upper bound of the root: the smaller of
      ``||c|| / (mu t)`` and the barrier-only root. It decreases monotonically to the root,
      so every iterate, and x_{t+1}, stays strictly inside the ball.

    Schedule: their main theorem's step, of order sqrt(ln T / T) / d, with L = B:
    ``eta = sqrt((nu + 2 beta / mu) ln T / (2 d^2 B^2 T))``. It is the step of three
    independent public implementations. With it the expected regret is at most
    ``4 d B sqrt((nu + 2 beta/mu) T ln T)`` plus lower-order terms. ln T is floored at 1.

    Privacy: none; it is an ordinary non-private agent. Under the Gaussian reward wrapper,
    :func:`~ldp_gym.wrappers.bco.one_point` with B from the env, it is Zheng et al.
    (2020)'s Alg 1 with this black box, as in their Corollary 4. :meth:`from_env` then
    tunes the schedule for the released losses, through ``loss_noise``. It is
    (epsilon, delta)-LDP per user's loss by Thm 2, with regret O~(sqrt(T)/eps) for
    strongly convex smooth losses.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import HazanLevy
        >>> agent = HazanLevy(dim=3, radius=1.0, loss_bound=4.0, lipschitz=4.0,
        ...                   strong_convexity=2.0, smoothness=2.0, horizon=5000, seed=0)
        >>> theta = np.array([0.5, 0.0, -0.3])
        >>> for _ in range(5000):
        ...     y = agent.act(np.zeros(1))
        ...     agent.observe(np.zeros(1), y, -float(((y - theta) ** 2).sum()), np.zeros(1))
        >>> bool(np.linalg.norm(agent.x) < 1.0)                    # strictly inside
        True
        >>> bool(np.linalg.norm(agent.x[0] - theta) < 0.3)
        True
    """

    name = "Hazan-Levy"
    #: Newton steps of the FTRL step at most (it stops at the root, to rounding; a handful do)
    newton_iterations: ClassVar[int] = 50

    def _check_algorithm(self) -> None:
        if self.strong_convexity == 0.0:
            raise ValueError(f"strong_convexity: {self.name} needs mu-strongly convex losses "
                             f"(strong_convexity > 0), got 0")
        super()._check_algorithm()

    def _schedule(self) -> None:
        T, d, B = self.rounds, self.dim, self.loss_range
        log_t = max(math.log(T), 1.0)
        self.eta = math.sqrt((self.nu + 2.0 * self.smoothness / self.strong_convexity) * log_t
                             / (2.0 * d * d * B * B * T))

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        self.c = np.zeros((n, self.dim))   # sum_s (g_s - mu x_s)
        self.newton_steps = 0              # Newton steps the last FTRL step took (most over runs)
        self._newton = np.zeros(1, dtype=np.int64)  # the block kernel's newton_steps

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return self._explore(self.eta * self.strong_convexity * (self.t + 1), 1.0)

    def _learn(self, obs, actions, rewards, next_obs):
        self.t += 1
        self.newton_steps = _hazan_levy_update(
            self.c, self.w, rewards, self.strong_convexity, self.strong_convexity * self.t,
            self.eta, self.radius, self.newton_iterations, self.x)

    def _block_state(self) -> tuple:
        return self.x, self.u, self.w, self.c, self._newton

    def _block_rule(self) -> tuple:
        return (_HAZAN_LEVY, int(self.t), 1.0, float(self.eta), float(self.strong_convexity),
                int(self.newton_iterations), float(self.loss_cap), float(self.radius))

    @override
    def play_world(self, world: np.ndarray, round_kernel: Any,
                   release: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._newton[0] = self.newton_steps
        try:
            return super().play_world(world, round_kernel, release)
        finally:
            self.newton_steps = int(self._newton[0])

    play_world.__doc__ = _PlaysWorld.play_world.__doc__


# =========================================================================== two points


class TwoPointGD(_GradientDescent):
    """ADX: projected gradient descent with two-point feedback, from Agarwal, Dekel and Xiao 2010.

    The two-point algorithm of Agarwal, Dekel and Xiao (2010), "Optimal algorithms for
    online convex optimization with multi-point bandit feedback", as Algorithm 4 of
    Zheng et al. (2020), appendix C. It is batched over runs. With y_1 = 0, every round
    draws u_t uniform on the unit sphere and plays the two points
    ``x_{t,1} = y_t + rho u_t`` and ``x_{t,2} = y_t - rho u_t``. The action is
    ``[x_{t,1}, x_{t,2}]``, of shape (2d,). From the difference of their losses,
    ``D_t = f_t(x_{t,1}) - f_t(x_{t,2}) = next_obs[:, 0] - next_obs[:, 1]``, it forms
    ``g_t = (d / (2 rho)) D_t u_t`` and steps ``y_{t+1} = Proj_{(1 - xi) X}(y_t - eta_t g_t)``.
    It never reads the reward: behind the two-point privacy wrapper the observation is
    the centred pair (D/2, -D/2) of the private release and the reward is 0.

    Schedule, from ADX as in Zheng et al. 2020, Alg 2 and Thm 6: ``eta = 1/sqrt(T)``,
    ``rho = ln T / T``, ``xi = rho / r``, with r = R as X contains the ball of radius R.
    The strongly convex schedule is ``eta_t = 1/(mu t)`` with the same rho and xi.
    ``schedule`` picks it; its default, ``auto``, picks it when mu > 0. ln T is floored at
    1 (T < 3) and rho capped at r / 2.

    Privacy: none; it is an ordinary non-private agent. Behind the two-point release
    wrapper it is Zheng et al. (2020)'s Alg 2, (epsilon, delta)-LDP per user's pair of
    losses by their Thm 5. That wrapper, ``VectorTwoPointGaussian``, releases
    ``f(x_1) - f(x_2)`` clipped to ``G ||x_1 - x_2||`` plus ``n^T (x_1 - x_2)``,
    n ~ N(0, sigma^2 I_d), sigma = 2G sqrt(2 ln(1.25/delta))/eps. The regret is
    O~(d^3 sqrt(T)/eps^2) convex and O~(d^3 ln T/(mu eps^2)) strongly convex, by Thm 6.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import TwoPointGD
        >>> agent = TwoPointGD(dim=2, radius=1.0, points=2, horizon=10_000,
        ...                    schedule="convex", seed=0)
        >>> agent.eta, round(agent.rho, 6), round(agent.xi, 6)
        (0.01, 0.000921, 0.000921)
        >>> a = agent.act(np.zeros(2))
        >>> x1, x2 = a[:2], a[2:]                     # y + rho u and y - rho u
        >>> bool(np.allclose((x1 + x2) / 2, agent.y[0])), round(float(np.linalg.norm(x1 - x2)), 6)
        (True, 0.001842)
        >>> f = lambda x: float(x @ x)
        >>> agent.observe(np.zeros(2), a, 0.0, np.array([f(x1), f(x2)]))
    """

    name = "ADX"
    test_env = "LDPMultiPointBCO-v0"
    points_per_round = 2

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"schedule": "convex"}]

    def _schedule(self) -> None:
        T, R = self.rounds, self.radius
        r = R
        self.eta = 1.0 / math.sqrt(T)
        self.rho = min(max(math.log(T), 1.0) / T, 0.5 * r)
        self.xi = self.rho / r
        self._cap = (1.0 - self.xi) * R
        self._gain = self.dim / (2.0 * self.rho)

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        self.y = np.zeros((n, self.dim))   # the gradient-descent point, in (1 - xi) X
        self._diff = np.zeros(n)           # work buffer: this round's loss differences

    def _act(self, obs: np.ndarray) -> np.ndarray:
        self.rng.standard_normal(out=self.u)
        out = np.empty((self.u.shape[0], 2 * self.dim))
        _sphere_play(self.u[None], 0, self.rho, self.y, self.u, out, self.radius)  # y +- rho u
        return out

    def _learn(self, obs, actions, rewards, next_obs):
        if next_obs.shape[1:] != (2,):
            raise ValueError(f"next_obs must hold the two losses of the round (or the centred pair "
                             f"of their private difference), shape (2,) per run, got "
                             f"{next_obs.shape[1:]}")
        self.t += 1
        # D_t = f(x_{t,1}) - f(x_{t,2}), in float64; y <- Proj(y - eta_t (d/(2 rho)) D_t u)
        np.subtract(next_obs[:, 0], next_obs[:, 1], out=self._diff)
        _step_project(self.y, self.u, self._diff, -self.step_size(self.t) * self._gain, self._cap)


AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (FKM, SahaTewari, HazanLevy, TwoPointGD)}
