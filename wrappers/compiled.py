"""The mechanisms' input transforms in compiled form (numba), for kernels that add noise drawn
ahead by the mechanisms (``GaussianStatistics.draws``, ``L2BallMechanism.draws``).

Each function here is the scalar form of a numpy transform in
:mod:`ldp_gym.wrappers.mechanisms` and gives bitwise the same numbers
(``tests/test_float_safety.py``): :func:`clip_l2_into` is ``clip_l2`` on one
vector, :func:`snap_add` is ``snap(x, grid) + noise`` with noise from
``gaussian_grid_noise``. Compiled kernels call these, never their own
clipping or noise arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["clip_l2_into", "snap_add"]


@njit(cache=True, nogil=True, error_model="numpy")
def clip_l2_into(x, bound, out):
    """``out = x min(1, bound / ||x||)`` (``clip_l2`` on one vector)."""
    sq = 0.0
    for j in range(x.shape[0]):
        sq += x[j] * x[j]
    f = min(1.0, bound / math.sqrt(max(sq, 1e-300)))
    for j in range(x.shape[0]):
        out[j] = x[j] * f


@njit(cache=True, nogil=True, error_model="numpy")
def snap_add(value, noise, grid):
    """One float-safe Gaussian coordinate: ``value`` snapped to the power-of-two ``grid`` plus
    ``noise`` already on that grid (exact in float64)."""
    return np.rint(value / grid) * grid + noise
