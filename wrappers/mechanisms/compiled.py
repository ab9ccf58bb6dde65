"""The mechanisms' transforms, compiled (numba): one implementation for every path.

Every clipping, snapping and noise addition of the local-DP messages is written
here once, as a function of one vector and the noise drawn for it. The
mechanisms (:class:`~ldp_gym.wrappers.mechanisms.GaussianStatistics`,
:class:`~ldp_gym.wrappers.mechanisms.L2BallMechanism`) apply them to batches
through the ``*_rows`` functions, and the agents' compiled rounds call them per
user. So a message is bitwise the same whichever path built it, and ``agents/``
holds no clipping or noise formula.

Noise is never drawn here: the mechanisms draw it from their own streams and
pass it in (words of random bits, for the shuffle and distributed users' randomisers, which
turn them into exact integer samples). For the Gaussian parts it is already on the
float-safe grid.

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

__all__ = ["RATIO_DENOMINATOR", "bernoulli_exp", "blanket_bit", "blanket_rows", "clip_l2_into",
           "geometric_exp", "next_bits", "polya_count", "secagg_message", "secagg_rows",
           "uniform_below", "unit_uniform", "clip_scalar", "l2_ball", "l2_ball_rows",
           "release_outer",
           "release_outer_rows", "release_vector", "release_vector_rows", "snap_add"]

_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
#: the per-value helpers the kernels call in their loops, inlined into them
_INLINE: dict[str, Any] = {**_JIT, "inline": "always"}


@njit(**_INLINE)
def _l2_factor(x, bound):
    """``min(1, bound / ||x||)``: the factor of the l2 clipping of every l2 sensitivity here."""
    sq = 0.0
    for j in range(x.shape[0]):
        sq += x[j] * x[j]
    norm = math.sqrt(max(sq, 1e-300))
    return bound / norm if norm > bound else 1.0  # the division only where it clips


@njit(**_INLINE)
def clip_l2_into(x, bound, out):
    """``out = x min(1, bound / ||x||)``: the l2 clipping of every l2 sensitivity here."""
    f = _l2_factor(x, bound)
    for j in range(x.shape[0]):
        out[j] = x[j] * f


@njit(**_INLINE)
def clip_scalar(x, bound):
    """``x`` clipped to ``[-bound, bound]``."""
    return min(max(x, -bound), bound)


@njit(**_INLINE)
def snap_add(value, noise, grid):
    """One float-safe Gaussian coordinate: ``value`` snapped to the power-of-two ``grid`` plus
    ``noise`` already on that grid, exact in float64. ``value * (1 / grid)`` is exactly
    ``value / grid`` for a power of two, and lets the compiler take the reciprocal out of
    the callers' loops."""
    return np.rint(value * (1.0 / grid)) * grid + noise + 0.0  # + 0.0: no -0.0


@njit(**_INLINE)
def release_vector(v, bound, noise, grid, out, at=()):
    """``out = snap(clip_l2(v, bound)) + noise``: a vector part of a Gaussian message.

    ``at`` indexes the leading axes of ``noise`` and ``out``: a kernel passes its whole
    buffers and ``(round, run)``, and writes the message in place without a view. ``out``
    is float64, with the message's shape, and does not overlap ``v`` (``v`` itself is
    allowed)."""
    f = _l2_factor(v, bound)
    for j in range(v.shape[0]):
        out[at + (j,)] = snap_add(v[j] * f, noise[at + (j,)], grid)


@njit(**_INLINE)
def release_outer(x, bound, noise, grid, out, at=()):
    """``out = x x^T + W`` for x clipped to the l2 ball ``bound``: the upper triangle (row-major,
    ``noise`` has its d(d+1)/2 entries) snapped to ``grid`` plus noise, mirrored.

    ``at`` indexes the leading axes of ``noise`` and ``out``, as in :func:`release_vector`."""
    d = x.shape[0]
    f = _l2_factor(x, bound)  # x clipped to the l2 ball, coordinate by coordinate (no copy)
    idx = 0
    for i in range(d):
        for j in range(i, d):
            val = snap_add((x[i] * f) * (x[j] * f), noise[at + (idx,)], grid)
            out[at + (i, j)] = val
            out[at + (j, i)] = val
            idx += 1


@njit(**_INLINE)
def _l2_ball_target(xc, norm, direction, at, j):
    """Coordinate j of the direction the l2-ball mechanism keeps: x's, or a uniform one for 0."""
    return xc[at + (j,)] / max(norm, 1e-300) if norm > 0 else direction[at + (j,)]


@njit(**_INLINE)
def l2_ball(x, radius, output_radius, p_keep_side, direction, u_sign, u_side, sphere, xc, out,
            at=()):
    """Duchi et al.'s l2-ball mechanism on one vector with its drawn randomness: ``direction``
    and ``sphere`` standard normals (d,), ``u_sign`` and ``u_side`` uniforms.

    ``x`` is clipped to ``radius`` and written to ``xc``, the mechanism's input. With
    probability ``1/2 + ||x||/(2 radius)`` keep its direction, or a uniform one for x = 0,
    else flip it. With probability ``p_keep_side`` report uniformly on the hemisphere of
    radius ``output_radius`` facing it, else on the other one.

    ``at`` indexes the leading axes of ``direction``, ``sphere``, ``xc`` and ``out``, as in
    :func:`release_vector`: a kernel passes its whole buffers and ``(round, run)``.
    """
    d = x.shape[0]
    f = _l2_factor(x, radius)  # clip_l2_into, at an index
    for j in range(d):
        xc[at + (j,)] = x[j] * f
    norm = 0.0
    for j in range(d):
        norm += xc[at + (j,)] * xc[at + (j,)]
    norm = math.sqrt(norm)
    dnorm = 0.0
    for j in range(d):
        tj = _l2_ball_target(xc, norm, direction, at, j)
        dnorm += tj * tj
    dnorm = math.sqrt(dnorm)
    p_plus = min(max(0.5 + norm / (2.0 * radius), 0.0), 1.0)
    sign = 1.0 if u_sign < p_plus else -1.0
    side = 1.0 if u_side < p_keep_side else -1.0
    znorm = 0.0
    for j in range(d):
        znorm += sphere[at + (j,)] * sphere[at + (j,)]
    znorm = math.sqrt(znorm)
    proj = 0.0
    for j in range(d):
        out[at + (j,)] = sphere[at + (j,)] / znorm
        proj += out[at + (j,)] * (_l2_ball_target(xc, norm, direction, at, j) / dnorm
                                  * (sign * side))
    flip = -1.0 if proj < 0 else 1.0
    for j in range(d):
        out[at + (j,)] = output_radius * (flip * out[at + (j,)])


@njit(**_JIT)
def release_vector_rows(v, bound, noise, grid, out):
    """:func:`release_vector` on every row of v (M, d)."""
    for i in range(v.shape[0]):
        release_vector(v[i], bound, noise, grid, out, (i,))


@njit(**_JIT)
def release_outer_rows(x, bound, noise, grid, out):
    """:func:`release_outer` on every row of x (M, d); out (M, d, d)."""
    for i in range(x.shape[0]):
        release_outer(x[i], bound, noise, grid, out, (i,))


@njit(**_JIT)
def l2_ball_rows(x, radius, output_radius, p_keep_side, direction, u_sign, u_side, sphere, xc,
                 out):
    """:func:`l2_ball` on every row of x (M, d)."""
    for i in range(x.shape[0]):
        l2_ball(x[i], radius, output_radius, p_keep_side, direction, u_sign[i], u_side[i],
                sphere, xc, out, (i,))


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


#: The denominator of the exact samplers' ratios: ``exp(-s / RATIO_DENOMINATOR)``, s an integer.
RATIO_DENOMINATOR = 2**40
_MAX63 = 2**63 - 1


@njit(**_JIT)
def next_bits(words, cur):
    """The next 63 random bits of ``words`` (uint64) as an int64, at position ``cur[0]``.

    Once the words have run out it returns 0 and sets ``cur[1] = 1``: every sampler below
    then ends its loops at once, and its caller discards the result, gives the user's words
    back and calls again with more (so a sample's law never depends on where a buffer ended).
    """
    i = cur[0]
    if i >= words.shape[0]:
        cur[1] = 1
        return np.int64(0)
    cur[0] = i + 1
    return np.int64(words[i] >> np.uint64(1))


@njit(**_JIT)
def uniform_below(b, words, cur):
    """A uniform integer in ``[0, b)``, ``1 <= b <= 2^62``, exactly: 63 random bits, drawn
    again while they fall in the last ``2^63 mod b`` values (never for b a power of 2)."""
    if b < 1:
        raise ValueError("uniform_below: b must be >= 1")
    reject = (_MAX63 % b + 1) % b  # 2^63 mod b
    w = next_bits(words, cur)
    while w > _MAX63 - reject:
        w = next_bits(words, cur)
    return w % b


@njit(**_JIT)
def _bernoulli_exp_unit(num, den, words, cur):
    """Bernoulli(exp(-num/den)) for ``0 <= num <= den`` (:func:`bernoulli_exp`)."""
    k = 1
    while cur[1] == 0:
        if uniform_below(den, words, cur) >= num:  # Bernoulli(gamma) failed
            break
        if k > 1 and uniform_below(k, words, cur) != 0:  # Bernoulli(1/k) failed
            break
        k += 1
    return k % 2 == 1


@njit(**_JIT)
def bernoulli_exp(num, den, words, cur):
    """A Bernoulli(exp(-num/den)) draw, exactly, for integers ``num >= 0`` and ``den >= 1``.

    Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS
    2020), Alg. 1: for gamma = num/den in [0, 1], count k = 1, 2, ... while
    Bernoulli(gamma/k) succeeds (drawn as Bernoulli(gamma) Bernoulli(1/k)), and return
    whether k ends odd; a gamma above 1 takes one Bernoulli(exp(-1)) per unit first.
    """
    if num < 0 or den < 1:
        raise ValueError("bernoulli_exp: num must be >= 0 and den >= 1")
    while num > den:
        if not _bernoulli_exp_unit(den, den, words, cur):
            return False
        num -= den
    return _bernoulli_exp_unit(num, den, words, cur)


@njit(**_JIT)
def geometric_exp(s, words, cur):
    """A geometric count Y >= 0 of ratio ``exp(-s/t)`` (``t`` = :data:`RATIO_DENOMINATOR`,
    ``P(Y = y) = (1 - e^(-s/t)) e^(-s y/t)``), exactly, for an integer ``s >= 1``.

    Canonne, Kamath and Steinke (2020), Alg. 2's geometric part: U uniform in [0, t) kept
    with probability exp(-U/t), V the Bernoulli(exp(-1)) successes before a failure, then
    ``X = U + t V`` is geometric of ratio exp(-1/t) and ``Y = floor(X/s)``. X overflows int64
    only when V >= 2^23, with probability exp(-2^23).
    """
    t, s = np.int64(RATIO_DENOMINATOR), np.int64(s)
    if s < 1:
        raise ValueError("geometric_exp: s must be >= 1")
    while cur[1] == 0:
        u = uniform_below(t, words, cur)
        if not bernoulli_exp(u, t, words, cur):
            continue
        v = 0
        while cur[1] == 0 and bernoulli_exp(1, 1, words, cur):
            v += 1
        return (u + t * v) // s
    return 0


@njit(**_JIT)
def polya_count(size, s, words, cur):
    """A Polya(1/size, q) count, ``q = exp(-s/t)``, exactly:
    ``P(k) = C(k + 1/size - 1, k) (1 - q)^(1/size) q^k``, the share of one of ``size`` users
    in a geometric count of ratio q.

    A uniform random permutation of a geometric number K of ratio q of elements has
    independent Poisson(q^j/j) cycles of each length j (Shepp and Lloyd, "Ordered cycle
    lengths in a random permutation", Trans. AMS 1966). Keeping each cycle with probability
    1/size leaves Poisson(q^j/(j size)) cycles of each length, whose total length has the
    generating function ``((1 - q)/(1 - q z))^(1/size)``: the Polya law. The cycles are drawn
    by breaking off the first element's, uniform in length on [1, K - taken]. Integer
    arithmetic only: about 12 words of random bits for K and 2 per cycle (2 H_K in all; 19
    words at size 1024, epsilon 1).
    """
    size = np.int64(size)
    if size < 1:
        raise ValueError("polya_count: size must be >= 1")
    k = geometric_exp(s, words, cur)
    total = 0
    while k > 0 and cur[1] == 0:
        length = 1 + uniform_below(k, words, cur)
        if uniform_below(size, words, cur) == 0:
            total += length
        k -= length
    return total


@njit(**_JIT)
def unit_uniform(words, cur):
    """A uniform on [0, 1) with 53 random bits."""
    return (next_bits(words, cur) >> 10) * 2.0**-53


@njit(**_JIT)
def secagg_message(x, size, g, s, words, cur):
    """One user's message to secure aggregation, before the reduction mod m (Chowdhury and
    Zhou 2023, Alg. 2): ``x g`` rounded without bias (up with probability its fraction, to
    53 bits), plus ``P1 - P2``, each an exact Polya(1/size, exp(-s/t)) share
    (:func:`polya_count`). The shares of a batch of ``size`` users sum to discrete Laplace
    noise of ratio ``exp(-s/t)``. When the words run out (``cur[1]``) the result is void."""
    xg = x * g
    low = math.floor(xg)
    rounded = int(low) + (1 if unit_uniform(words, cur) < xg - low else 0)
    return rounded + polya_count(size, s, words, cur) - polya_count(size, s, words, cur)


@njit(**_JIT)
def secagg_rows(x, size, g, s, m, words, cur, start, out):
    """:func:`secagg_message` mod ``m`` of the entries of flat arrays from ``start``, with the
    words from ``cur[0]``. Returns the entry to resume from: ``x.shape[0]`` when done, else
    the entry whose words ran out (``cur[1] = 1``; ``cur[0]`` is back at its first word)."""
    for j in range(start, x.shape[0]):
        begin = cur[0]
        y = secagg_message(x[j], size[j], g[j], s[j], words, cur)
        if cur[1]:
            cur[0] = begin
            return j
        out[j] = y % m[j]
    return x.shape[0]
