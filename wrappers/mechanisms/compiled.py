"""The mechanisms' transforms, compiled (numba): one implementation for every path.

Every clipping, snapping and noise addition of the local-DP messages is written
here once, as a function of one vector and the noise drawn for it. The
mechanisms (:class:`~ldp_gym.wrappers.mechanisms.GaussianStatistics`,
:class:`~ldp_gym.wrappers.mechanisms.L2BallMechanism`) apply them to batches
through the ``*_rows`` functions, and the agents' compiled rounds call them per
user. So a message is bitwise the same whichever path built it, and ``agents/``
holds no clipping or noise formula.

Noise is never drawn here: the mechanisms draw it from their own streams and
pass it in (uniforms, for the shuffle and distributed users' randomisers). For the
Gaussian parts it is already on the float-safe grid.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms.compiled import release_vector
    >>> out = np.empty(2)
    >>> release_vector(np.array([3.0, 4.0]), 1.0, np.zeros(2), 2.0**-40, out)
    >>> out.tolist()   # (0.6, 0.8) snapped to the grid 2**-40
    [0.6000000000003638, 0.8000000000001819]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

__all__ = ["blanket_bit", "blanket_rows", "clip_l2_into", "polya_count", "secagg_message",
           "secagg_rows", "clip_scalar", "l2_ball", "l2_ball_rows",
           "release_outer",
           "release_outer_rows", "release_vector", "release_vector_rows", "snap_add"]

_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _l2_factor(x, bound):
    """``min(1, bound / ||x||)``: the factor of the l2 clipping of every l2 sensitivity here."""
    sq = 0.0
    for j in range(x.shape[0]):
        sq += x[j] * x[j]
    return min(1.0, bound / math.sqrt(max(sq, 1e-300)))


@njit(**_JIT)
def clip_l2_into(x, bound, out):
    """``out = x min(1, bound / ||x||)``: the l2 clipping of every l2 sensitivity here."""
    f = _l2_factor(x, bound)
    for j in range(x.shape[0]):
        out[j] = x[j] * f


@njit(**_JIT)
def clip_scalar(x, bound):
    """``x`` clipped to ``[-bound, bound]``."""
    return min(max(x, -bound), bound)


@njit(**_JIT)
def snap_add(value, noise, grid):
    """One float-safe Gaussian coordinate: ``value`` snapped to the power-of-two ``grid`` plus
    ``noise`` already on that grid, exact in float64. ``value * (1 / grid)`` is exactly
    ``value / grid`` for a power of two, and lets the compiler take the reciprocal out of
    the callers' loops."""
    return np.rint(value * (1.0 / grid)) * grid + noise + 0.0  # + 0.0: no -0.0


@njit(**_JIT)
def release_vector(v, bound, noise, grid, out):
    """``out = snap(clip_l2(v, bound)) + noise``: a vector part of a Gaussian message."""
    clip_l2_into(v, bound, out)
    for j in range(out.shape[0]):
        out[j] = snap_add(out[j], noise[j], grid)


@njit(**_JIT)
def release_outer(x, bound, noise, grid, out):
    """``out = x x^T + W`` for x clipped to the l2 ball ``bound``: the upper triangle (row-major,
    ``noise`` has its d(d+1)/2 entries) snapped to ``grid`` plus noise, mirrored."""
    d = x.shape[0]
    f = _l2_factor(x, bound)  # x clipped to the l2 ball, coordinate by coordinate (no copy)
    idx = 0
    for i in range(d):
        for j in range(i, d):
            val = snap_add((x[i] * f) * (x[j] * f), noise[idx], grid)
            out[i, j] = val
            out[j, i] = val
            idx += 1


@njit(**_JIT)
def _l2_ball_target(xc, norm, direction, j):
    """Coordinate j of the direction the l2-ball mechanism keeps: x's, or a uniform one for 0."""
    return xc[j] / max(norm, 1e-300) if norm > 0 else direction[j]


@njit(**_JIT)
def l2_ball(x, radius, output_radius, p_keep_side, direction, u_sign, u_side, sphere, xc, out):
    """Duchi et al.'s l2-ball mechanism on one vector with its drawn randomness: ``direction``
    and ``sphere`` standard normals (d,), ``u_sign`` and ``u_side`` uniforms.

    ``x`` is clipped to ``radius`` and written to ``xc``, the mechanism's input. With
    probability ``1/2 + ||x||/(2 radius)`` keep its direction, or a uniform one for x = 0,
    else flip it. With probability ``p_keep_side`` report uniformly on the hemisphere of
    radius ``output_radius`` facing it, else on the other one.
    """
    d = x.shape[0]
    clip_l2_into(x, radius, xc)
    norm = 0.0
    for j in range(d):
        norm += xc[j] * xc[j]
    norm = math.sqrt(norm)
    dnorm = 0.0
    for j in range(d):
        tj = _l2_ball_target(xc, norm, direction, j)
        dnorm += tj * tj
    dnorm = math.sqrt(dnorm)
    p_plus = min(max(0.5 + norm / (2.0 * radius), 0.0), 1.0)
    sign = 1.0 if u_sign < p_plus else -1.0
    side = 1.0 if u_side < p_keep_side else -1.0
    znorm = 0.0
    for j in range(d):
        znorm += sphere[j] * sphere[j]
    znorm = math.sqrt(znorm)
    proj = 0.0
    for j in range(d):
        out[j] = sphere[j] / znorm
        proj += out[j] * (_l2_ball_target(xc, norm, direction, j) / dnorm * (sign * side))
    flip = -1.0 if proj < 0 else 1.0
    for j in range(d):
        out[j] = output_radius * (flip * out[j])


@njit(**_JIT)
def release_vector_rows(v, bound, noise, grid, out):
    """:func:`release_vector` on every row of v (M, d)."""
    for i in range(v.shape[0]):
        release_vector(v[i], bound, noise[i], grid, out[i])


@njit(**_JIT)
def release_outer_rows(x, bound, noise, grid, out):
    """:func:`release_outer` on every row of x (M, d); out (M, d, d)."""
    for i in range(x.shape[0]):
        release_outer(x[i], bound, noise[i], grid, out[i])


@njit(**_JIT)
def l2_ball_rows(x, radius, output_radius, p_keep_side, direction, u_sign, u_side, sphere, xc,
                 out):
    """:func:`l2_ball` on every row of x (M, d)."""
    for i in range(x.shape[0]):
        l2_ball(x[i], radius, output_radius, p_keep_side, direction[i], u_sign[i], u_side[i],
                sphere[i], xc[i], out[i])


@njit(**_JIT)
def blanket_bit(bit, u_blanket, u_bit, gamma):
    """The privacy blanket's message of ``bit``: with ``u_blanket < gamma`` a uniform bit
    (``u_bit < 1/2``), else the bit itself (Balle, Bell, Gascon and Nissim 2019)."""
    if u_blanket < gamma:
        return 1 if u_bit < 0.5 else 0
    return bit


@njit(**_JIT)
def blanket_rows(bits, u_blanket, u_bit, gamma, out):
    """:func:`blanket_bit` of every entry of flat arrays (``gamma`` one per entry)."""
    for j in range(bits.shape[0]):
        out[j] = blanket_bit(bits[j], u_blanket[j], u_bit[j], gamma[j])


@njit(**_JIT)
def polya_count(r, q, u):
    """The Polya(r, q) count at uniform ``u``, by inversion of its CDF:
    ``P(0) = (1 - q)^r``, ``P(k + 1) = P(k) q (k + r)/(k + 1)`` (mean ``r q/(1 - q)``).

    The CDF is summed in floating point, as numpy's samplers compute theirs: the law is exact
    only up to float rounding, and its tail is cut where the float CDF stops growing. The
    loop stops there too, so a ``u`` the float CDF cannot reach returns a finite count.
    """
    p = math.exp(r * math.log1p(-q))
    cdf, k = p, 0
    while cdf < u:
        p *= q * (k + r) / (k + 1)
        k += 1
        grown = cdf + p
        if grown == cdf:  # p underflowed, or is below the CDF's float resolution
            break
        cdf = grown
    return k


@njit(**_JIT)
def secagg_message(x, size, g, q, u_round, u_plus, u_minus):
    """One user's message to secure aggregation, before the reduction mod m (Chowdhury and
    Zhou 2023, Alg. 2): ``x g`` rounded without bias (up if ``u_round`` is below the fraction),
    plus ``P1 - P2``, each Polya(1/size, q) (:func:`polya_count` at ``u_plus``, ``u_minus``).
    The shares of a batch of ``size`` users sum to discrete Laplace noise of ratio q."""
    xg = x * g
    low = math.floor(xg)
    rounded = int(low) + (1 if u_round < xg - low else 0)
    r = 1.0 / size
    return rounded + polya_count(r, q, u_plus) - polya_count(r, q, u_minus)


@njit(**_JIT)
def secagg_rows(x, size, g, q, m, u, out):
    """:func:`secagg_message` mod ``m`` of every entry of flat arrays, three uniforms each."""
    for j in range(x.shape[0]):
        out[j] = secagg_message(x[j], size[j], g[j], q[j], u[3 * j], u[3 * j + 1],
                                u[3 * j + 2]) % m[j]
