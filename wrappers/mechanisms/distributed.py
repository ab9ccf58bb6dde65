"""Distributed DP by secure aggregation: each user adds a share of discrete noise, and a secure
aggregation protocol (SecAgg) reveals only the sum of the messages, modulo m.

This is the private sum of Dist-DP-SE (Chowdhury and Zhou, "Distributed Differential Privacy
in Multi-Armed Bandits", ICLR 2023, Alg. 2 with the discrete Laplace shares of its Sec. 4).
Each of the n users of a batch holds a reward x in [0, 1] and sends
``y = (x^ + eta) mod m``, where

* ``x^ = floor(x g) + Bernoulli(x g - floor(x g))`` rounds ``x g`` to an integer without bias,
  at the precision ``g = ceil(epsilon sqrt(n))``;
* ``eta = P1 - P2`` with P1, P2 independent Polya(1/n, q) shares, ``q = exp(-epsilon/g)``
  (to one part in a million; exactly ``exp(-s/2^40)``, below):
  ``P(k) = C(k + 1/n - 1, k) (1 - q)^(1/n) q^k`` (a Poisson of a Gamma of shape 1/n and scale
  ``q/(1 - q)``). The n shares of a batch sum to the difference of two geometric counts of
  ratio q, the discrete Laplace law ``P(z) ~ q^|z|``;
* ``m = n g + 2 tau + 1`` with ``tau = ceil(g ln(2/beta)/epsilon)``: the noise exceeds tau
  with probability at most beta, and the analyser then decodes the wrong sum.

SecAgg outputs ``Y = sum y mod m``; the analyser maps Y above ``n g + tau`` to ``Y - m`` and
estimates the batch's sum of rewards as ``Y / g``.

The shares are sampled exactly, with integer arithmetic on words of random bits
(:func:`~ldp_gym.wrappers.mechanisms.compiled.polya_count`): a geometric count by Canonne,
Kamath and Steinke's exact sampler (NeurIPS 2020), the cycles of a random permutation of
that many elements, each kept with probability 1/n (Shepp and Lloyd 1966). The ratio is
``q = exp(-s/2^40)`` with the integer ``s = floor(2^40 epsilon/g)`` (:func:`ratio_numerator`),
so ``g s/2^40 <= epsilon``, short of it by less than 1/s (under one part in a million for
batches of up to 1e11 users; an independent audit checked the bound in exact arithmetic
on 581 605 pairs of epsilon and n): the noise is at least the stated budget's. No float enters the
noise; the only departure from the exact law is an int64 overflow of the geometric sampler,
with probability below exp(-2^23) per share.

Privacy: epsilon-DP (pure) per user against the analyser, without a trusted party; SecAgg is
a cryptographic protocol, simulated here by the sum mod m. Y is a function of
``sum x^ + Z``, Z discrete Laplace of ratio q. One user's x^ lies in {0, ..., g}, so for any
rounding of the others, two values of that user move the sum by at most g, and the law of
``sum x^ + Z`` changes by a factor at most ``q^-g = exp(g s/2^40) <= e^epsilon``. Mixing over
the roundings and the modulo (post-processing) keep the bound. (Until 2026-11 the shares
came from inverting a float CDF, whose cut tail an independent audit measured as an excess
delta of 1e-13 to 1e-10; the exact sampler replaced it.)

The authors' code draws the Gamma with scale ``(1 - q)/q``, the inverse of the ratio above.
Its shares then sum to a discrete Laplace of ratio 1 - q: at n = 1024 and epsilon = 1, a
variance of 0.065 instead of 2048, an epsilon of about 111 instead of 1. ldp-gym draws the law
the paper states; the audit of ``tests/test_distributed.py`` flags the other.

Each user's randomiser reads words of 64 random bits (about 39 at n = 1024 and epsilon = 1,
80 at epsilon = 1e-6), from the OS CSPRNG in secure mode.

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
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_gym.validation import check_int, check_real

from .compiled import RATIO_DENOMINATOR, secagg_rows
from .noise import draw_words, make_rng
from .privacy import Privacy

__all__ = ["EPSILON_RANGE", "MAX_MODULUS", "SecAggSum", "check_budget", "dist_dp_parameters",
           "ratio_numerator", "secagg_messages", "secagg_sum"]


#: The budgets the distributed sum serves: above 1e-6, ``s`` keeps six significant digits of
#: epsilon/g; 50 is far past any useful pure-DP budget.
EPSILON_RANGE = (1e-6, 50.0)
#: The largest modulus: the sums of a batch's messages stay within int64.
MAX_MODULUS = 2**62


def check_budget(epsilon: Any, beta: Any) -> tuple[float, float]:
    """``(epsilon, beta)`` checked for the distributed sum (:data:`EPSILON_RANGE`; beta in
    (0, 1)), or an error naming the parameter."""
    epsilon = check_real("epsilon", epsilon)
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1]:
        raise ValueError(f"epsilon must lie in [{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}] for the "
                         f"distributed sum, got {epsilon!r}")
    return epsilon, check_real("beta", beta, low=0.0, high=1.0)


def ratio_numerator(epsilon: float, g: Any) -> np.ndarray:
    """The integer ``s = floor(2^40 epsilon/g)`` (exactly, broadcast over g): the shares' ratio
    is ``exp(-s/2^40)``, so that the budget spent, ``g s/2^40``, is at most epsilon."""
    g = np.asarray(g, dtype=np.int64)
    sizes, which = np.unique(g, return_inverse=True)
    top = Fraction(epsilon) * RATIO_DENOMINATOR
    return np.array([math.floor(top / int(v)) for v in sizes], dtype=np.int64)[which].reshape(
        g.shape)


def dist_dp_parameters(n: Any, epsilon: float, beta: float) -> tuple[np.ndarray, ...]:
    """Dist-DP-SE's ``(g, tau, m, s)`` for batches of ``n`` users (broadcasts over n).

    g the precision, tau the accuracy and m the modulus, as in the module's docstring and the
    authors' code (``precision``, ``accuracy``, ``modulo``); s the numerator of the discrete
    Laplace ratio ``q = exp(-s/2^40)`` (:func:`ratio_numerator`).
    """
    epsilon, beta = check_budget(epsilon, beta)
    if np.asarray(n).dtype.kind not in "iu" or (np.asarray(n) < 1).any():
        raise ValueError(f"n must be integers >= 1, got {n!r}")
    n = np.asarray(n, dtype=np.int64)
    g = np.ceil(epsilon * np.sqrt(n)).astype(np.int64)
    tau = np.ceil(g * math.log(2.0 / beta) / epsilon)
    if (n * g.astype(np.float64) + 2.0 * tau + 1.0 > MAX_MODULUS).any():
        raise ValueError(f"n={n.max()}, epsilon={epsilon:g} and beta={beta:g} make the modulus "
                         "exceed 2^62: lower n or epsilon, or raise beta")
    tau = tau.astype(np.int64)
    return g, tau, n * g + 2 * tau + 1, ratio_numerator(epsilon, g)


def secagg_messages(x: Any, n: Any, g: Any, s: Any, m: Any, rng: Any) -> np.ndarray:
    """The users' messages ``(x^ + P1 - P2) mod m`` of rewards ``x`` in [0, 1], each user of a
    batch of ``n`` with the ratio numerator ``s`` (n, g, s and m broadcast with x): the
    compiled :func:`~ldp_gym.wrappers.mechanisms.compiled.secagg_message` on words of random
    bits from ``rng``. A user whose words run out starts again on them, extended."""
    x = np.asarray(x, dtype=np.float64)
    flat = [np.broadcast_to(np.asarray(v, dtype=np.int64), x.shape).ravel() for v in (n, g, s, m)]
    shape, x = x.shape, x.ravel()
    out = np.empty(x.size, dtype=np.int64)
    words, cur, done = draw_words(rng, min(40 * x.size + 64, 2**20)), np.zeros(2, np.int64), 0
    while done < x.size:  # pieces of at most 2^20 words (8 MB)
        done = secagg_rows(x, *flat, words, cur, done, out)
        more = min(40 * (x.size - done) + 64, 2**20)
        words = np.concatenate([words[cur[0]:], draw_words(rng, more)])
        cur[:] = 0
    return out.reshape(shape)


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
        g, tau, m, s = dist_dp_parameters(self.n, self.epsilon, self.beta)
        if float(m) * self.n >= 2.0**63:
            raise ValueError(f"n={self.n} and epsilon={self.epsilon:g} make a batch's sum of "
                             "messages exceed int64: lower n or epsilon")
        self.precision, self.accuracy, self.modulus = int(g), int(tau), int(m)
        self.ratio_numerator = int(s)
        self.q = math.exp(-self.ratio_numerator / RATIO_DENOMINATOR)  # the shares' ratio
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
        return secagg_messages(x, self.n, self.precision, self.ratio_numerator, self.modulus,
                               self.rng)

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
