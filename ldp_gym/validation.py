"""Validation of parameters and inputs, in one module used by every path (DESIGN.md section 9).

Envs (single and vector, through their cores), agents, mechanisms, wrappers
and the runner call these functions, so the same bad value gets the same
error everywhere: a ``TypeError`` for a wrong type (bools included, never
taken as numbers), a ``ValueError`` for a wrong value, both naming the
parameter and never echoing a private value.

Example:
    >>> from ldp_gym.validation import check_int
    >>> check_int("n_arms", 3)
    3
    >>> check_int("n_arms", 2.5)
    Traceback (most recent call last):
    ...
    TypeError: n_arms must be an integer, got float
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["MIN_DELTA", "check_bounds", "check_delta", "check_epsilon", "check_finite",
           "check_input", "check_int", "check_real"]

#: Smallest delta accepted: below it the float64 privacy profiles cannot resolve delta.
MIN_DELTA = 1e-100


def check_real(name: str, value: Any, *, low: float | None = None, high: float | None = None,
               low_open: bool = True, high_open: bool = True) -> float:
    """Return ``value`` as a float after checking it is a finite real in the given interval.

    Raises:
        TypeError: for bools and non-numbers.
        ValueError: for NaN, inf and values outside the interval; the message names ``name``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {v}")
    if high is not None and (v >= high if high_open else v > high):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {v}")
    return v


def check_int(name: str, value: Any, *, low: int = 1) -> int:
    """Return ``value`` as an int after checking it is an integer ``>= low`` (bools refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {int(value)}")
    return int(value)


def check_epsilon(epsilon: Any) -> float:
    """Validate a privacy budget: a finite real in (0, inf)."""
    return check_real("epsilon", epsilon, low=0.0)


def check_delta(delta: Any) -> float:
    """Validate an approximate-DP delta: a real in [MIN_DELTA, 1) (1e-100; smaller deltas are
    beyond what float64 privacy profiles resolve)."""
    d = check_real("delta", delta, low=0.0, high=1.0)
    if d < MIN_DELTA:
        raise ValueError(f"delta must be >= {MIN_DELTA:g} (or exactly 0 for a pure mechanism), "
                         f"got {d:g}")
    return d


def check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    """Validate declared scalar bounds ``lower < upper``, both finite."""
    lo = check_real("lower", lower)
    hi = check_real("upper", upper)
    if not hi > lo:
        raise ValueError(f"upper must be > lower, got lower={lo}, upper={hi}")
    if not math.isfinite(4.0 * (hi - lo)):  # headroom for the calibration arithmetic
        raise ValueError("upper - lower must be below 4e307 (the sensitivity overflows)")
    if hi - lo < 1e-200:
        raise ValueError("upper - lower must be at least 1e-200 (the noise grid underflows)")
    return lo, hi


def check_finite(x: Any, name: str = "x") -> np.ndarray:
    """Return ``x`` as a real numeric array (any float or integer dtype, not converted); refuse
    bools, non-numbers, NaN and inf without echoing values."""
    arr = np.asarray(x)
    if arr.dtype != np.float64:  # the common case skips the dtype checks
        if arr.dtype == np.bool_:
            raise TypeError(f"{name} must be numeric, not bool")
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a real numeric array")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (NaN or inf found)")
    return arr


def check_input(x: Any, name: str = "x") -> np.ndarray:
    """Return a float64 array of private inputs; refuse bools, NaN and inf without echoing values."""
    return check_finite(x, name).astype(np.float64, copy=False)
