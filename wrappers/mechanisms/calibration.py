"""Grid and calibration arithmetic of the float-safe mechanisms (Mironov 2012).

* the power-of-two grid of the releases: ``GRID_BITS``, ``MAGNITUDE_BITS``,
  ``MIN_GRID`` and :func:`grid_step`;
* the Laplace scale on that grid: :func:`laplace_scale`;
* the Gaussian calibrations: :func:`classic_gaussian_sigma`, the papers' calibration, for
  ``epsilon < 1`` only; the exact privacy profile :func:`gaussian_delta` and
  :func:`analytic_gaussian_sigma`, both of Balle and Wang (2018);
* the output radius of Duchi et al.'s l2-ball mechanism: :func:`l2_ball_radius`.

Pure arithmetic: nothing here draws randomness. The mechanisms themselves live
in :mod:`ldp_gym.wrappers.mechanisms`, which re-exports these names.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

__all__ = [
    "GRID_BITS",
    "MAGNITUDE_BITS",
    "MIN_GRID",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "grid_step",
    "l2_ball_radius",
    "laplace_scale",
]

#: The grid of a release is 2^ceil(log2 b) * 2^-GRID_BITS for a noise scale b (Mironov 2012).
GRID_BITS = 40
#: ... and never finer than 2^ceil(log2 m) * 2^-MAGNITUDE_BITS for inputs of magnitude up to m,
#: so that ``snapped input + k g`` is exact in float64 (53 bits) for every input and noise draw.
MAGNITUDE_BITS = 50
#: Smallest grid step accepted (far above the subnormals, where the grid arithmetic fails).
MIN_GRID = 2.0**-1000


def grid_step(scale: Any, magnitude: Any = 0.0) -> np.ndarray:
    """Grid of the float-safe releases: ``2^ceil(log2 scale) * 2^-40`` (Mironov 2012), for
    noise of scale ``scale``: Laplace b or Gaussian sigma.

    ``magnitude`` is the largest absolute value the snapped input can take. With it, the grid
    is at least ``2^ceil(log2 magnitude) * 2^-50``. Then every snapped input and every noise
    draw is an integer multiple of the grid below 2^53 grid steps, so their sum is exact in
    float64 and the output's low bits carry nothing. A finer grid would round the sum in a
    way that depends on the input. This only coarsens grids where the noise is tiny
    against the inputs: epsilon in the thousands, or the tree's long partial sums.

    Raises:
        ValueError: when the grid would underflow, for a noise scale below about 1e-289.
    """
    if not np.all(np.asarray(scale) >= MIN_GRID * 2.0**GRID_BITS):
        raise ValueError("the noise scale is too small for a float-safe grid (below about "
                         "1e-289); widen the bounds or lower epsilon")
    g = np.ldexp(1.0, np.ceil(np.log2(scale)).astype(np.int64) - GRID_BITS)
    if np.any(np.asarray(magnitude) > 0):
        exp = np.ceil(np.log2(np.maximum(magnitude, MIN_GRID))).astype(np.int64)
        g = np.maximum(g, np.ldexp(1.0, exp - MAGNITUDE_BITS))
    return g


def laplace_scale(sensitivity: Any, epsilon: float, magnitude: Any = 0.0,
                  snaps: int = 1) -> Any:
    """Noise scale of the grid Laplace: ``(sensitivity + snaps g) / epsilon`` with g the grid
    step (:func:`grid_step` of ``sensitivity / epsilon`` and ``magnitude``): snapping moves each
    of the ``snaps`` coordinates a neighbour changes by up to g/2 per input."""
    with np.errstate(over="ignore"):
        b = np.asarray(sensitivity) / epsilon
        ok = np.all(np.isfinite(b)) and np.all(np.isfinite(4.0 * b))
    if not ok:
        raise ValueError("the noise scale (upper - lower) / epsilon overflows; narrow the bounds "
                         "or raise epsilon")
    return (sensitivity + snaps * grid_step(b, magnitude)) / epsilon


def classic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The papers' calibration ``Delta sqrt(2 ln(1.25/delta)) / epsilon``; valid only for epsilon < 1."""
    if not epsilon < 1.0:
        raise ValueError("the classic Gaussian calibration is only valid for epsilon < 1; "
                         "use calibration='analytic'")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def gaussian_delta(epsilon: float, sensitivity: float, sigma: Any) -> np.ndarray:
    """Exact privacy profile of a Gaussian with ratio Delta/sigma (Balle and Wang 2018, Thm 8).

    ``delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.
    """
    a = sensitivity / (2.0 * np.asarray(sigma, dtype=np.float64))
    b = epsilon * np.asarray(sigma, dtype=np.float64) / sensitivity
    return special.ndtr(a - b) - np.exp(epsilon + special.log_ndtr(-a - b))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma with ``gaussian_delta(epsilon, sensitivity, sigma) <= delta``, for any epsilon."""
    def f(log_s: float) -> float:
        return math.log(max(float(gaussian_delta(epsilon, sensitivity, math.exp(log_s))), 1e-300)) \
            - math.log(delta)
    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    return math.exp(optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                                    maxiter=500))


def l2_ball_radius(epsilon: float, radius: float, dim: int) -> float:
    """Output radius of Duchi et al.'s l2-ball mechanism (Han et al. 2021, Lemma 2.2).

    ``r = R (sqrt(pi)/2) ((e^eps + 1)/(e^eps - 1)) d Gamma((d+1)/2) / Gamma(d/2 + 1)``,
    computed with ``gammaln`` so that large d does not overflow.
    """
    log_gamma_ratio = special.gammaln((dim + 1) / 2.0) - special.gammaln(dim / 2.0 + 1.0)
    coth = 1.0 / math.tanh(epsilon / 2.0)  # (e^eps + 1) / (e^eps - 1)
    return radius * (math.sqrt(math.pi) / 2.0) * coth * dim * math.exp(log_gamma_ratio)


#: The largest |z| the standard normal samplers can return: Box-Muller on uniforms of 2^-53 and
#: more (secure mode: sqrt(2 * 53 ln 2) = 8.5717; 8.57, a lower value, so that the tail mass
#: beyond it bounds the truncation) and numpy's ziggurat on 53-bit doubles (seeded;
#: 12.0 is a conservative lower value of its reach, about 12.2).
SAMPLER_Z_MAX = {True: 8.57, False: 12.0}


def check_sampler_tail(epsilon: float, delta: float, secure: bool, draws: int = 1) -> float:
    """Refuse an (epsilon, delta) that the Gaussian samplers' finite tails cannot deliver.

    A sampler that never draws beyond ``z_max`` is within total variation
    ``eta = P(|Z| > z_max)`` of the exact Gaussian per draw, so a Gaussian mechanism whose
    guarantee covers ``draws`` coordinates is ``(epsilon, delta + (1 + e^epsilon) draws
    eta)``-DP. The extra term is required to stay below delta / 100. It only binds at very
    large epsilon or tiny delta: in secure mode with delta = 1e-5 and one draw, epsilon up to
    about 23 passes. Returns the extra term.

    Raises:
        ValueError: the extra term exceeds delta / 100.
    """
    eta = math.erfc(SAMPLER_Z_MAX[bool(secure)] / math.sqrt(2.0))
    extra = (1.0 + math.exp(min(epsilon, 700.0))) * draws * eta
    if extra > delta / 100.0:
        mode = "secure" if secure else "seeded"
        raise ValueError(f"epsilon={epsilon:g} with delta={delta:g} is beyond what the {mode} "
                         f"Gaussian sampler's tail (|z| <= {SAMPLER_Z_MAX[bool(secure)]}) can "
                         f"deliver: lower epsilon or raise delta")
    return extra

