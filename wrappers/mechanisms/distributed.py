"""Distributed DP by secure aggregation: each user adds a share of discrete noise, and a secure
aggregation protocol (SecAgg) reveals only the sum of the messages, modulo m.

This is the private sum of Dist-DP-SE (Chowdhury and Zhou, "Distributed Differential Privacy
in Multi-Armed Bandits", ICLR 2023, Alg. 2 with the discrete Laplace shares of its Sec. 4).
Each of the n users of a batch holds a reward x in [0, 1] and sends
``y = (x^ + eta) mod m``, where

* ``x^ = floor(x g) + Bernoulli(x g - floor(x g))`` rounds ``x g`` to an integer without bias,
  at the precision ``g = ceil(epsilon sqrt(n))``;
* ``eta = P1 - P2`` with P1, P2 independent Polya(1/n, q) shares, ``q = exp(-epsilon/g)``:
  ``P(k) = C(k + 1/n - 1, k) (1 - q)^(1/n) q^k`` (a Poisson of a Gamma of shape 1/n and scale
  ``q/(1 - q)``; drawn here by inversion of its CDF at a uniform, so that the OS CSPRNG can
  serve it). The n shares of a batch sum to the difference of two geometric counts of ratio
  q, the discrete Laplace law ``P(z) ~ q^|z|``;
* ``m = n g + 2 tau + 1`` with ``tau = ceil(g ln(2/beta)/epsilon)``: the noise exceeds tau
  with probability at most beta, and the analyser then decodes the wrong sum.

SecAgg outputs ``Y = sum y mod m``; the analyser maps Y above ``n g + tau`` to ``Y - m`` and
estimates the batch's sum of rewards as ``Y / g``.

Privacy: epsilon-DP (pure) per user against the analyser for the protocol with exact Polya
shares, without a trusted party; SecAgg is a cryptographic protocol, simulated here by the sum
mod m. The shares are drawn by inverting their CDF summed in floating point (one uniform each,
:func:`~ldp_gym.wrappers.mechanisms.compiled.polya_count`): exact up to float rounding, with the
tail cut where the float CDF stops growing (below about 1e-16 per share). So the implemented
release is (epsilon, delta)-DP with a small delta, not pure: an independent audit computed the
exact law of the implemented sampler and found an excess delta of 1.2e-13 (n = 64), 4.5e-13
(n = 256) and 3.4e-12 (n = 1024) at epsilon = 1, and 1.9e-10 at n = 16, epsilon = 10; it grows
with epsilon, hence :data:`EPSILON_RANGE` and :data:`MIN_BETA`. An exact integer sampler is the
remedy, not yet written. Y is a function of
``sum x^ + Z``, Z discrete Laplace of ratio ``q = exp(-epsilon/g)``. One user's x^ lies in
{0, ..., g}, so for any rounding of the others, two values of that user move the sum by at
most g, and the law of ``sum x^ + Z`` changes by a factor at most ``q^-g = e^epsilon``. Mixing
over the roundings and the modulo (post-processing) keep the bound.

The authors' code draws the Gamma with scale ``(1 - q)/q``, the inverse of the ratio above.
Its shares then sum to a discrete Laplace of ratio 1 - q: at n = 1024 and epsilon = 1, a
variance of 0.065 instead of 2048, an epsilon of about 111 instead of 1. ldp-gym draws the law
the paper states; the audit of ``tests/test_distributed.py`` flags the other.

Each user draws three uniforms (the rounding and the two shares), from the OS CSPRNG in
secure mode.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms.distributed import SecAggSum
    >>> channel = SecAggSum(1024, epsilon=1.0, seed=0)
    >>> channel.precision, channel.modulus
    (32, 32961)
    >>> rewards = np.full(1024, 0.5)
    >>> estimate = channel.analyze(channel.aggregate(channel.randomize(rewards)))
    >>> bool(abs(estimate - 512) < 10)     # noise of sd sqrt(2048)/32 = 1.4
    True
    >>> print(channel.privacy)
    distributed DP, epsilon=1 per reward
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp_gym.validation import check_epsilon, check_int, check_real

from .compiled import secagg_rows
from .noise import make_rng
from .privacy import Privacy

__all__ = ["EPSILON_RANGE", "MIN_BETA", "SecAggSum", "check_budget", "dist_dp_parameters",
           "secagg_messages", "secagg_sum"]


#: The budgets the float Polya sampler serves: below, its CDF walk takes ~1/epsilon steps; above
#: (and for beta below MIN_BETA), outputs in the sampler's cut tail become distinguishable.
EPSILON_RANGE, MIN_BETA = (1e-4, 10.0), 1e-6


def check_budget(epsilon: Any, beta: Any) -> tuple[float, float]:
    """``(epsilon, beta)`` checked for the distributed sum (:data:`EPSILON_RANGE`,
    :data:`MIN_BETA`), or an error naming the parameter."""
    epsilon = check_epsilon(epsilon)
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1]:
        raise ValueError(f"epsilon must lie in [{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}] for the "
                         f"distributed sum's float Polya sampler, got {epsilon!r}")
    beta = check_real("beta", beta, low=0.0, high=1.0)
    if beta < MIN_BETA:
        raise ValueError(f"beta must be >= {MIN_BETA:g} (a larger modulus reaches the sampler's "
                         f"cut tail), got {beta!r}")
    return epsilon, beta


def dist_dp_parameters(n: Any, epsilon: float, beta: float) -> tuple[np.ndarray, ...]:
    """Dist-DP-SE's ``(g, tau, m, q)`` for batches of ``n`` users (broadcasts over n).

    g the precision, tau the accuracy, m the modulus and q the discrete Laplace ratio, as in
    the module's docstring and the authors' code (``precision``, ``accuracy``, ``modulo``).
    """
    epsilon, beta = check_budget(epsilon, beta)
    if (np.asarray(n) < 1).any():
        raise ValueError("n must be >= 1")
    n = np.asarray(n, dtype=np.int64)
    g = np.ceil(epsilon * np.sqrt(n)).astype(np.int64)
    tau = np.ceil(g * math.log(2.0 / beta) / epsilon).astype(np.int64)
    return g, tau, n * g + 2 * tau + 1, np.exp(-epsilon / g)


def secagg_messages(x: Any, n: Any, g: Any, q: Any, m: Any, rng: Any) -> np.ndarray:
    """The users' messages ``(x^ + P1 - P2) mod m`` of rewards ``x`` in [0, 1], each user of a
    batch of ``n`` (n, g, q and m broadcast with x): the compiled
    :func:`~ldp_gym.wrappers.mechanisms.compiled.secagg_message` with three uniforms per user
    from ``rng``."""
    x = np.asarray(x, dtype=np.float64)
    flat = [np.broadcast_to(np.asarray(v, dtype=np.float64), x.shape).ravel() for v in (n, g, q)]
    out = np.empty(x.size, dtype=np.int64)
    secagg_rows(x.ravel(), *flat, np.broadcast_to(np.asarray(m, np.int64), x.shape).ravel(),
                rng.random(3 * x.size), out)
    return out.reshape(x.shape)


def secagg_sum(total: Any, n: Any, g: Any, tau: Any, m: Any) -> np.ndarray:
    """The analyser's estimate of a batch's sum of rewards from SecAgg's ``total`` (the sum of
    the messages, reduced mod m here): the residues above ``n g + tau`` are negative sums."""
    y = np.mod(np.asarray(total, dtype=np.int64), m)
    return np.where(y > n * g + tau, y - m, y) / np.asarray(g, dtype=np.float64)


class SecAggSum:
    """Dist-DP-SE's private sum of one batch of n users' rewards in [0, 1], without a trusted
    party (the module's docstring states the protocol and its guarantee).

    Each user runs :meth:`randomize`, SecAgg :meth:`aggregate` sums the messages mod m, and
    the analyser :meth:`analyze` decodes the sum. A user must belong to one batch only.

    Args:
        n: the users of the batch, >= 1.
        epsilon: the budget per user, > 0.
        beta: the probability that the noise exceeds the accuracy tau, in (0, 1); the
            authors' 0.1 by default. It sets the modulus, not the privacy.
        seed: as :class:`~ldp_gym.wrappers.mechanisms.Mechanism`.
        secure: as :class:`~ldp_gym.wrappers.mechanisms.Mechanism`.
    """

    def __init__(self, n: int, epsilon: float, beta: float = 0.1, *, seed: Any = None,
                 secure: bool = False):
        self.n = check_int("n", n, low=1)
        if self.n > 2**40:
            raise ValueError(f"n must be <= 2^40 (the sums are int64), got {n!r}")
        self.epsilon, self.beta = check_budget(epsilon, beta)
        g, tau, m, q = dist_dp_parameters(self.n, self.epsilon, self.beta)
        self.precision, self.accuracy, self.modulus = int(g), int(tau), int(m)
        self.q = float(q)
        self.rng = make_rng(seed, secure=secure)

    @property
    def privacy(self) -> Privacy:
        """The guarantee of the batch: pure epsilon-DP per user in the distributed model."""
        return Privacy("distributed", self.epsilon)

    def randomize(self, x: Any) -> np.ndarray:
        """The users' messages in ``[0, m)``. ``x`` holds whole batches: its last axis has
        exactly n rewards in [0, 1] (a smaller batch would get less noise than stated)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0 or x.shape[-1] != self.n:
            raise ValueError(f"x must hold whole batches of n={self.n} users along the last "
                             f"axis, got shape {x.shape}")
        if not ((x >= 0.0) & (x <= 1.0)).all():
            raise ValueError("x must lie in [0, 1]: clip the rewards to their bounds and rescale")
        return secagg_messages(x, self.n, self.precision, self.q, self.modulus, self.rng)

    def aggregate(self, messages: Any) -> np.ndarray:
        """SecAgg: the sum of each batch's messages (the last axis) mod m, and nothing else."""
        y = np.asarray(messages)
        if y.ndim == 0 or y.shape[-1] != self.n or y.dtype.kind not in "iu" \
                or ((y < 0) | (y >= self.modulus)).any():
            raise ValueError(f"messages must hold whole batches of n={self.n} integers in "
                             f"[0, {self.modulus}) along the last axis")
        return np.mod(y.sum(axis=-1), self.modulus)

    def analyze(self, total: Any) -> np.ndarray:
        """The estimate of each batch's sum of rewards from SecAgg's output."""
        return secagg_sum(total, self.n, self.precision, self.accuracy, self.modulus)
