"""Statistical privacy audit: split-sample, Clopper-Pearson lower bound on epsilon.

An audit draws outputs of a mechanism, or of an agent's user-side report,
on two neighbouring inputs. It maps each output to a scalar statistic, picks the
most distinguishing threshold event on one half of the samples and certifies
a lower bound on epsilon on the other half. Being a lower bound, it proves
nothing about privacy. But a mechanism whose bound exceeds its claim is
certainly broken, and a mutant with a few percent too little noise is caught.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms import LaplaceMechanism
    >>> m = LaplaceMechanism(1.0, 0.0, 1.0, seed=0)
    >>> res = audit(lambda n: m(np.zeros(n)), lambda n: m(np.ones(n)), n=100_000)
    >>> bool(res.epsilon_lower < 1.0)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["AuditResult", "audit", "audit_gaussian_epsilon", "clopper_pearson_epsilon", "off_lattice",
           "trailing_zeros"]

Sampler = Callable[[int], np.ndarray]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`: the certified lower bound and the event that gave it."""

    epsilon_lower: float
    threshold: float
    side: str          # "<=" or ">"
    direction: str     # "0/1": P0(E) / P1(E), "1/0": the reverse
    counts: tuple[int, int]
    n: int


def clopper_pearson_epsilon(k0: ArrayLike, k1: ArrayLike, n: int, alpha: float,
                            delta: float = 0.0) -> np.ndarray:
    """``ln((p0_lo - delta) / p1_hi)`` with one-sided Clopper-Pearson bounds at ``alpha/4`` each."""
    c0 = np.asarray(k0, dtype=np.float64)
    c1 = np.asarray(k1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p0_lo = np.where(c0 > 0, stats.beta.ppf(alpha / 4, c0, n - c0 + 1), 0.0)
        p1_hi = np.where(c1 < n, stats.beta.ppf(1 - alpha / 4, c1 + 1, n - c1), 1.0)
        eps = np.log(np.maximum(p0_lo - delta, 0.0) / p1_hi)
    return np.where(np.isfinite(eps), eps, -np.inf)


def _fit_statistic(kind: str | Callable, train0: np.ndarray, train1: np.ndarray) -> Callable:
    if callable(kind):
        return kind
    if kind == "identity":
        return lambda y: np.asarray(y, dtype=np.float64).reshape(len(y))
    y0 = np.asarray(train0, dtype=np.float64).reshape(len(train0), -1)
    y1 = np.asarray(train1, dtype=np.float64).reshape(len(train1), -1)
    if kind == "projection":
        w = y1.mean(0) - y0.mean(0)
        return lambda y: np.asarray(y, np.float64).reshape(len(y), -1) @ w
    if kind == "lda":
        cov = np.cov(np.vstack([y0 - y0.mean(0), y1 - y1.mean(0)]).T).reshape(y0.shape[1], -1)
        w = np.linalg.lstsq(cov + 1e-12 * np.eye(len(cov)), y1.mean(0) - y0.mean(0), rcond=None)[0]
        return lambda y: np.asarray(y, np.float64).reshape(len(y), -1) @ w
    if kind == "laplace":
        # privacy-loss statistic of independent Laplace coordinates, locations and
        # scales fitted on the training draw (median, mean absolute deviation)
        m0, m1 = np.median(y0, 0), np.median(y1, 0)
        b = 0.5 * (np.abs(y0 - m0).mean(0) + np.abs(y1 - m1).mean(0))
        b = np.where(b > 0, b, np.inf)

        def loss(y: np.ndarray) -> np.ndarray:
            y = np.asarray(y, np.float64).reshape(len(y), -1)
            return ((np.abs(y - m0) - np.abs(y - m1)) / b).sum(axis=1)
        return loss
    raise ValueError(f"statistic must be 'identity', 'projection', 'lda', 'laplace' or a "
                     f"callable, got {kind!r}")


def audit(sample0: Sampler, sample1: Sampler, *, n: int = 1_000_000, delta: float = 0.0,
          alpha: float = 1e-6, statistic: str | Callable = "identity", n_thresholds: int = 64,
          n_train: int | None = None) -> AuditResult:
    """Certify a lower bound on epsilon from samples of two neighbouring outputs.

    Args:
        sample0: ``n -> outputs`` for the first of two neighbouring inputs; each call
            must draw fresh noise.
        sample1: the same for the second input.
        n: samples per side per half.
        delta: the delta of the claim, subtracted from ``p0_lo``.
        alpha: total failure probability of the certified bound.
        statistic: ``'identity'`` for scalar outputs, ``'projection'`` on the
            difference of means, ``'lda'``, ``'laplace'`` for the fitted privacy loss,
            or a callable ``outputs -> scalars``.
        n_thresholds: thresholds at pooled quantiles 0.1% .. 99.9%.
        n_train: training draw size for fitted statistics (default ``max(n // 4, 1000)``).

    Returns:
        The certified ``epsilon_lower`` and the chosen event.
    """
    if statistic not in ("identity",) and not callable(statistic):
        m = n_train or max(n // 4, 1000)
        stat = _fit_statistic(statistic, sample0(m), sample1(m))
    else:
        stat = _fit_statistic(statistic, np.empty(0), np.empty(0))  # fits nothing
    # selection half
    s0, s1 = stat(sample0(n)), stat(sample1(n))
    qs = np.quantile(np.concatenate([s0, s1]), np.linspace(0.001, 0.999, n_thresholds))
    s0.sort()
    s1.sort()
    le0 = np.searchsorted(s0, qs, side="right")
    le1 = np.searchsorted(s1, qs, side="right")
    cands = []
    for side, c0, c1 in (("<=", le0, le1), (">", n - le0, n - le1)):
        cands.append((side, "0/1", clopper_pearson_epsilon(c0, c1, n, 1e-3, delta)))
        cands.append((side, "1/0", clopper_pearson_epsilon(c1, c0, n, 1e-3, delta)))
    best = max(((float(e[i]), side, d, i) for side, d, e in cands for i in range(len(qs))))
    _, side, direction, i = best
    t = float(qs[i])
    # certification half
    f0, f1 = stat(sample0(n)), stat(sample1(n))
    k0 = int(np.sum(f0 <= t)) if side == "<=" else int(np.sum(f0 > t))
    k1 = int(np.sum(f1 <= t)) if side == "<=" else int(np.sum(f1 > t))
    a, b = (k0, k1) if direction == "0/1" else (k1, k0)
    eps = float(clopper_pearson_epsilon(a, b, n, alpha, delta))
    return AuditResult(eps, t, side, direction, (k0, k1), n)


def audit_gaussian_epsilon(sensitivity: float, sigma: float, delta_audit: float) -> float:
    """The epsilon at which the exact Gaussian profile of ``sigma`` reaches ``delta_audit``.

    Gaussian mechanisms are audited at a large delta (0.005 to 0.02) against this
    value; the small delta they claim is checked by the exact calibration test.
    """
    from scipy import optimize

    from .calibration import gaussian_delta

    def f(eps: float) -> float:
        return float(gaussian_delta(eps, sensitivity, sigma)) - delta_audit
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    if f(0.0) <= 0:
        return 0.0
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12))


def off_lattice(y: np.ndarray, bits: int = 53) -> np.ndarray:
    """Float fingerprint: per sample, how many coordinates lie off the ``2^-bits`` lattice.

    A continuous-float Gaussian ``x + sigma z`` lands on the 2^-53 lattice for
    x = 1, and not for x = 0, where it is the raw noise. So this statistic
    separates the two inputs. A float-safe release gives the same value, 0, for
    every input: every output is a multiple of one power-of-two grid at least
    that coarse.
    """
    s = np.asarray(y, np.float64).reshape(len(y), -1) * 2.0**bits
    return (s != np.rint(s)).sum(axis=1).astype(np.float64)


def trailing_zeros(y: np.ndarray) -> np.ndarray:
    """Float fingerprint: per sample, the mean number of trailing zero bits of the coordinates'
    52-bit significands, counting 52 for a zero."""
    mant = np.asarray(y, np.float64).reshape(len(y), -1).copy().view(np.uint64) \
        & np.uint64((1 << 52) - 1)
    low = mant & (~mant + np.uint64(1))  # lowest set bit
    with np.errstate(divide="ignore"):
        tz = np.where(mant == 0, 52.0, np.log2(low.astype(np.float64)))
    return tz.mean(axis=1)
