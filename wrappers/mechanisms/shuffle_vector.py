"""The shuffle model's vector summation (PVec): each user encodes every coordinate of its vector
as bits, a trusted shuffler mixes each coordinate's bits of a batch, and the analyser sees only
their counts.

This is the summation of Chowdhury and Zhou's shuffle-private LinUCB ("Shuffle Private Linear
Contextual Bandits", ICML 2022, the protocol P_Vec after Cheu, Joseph, Mao and Peng 2021),
with the constants of the authors' code (``sayakrc/Differentially-Private-Bandits``,
``LinBanditPrivate.py``, ``SDPLinUCBPVec``). Each of the B users of a batch holds a vector v
with coordinates in ``[-bound, bound]``. For each coordinate it sends:

* ``x^ = floor(2 g w) + Bernoulli(2 g w - floor(2 g w))`` ones among 2g bits, with
  ``w = (v + bound)/(2 bound)`` in [0, 1]: an unbiased rounding at the precision
  ``g = max(2 sqrt(B), d, 4)`` (the authors');
* ``b`` bits that are 1 with probability ``p = 1/4`` each (the authors' p).

The shuffler's output for a coordinate is the multiset of the batch's bits, that is their
count ``Y = sum x^ + Binomial(b B, 1/4)``. The analyser estimates the batch's sum of the
coordinate as ``(bound/g) (Y - b B/4) - B bound``, unbiased.

Privacy: (epsilon, delta)-DP per user in the shuffle model, for the whole vector. One user
moves each coordinate's count by at most 2g (for any rounding of the others), so the view is
the composition over the coordinates of binomial mechanisms of shift 2g. :func:`pvec_epsilon`
computes its epsilon at delta exactly (up to a pessimistic discretisation of 1e-3 in the
privacy loss) as a privacy loss distribution of the two binomial laws, composed over the
coordinates by Google's ``dp-accounting`` (both directions of the shift; a smaller shift has a
smaller loss, which the tests check), and :func:`pvec_trials` the smallest b that reaches the
budget (to 0.1 % of this accounting, whose discretisation composed over 20 coordinates
overstates epsilon by about 0.01: b is 1 to 1.5 % above the exact profile's smallest there,
by an independent audit). The worst case accounted, every coordinate moved by 2g, is
conservative: a real user, its context in the l2 ball, moves the counts by at most about 2.1g
in l2 norm (the audit's search), so a tighter analysis would need fewer bits. The authors'
code takes ``b = scale g^2 ln(d/delta)^2/(epsilon^2 B)`` with scale 1 ("tuned"): at their
d = 5, B = 20, delta = 0.1 and epsilon = 1 that is (20.5, 0.1)-DP in this model (20.2 with
their non-integer g's own rounding), not (1, 0.1)-DP; even one realisable pair of users
(x = e1, y = +1 or -1) costs epsilon 1.62 at delta 0.1 (``tests/test_shuffle_linear.py``).

The noise is exact: the binomial bits are ANDs of pairs of random bits, counted in words of 64
(:func:`binomial_quarter`); no float enters it.

Needs the ``accounting`` extra (``pip install "ldp-gym[accounting]"``) for the calibration.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms.shuffle_vector import ShuffleVectorSum
    >>> channel = ShuffleVectorSum(20, 2, 1.0, epsilon=2.0, delta=0.01, seed=0)
    >>> channel.precision, channel.trials    # g, and b bits per user and coordinate
    (9, 220)
    >>> v = np.full((20, 2), 0.5)
    >>> channel.analyze(channel.shuffle(channel.randomize(v))).round(1).tolist()  # sum: 10
    [13.3, 5.6]
    >>> print(channel.privacy)   # the unit of SDP-LinUCB, whose vectors are a user's data
    shuffle DP, epsilon=2, delta=0.01 per user (context, action and reward)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import stats

from ldp_gym.validation import check_delta, check_epsilon, check_int, check_real

from .calibration import analytic_gaussian_sigma
from .noise import draw_words, make_rng
from .privacy import Privacy

__all__ = ["MAX_BATCH_TRIALS", "MAX_BOUND", "ShuffleVectorSum", "binomial_quarter", "pvec_encode",
           "pvec_epsilon", "pvec_precision", "pvec_trials"]

#: the pessimistic discretisation of the privacy loss in :func:`pvec_epsilon`
DISCRETISATION = 1e-3
#: the largest coordinate bound: twice it stays finite
MAX_BOUND = 1e300


def pvec_precision(batch: int, dim: int) -> int:
    """The authors' precision ``g = max(2 sqrt(B), d, 4)``, rounded up to an integer."""
    return math.ceil(max(2.0 * math.sqrt(batch), dim, 4))


#: the most noise bits per coordinate of a batch (b B): 2^30, 16M words of random bits each
MAX_BATCH_TRIALS = 2**30


def binomial_quarter(trials: int, count: int, rng: Any) -> np.ndarray:
    """``count`` exact Binomial(trials, 1/4) draws: the ones among ``trials`` bits, each the
    AND of two random bits (popcounts of pairs of 64-bit words of ``rng``, in pieces of at
    most 2^22 words)."""
    trials, count = check_int("trials", trials), check_int("count", count, low=0)
    words = -(-trials // 64)
    last = trials - 64 * (words - 1)  # the bits of the last word that count, 1 to 64
    out = np.empty(count, dtype=np.int64)
    step = max(1, 2**21 // words)
    for start in range(0, count, step):
        rows = min(step, count - start)
        w = draw_words(rng, 2 * words * rows).reshape(rows, 2, words)
        both = w[:, 0] & w[:, 1]
        if last < 64:
            both[:, -1] &= np.uint64((1 << last) - 1)
        out[start:start + rows] = np.bitwise_count(both).sum(axis=1, dtype=np.int64)
    return out


@functools.lru_cache(maxsize=1024)
def pvec_epsilon(total_trials: int, shift: int, coords: int, delta: float) -> float:
    """The epsilon at ``delta`` of ``coords`` counts, each ``s + Binomial(total_trials, 1/4)``
    where one user moves s by at most ``shift``: the larger of the two directions' privacy loss
    distributions, composed over the coordinates (``dp-accounting``, pessimistic). Fewer than
    16 ``shift`` trials (noise of sd below sqrt(3 shift), far from private) count as inf."""
    total_trials, shift, coords = (check_int(n, v) for n, v in (
        ("total_trials", total_trials), ("shift", shift), ("coords", coords)))
    delta = check_delta(delta)
    if total_trials < 16 * shift:
        return math.inf
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError as err:  # pragma: no cover - the test extra installs it
        raise ImportError('calibrating the shuffle vector sum needs dp-accounting: pip install '
                          '"ldp-gym[accounting]"') from err
    sd = math.sqrt(total_trials * 3.0 / 16.0)  # beyond 15 sd: mass below 1e-40, counted in delta
    lo = max(0, math.floor(total_trials / 4 - 15 * sd - 10))
    hi = min(total_trials, math.ceil(total_trials / 4 + 15 * sd + 10))
    k = np.arange(lo, hi + shift + 1)
    laws = [stats.binom.logpmf(k - s, total_trials, 0.25) for s in (0, shift)]
    pmfs = [{int(o): float(v) for o, v in zip(k, law) if v > -np.inf} for law in laws]
    worst = 0.0
    for lower, upper in ((0, 1), (1, 0)):
        loss = pld.from_two_probability_mass_functions(
            pmfs[lower], pmfs[upper], value_discretization_interval=DISCRETISATION,
            log_mass_truncation_bound=-60.0)
        worst = max(worst, float(loss.self_compose(coords).get_epsilon_for_delta(delta)))
    return worst


def pvec_trials(epsilon: float, delta: float, batch: int, coords: int, precision: int) -> int:
    """The number b of noise bits per user and coordinate whose batch of ``batch`` users is
    (epsilon, delta)-DP over ``coords`` coordinates (:func:`pvec_epsilon` at shift
    2 ``precision``): private, and at most 0.1 % (or 1) above the smallest such b.

    The search starts from the b whose binomial has the variance of the analytic Gaussian
    mechanism for the same budget, brackets by factors of 1.25 and bisects.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    batch, coords, precision = (check_int(n, v) for n, v in (("batch", batch), ("coords", coords),
                                                             ("precision", precision)))

    def private(b: int) -> bool:
        if b * batch > MAX_BATCH_TRIALS:
            raise ValueError(f"epsilon={epsilon!r} and delta={delta!r} need more than 2^30 noise "
                             f"bits per coordinate of a batch of {batch}: raise epsilon, delta "
                             "or the batch")
        return pvec_epsilon(b * batch, 2 * precision, coords, delta) <= epsilon

    sigma = analytic_gaussian_sigma(2 * precision * math.sqrt(coords), epsilon, delta)
    guess = max(1, math.ceil(sigma * sigma * 16 / 3 / batch))
    if private(guess):
        hi, lo = guess, math.floor(guess / 1.25)
        while lo >= 1 and private(lo):
            hi, lo = lo, math.floor(lo / 1.25)
    else:
        lo, hi = guess, math.ceil(guess * 1.25)
        while not private(hi):
            lo, hi = hi, math.ceil(hi * 1.25)
    while hi - lo > max(1, hi // 1000):  # lo is not private (or 0), hi is
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if private(mid) else (mid, hi)
    return hi


def pvec_encode(v: np.ndarray, bound: Any, precision: int, uniforms: np.ndarray) -> np.ndarray:
    """The users' counts of ones ``x^`` in ``[0, 2 precision]`` of coordinates ``v`` (clipped
    to ``[-bound, bound]``; ``bound`` in (0, 1e300], one or one per coordinate), rounded up
    where ``uniforms`` fall below the fraction."""
    bound = np.asarray(bound, dtype=np.float64)
    if not ((bound > 0) & (bound <= MAX_BOUND)).all():
        raise ValueError(f"bound must lie in (0, {MAX_BOUND:g}]")
    if not np.isfinite(v).all():
        raise ValueError("v must be finite")
    w = (np.clip(v, -bound, bound) + bound) / (2.0 * bound) * (2 * precision)
    low = np.floor(w)
    return (low + (uniforms < w - low)).astype(np.int64)


class ShuffleVectorSum:
    """The shuffle model's private sum of one batch of B users' vectors (PVec; the module's
    docstring states the protocol and its guarantee).

    Each user runs :meth:`randomize`, the shuffler :meth:`shuffle` keeps each coordinate's
    count of ones, and the analyser :meth:`analyze` decodes the sum. A user must belong to one
    batch only.

    Args:
        batch: B, the users of the batch.
        dim: the coordinates of each vector.
        bound: each coordinate's bound; larger ones are clipped.
        epsilon, delta: the budget per user (for the whole vector).
        precision: g; by default the authors' :func:`pvec_precision`.
        seed, secure: as :class:`~ldp_gym.wrappers.mechanisms.Mechanism`.
    """

    def __init__(self, batch: int, dim: int, bound: float, *, epsilon: float, delta: float,
                 precision: int | None = None, seed: Any = None, secure: bool = False):
        self.batch, self.dim = check_int("batch", batch), check_int("dim", dim)
        self.bound = check_real("bound", bound, low=0.0, high=MAX_BOUND, high_open=False)
        self.epsilon, self.delta = check_epsilon(epsilon), check_delta(delta)
        self.precision = (pvec_precision(self.batch, self.dim) if precision is None
                          else check_int("precision", precision))
        self.trials = pvec_trials(self.epsilon, self.delta, self.batch, self.dim, self.precision)
        self.rng = make_rng(seed, secure=secure)

    @property
    def privacy(self) -> Privacy:
        """(epsilon, delta)-DP per user (its whole vector) in the shuffle model."""
        return Privacy("shuffle", self.epsilon, self.delta, unit="user")

    def randomize(self, v: Any) -> np.ndarray:
        """Each user's counts of ones per coordinate, ``x^ + Binomial(b, 1/4)``, for vectors
        ``v`` of shape (..., B, dim): whole batches (a smaller one gets less privacy)."""
        v = np.asarray(v, dtype=np.float64)
        if v.ndim < 2 or v.shape[-2:] != (self.batch, self.dim) or not np.isfinite(v).all():
            raise ValueError(f"v must hold whole batches of finite vectors, shape (..., "
                             f"{self.batch}, {self.dim}), got {v.shape}")
        ones = pvec_encode(v, self.bound, self.precision, self.rng.random(v.shape))
        return ones + binomial_quarter(self.trials, v.size, self.rng).reshape(v.shape)

    def shuffle(self, messages: Any) -> np.ndarray:
        """The shuffler's output: each coordinate's count of ones over the batch (axis -2)."""
        return np.asarray(messages, dtype=np.int64).sum(axis=-2)

    def analyze(self, counts: Any) -> np.ndarray:
        """The unbiased estimate of the batch's sum of vectors from the counts (..., dim)."""
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim == 0 or counts.shape[-1] != self.dim:
            raise ValueError(f"counts must have shape (..., dim={self.dim}), got {counts.shape}")
        noise_mean = self.trials * self.batch / 4.0
        return self.bound / self.precision * (counts - noise_mean) - self.batch * self.bound
