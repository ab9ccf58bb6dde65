"""The shuffle model: users randomise locally, a trusted shuffler permutes a batch, and the
analyser sees only the shuffled multiset.

:class:`ShuffleBitSum` is the summation protocol for bits of the "privacy blanket"
(Cheu, Smith, Ullman, Zeber and Zhilyaev, EUROCRYPT 2019; Balle, Bell, Gascon and Nissim,
CRYPTO 2019). Each of the n users of a batch sends its bit with probability ``1 - gamma`` and
a uniform bit otherwise. The shuffled messages of bits are their count, so the analyser's
estimate of the sum is ``(sum y - gamma n / 2) / (1 - gamma)``, unbiased.

The guarantee is computed, not taken from a textbook constant. :func:`blanket_delta` gives
the exact delta at epsilon of a view that reveals more than the shuffled count: how many
other users sent a uniform bit, and the bits of the others. The count is a function of that
view, so its delta is at most this one (post-processing). :func:`blanket_gamma` finds the
smallest gamma whose delta is at most the target.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms.shuffle import ShuffleBitSum
    >>> channel = ShuffleBitSum(10_000, epsilon=1.0, delta=1e-6, seed=0)
    >>> round(channel.gamma, 4)
    0.0084
    >>> bits = np.ones(10_000, dtype=np.int8)
    >>> estimate = channel.analyze(channel.shuffle(channel.randomize(bits)))
    >>> bool(abs(estimate - 10_000) < 30)       # noise of about 84 uniform bits
    True
    >>> print(channel.privacy)
    shuffle DP, epsilon=1, delta=1e-06 per reward
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import stats

from ldp_gym.validation import check_delta, check_epsilon, check_int, check_real

from .compiled import blanket_rows
from .noise import make_rng
from .privacy import Privacy

__all__ = ["ShuffleBitSum", "blanket_delta", "blanket_gamma", "blanket_messages"]


def blanket_delta(gamma: float, n: int, epsilon: float) -> float:
    """The delta at ``epsilon`` of one user's bit among n in the privacy-blanket summation.

    Let M be the number of the n - 1 other users who send a uniform bit (M ~ Bin(n - 1,
    gamma)) and W the sum of those M uniform bits and of the user's own message. Given M, the
    user's message is a 1 with probability ``q1 = 1 - gamma/2`` (bit 1) or ``q0 = gamma/2``
    (bit 0). The hockey-stick divergence of the two laws of (M, W) is
    ``sum_M P(M) sum_k max(0, P1(k | M) - e^eps P0(k | M))``. Its summand is positive exactly
    for k above a threshold, because the likelihood ratio increases in k. So each inner sum is
    two binomial tails, and the whole is exact in closed form. The other direction gives the
    same value by the symmetry k -> M + 1 - k.

    Example:
        >>> from ldp_gym.wrappers.mechanisms.shuffle import blanket_delta
        >>> blanket_delta(1.0, 100, 0.5)     # every user sends noise
        0.0
        >>> blanket_delta(0.0, 100, 0.5)     # nobody does: the bit is public
        1.0
    """
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=False, high_open=False)
    n, epsilon = check_int("n", n, low=1), check_epsilon(epsilon)
    e = math.exp(min(epsilon, 700.0))  # beyond, e^eps overflows and the delta is 0 anyway
    q1, q0 = 1.0 - gamma / 2.0, gamma / 2.0
    a, b = (1.0 - q1) - e * (1.0 - q0), q1 - e * q0
    if b <= 0.0:
        return 0.0
    m = np.arange(n)
    weight = stats.binom.pmf(m, n - 1, gamma)
    c = -a / b
    start = np.minimum(np.floor(c * (m + 1) / (1.0 + c)) + 1, m + 1)  # first k with a positive term
    inner = a * stats.binom.sf(start - 1, m, 0.5) + b * stats.binom.sf(start - 2, m, 0.5)
    return float(min(1.0, max(0.0, np.sum(weight * inner))))


def blanket_messages(bits: Any, gamma: Any, rng: np.random.Generator) -> np.ndarray:
    """The local randomiser of the privacy blanket: each bit kept with probability
    ``1 - gamma``, else replaced by a uniform bit (``gamma`` broadcasts with ``bits``)."""
    bits = np.asarray(bits)
    if not np.isin(bits, (0, 1)).all():
        raise ValueError("bits must be 0 or 1")
    u_blanket, u_bit = rng.random(bits.shape), rng.random(bits.shape)
    out = np.empty(bits.size, dtype=np.int8)
    blanket_rows(bits.astype(np.int8).ravel(), u_blanket.ravel(), u_bit.ravel(),
                 np.broadcast_to(np.asarray(gamma, dtype=np.float64), bits.shape).ravel(), out)
    return out.reshape(bits.shape)


@functools.lru_cache(maxsize=256)
def blanket_gamma(n: int, epsilon: float, delta: float) -> float:
    """The smallest gamma whose :func:`blanket_delta` is at most ``delta`` (bisection; cached).

    Example:
        >>> from ldp_gym.wrappers.mechanisms.shuffle import blanket_delta, blanket_gamma
        >>> g = blanket_gamma(1000, 1.0, 1e-6)
        >>> blanket_delta(g, 1000, 1.0) <= 1e-6 < blanket_delta(0.99 * g, 1000, 1.0)
        True
    """
    n, epsilon, delta = check_int("n", n, low=1), check_epsilon(epsilon), check_delta(delta)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if blanket_delta(mid, n, epsilon) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


class ShuffleBitSum:
    """The shuffle model's private sum of one batch of n users' bits (the privacy blanket).

    Each user runs :meth:`randomize` on its bit, the shuffler :meth:`shuffle` permutes the
    batch, and the analyser :meth:`analyze` sees only the shuffled messages. The batch is
    (epsilon, delta)-DP for each of its users (:func:`blanket_delta`), with gamma chosen by
    :func:`blanket_gamma`. A user must belong to one batch only.

    Args:
        n: the users of the batch, >= 1.
        epsilon: the budget per user, > 0.
        delta: the delta per user, in (0, 1).
        seed: as :class:`~ldp_gym.wrappers.mechanisms.Mechanism`.
        secure: as :class:`~ldp_gym.wrappers.mechanisms.Mechanism`.
    """

    def __init__(self, n: int, epsilon: float, delta: float, *, seed: Any = None,
                 secure: bool = False):
        self.n = check_int("n", n, low=1)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.gamma = blanket_gamma(self.n, self.epsilon, self.delta)
        self.rng = make_rng(seed, secure=secure)

    @property
    def privacy(self) -> Privacy:
        """The guarantee of the batch: (epsilon, delta)-DP per user in the shuffle model."""
        return Privacy("shuffle", self.epsilon, self.delta)

    def randomize(self, bits: Any) -> np.ndarray:
        """The users' messages: each bit kept with probability ``1 - gamma``, else a uniform bit.

        ``bits`` holds whole batches: its last axis has exactly n users, the batch size that
        gamma was computed for (a smaller batch would get less privacy than stated).
        """
        return blanket_messages(self._batch(bits, "bits"), self.gamma, self.rng)

    def _batch(self, x: Any, name: str) -> np.ndarray:
        """``x`` as whole batches of n values in {0, 1} along the last axis, or an error."""
        x = np.asarray(x)
        if x.ndim == 0 or x.shape[-1] != self.n:
            raise ValueError(f"{name} must hold whole batches of n={self.n} users along the last "
                             f"axis, got shape {x.shape}")
        if not np.isin(x, (0, 1)).all():
            raise ValueError(f"{name} must be 0 or 1")
        return x

    def shuffle(self, messages: np.ndarray) -> np.ndarray:
        """The shuffler: a uniformly random permutation of one batch (the last axis)."""
        return self.rng.permuted(messages, axis=-1)

    def analyze(self, messages: np.ndarray) -> np.ndarray:
        """The unbiased estimate of the batch's sum of bits from its shuffled messages."""
        messages = self._batch(messages, "messages")
        return (messages.sum(axis=-1) - self.gamma * self.n / 2.0) / (1.0 - self.gamma)
