"""Differential-privacy mechanisms: the primitives every private agent and wrapper uses.

Every mechanism here follows ``PRIVACY.md``:

* bounds are declared in the constructor, the sensitivity is computed from
  them, and every input is clipped to them in the norm the sensitivity uses;
* every parameter and every input is validated (``ValueError``/``TypeError``
  naming the parameter, never echoing a private value);
* every release is float-safe (Mironov 2012): the input is snapped to a
  power-of-two grid and the noise lies on that grid, so an output is exactly
  ``snapped input + k g`` with ``k`` independent of the input and its low bits
  tell nothing. Laplace noise is discrete Laplace on the grid; Gaussian noise
  is a Gaussian draw rounded to the grid (see :class:`GaussianMechanism` for
  why this route rather than the discrete Gaussian);
* the Gaussian mechanism offers the classic calibration (only for
  ``epsilon < 1``) and the analytic one of Balle and Wang (2018);
* noise comes from a generator the mechanism owns, spawned from the caller's
  :class:`numpy.random.SeedSequence`, or from the operating system's CSPRNG
  in secure mode (which refuses integer seeds);
* every mechanism reports its guarantee as ``privacy = (epsilon, delta)``.

All mechanisms are vectorised over leading dimensions: an array of inputs is
an array of independent users (or rewards), each privatised on its own.

Example:
    >>> import numpy as np
    >>> from ldp_gym.wrappers.mechanisms import LaplaceMechanism
    >>> mech = LaplaceMechanism(epsilon=1.0, lower=0.0, upper=1.0, seed=0)
    >>> mech.privacy
    (1.0, 0.0)
    >>> out = mech(np.array([0.2, 0.9]))
    >>> out.shape
    (2,)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import numbers
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
from scipy import optimize, special

from ldp_gym.validation import (  # noqa: F401  (re-exported: the mechanisms' validation)
    MIN_DELTA,
    check_bool,
    check_bounds,
    check_delta,
    check_epsilon,
    check_finite,
    check_input,
    check_int,
    check_real,
)

from . import compiled

__all__ = [
    "GRID_BITS",
    "GaussianMechanism",
    "GaussianPart",
    "GaussianStatistics",
    "L2BallMechanism",
    "NoiseStream",
    "LaplaceMechanism",
    "Mechanism",
    "PrivateEpisodeMean",
    "RandomizedResponse",
    "SecureGenerator",
    "TreeMechanism",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "gaussian_grid_noise",
    "grid_step",
    "l2_ball_radius",
    "make_rng",
    "recording",
    "snap",
]

#: The grid of a release is 2^ceil(log2 b) * 2^-GRID_BITS for a noise scale b (PRIVACY.md rule 3).
GRID_BITS = 40
#: ... and never finer than 2^ceil(log2 m) * 2^-MAGNITUDE_BITS for inputs of magnitude up to m,
#: so that ``snapped input + k g`` is exact in float64 (53 bits) for every input and noise draw.
MAGNITUDE_BITS = 50
#: Smallest grid step accepted (far above the subnormals, where the grid arithmetic fails).
MIN_GRID = 2.0**-1000

# --------------------------------------------------------------------------- randomness


class SecureGenerator:
    """Draws from the operating system's CSPRNG (``os.urandom``).

    Implements the subset of :class:`numpy.random.Generator` the mechanisms use
    (``random``, ``standard_normal``, ``geometric``, ``integers``). It has no
    seed: it cannot be replayed, which is the point.
    """

    def _words(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def random(self, size=None) -> np.ndarray:
        """Uniform doubles in (0, 1): 53 random bits, offset by half a step (never 0 or 1)."""
        n = int(np.prod(size)) if size is not None else 1
        u = ((self._words(n) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        return u.reshape(size) if size is not None else u[0]

    def standard_normal(self, size=None) -> np.ndarray:
        """Standard normals by the Box-Muller transform."""
        n = int(np.prod(size)) if size is not None else 1
        u1, u2 = self.random(n), self.random(n)
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        return z.reshape(size) if size is not None else z[0]

    def geometric(self, p, size=None) -> np.ndarray:
        """Geometric counts on {1, 2, ...} by inversion."""
        shape = size if size is not None else np.shape(p)
        u = self.random(shape)
        return np.ceil(np.log(u) / np.log1p(-np.asarray(p, dtype=np.float64))).astype(np.int64)

    def integers(self, low, high=None, size=None) -> np.ndarray:
        """Integers in [low, high) (rejection-free for the small ranges used here)."""
        if high is None:
            low, high = 0, low
        span = np.asarray(high) - np.asarray(low)
        return (np.asarray(low) + np.floor(self.random(size) * span)).astype(np.int64)


#: Spawn-key word under which a mechanism derives its stream from a user's seed, so that a
#: mechanism and an env given the same integer never draw the same numbers (PRIVACY.md rule 5).
MECHANISM_KEY = 0x4D454348  # "MECH"


def make_rng(seed: Any = None, *, secure: bool = False):
    """Return the generator a mechanism draws from.

    An int or a :class:`numpy.random.SeedSequence` is domain-separated: the stream is
    that of the sequence's child under the key ``MECHANISM_KEY``, never the stream an env
    (``env.reset(seed=...)``) or any other component builds from the same seed. A
    ``Generator`` is used as it is (the caller owns it). Seeded noise is for simulation:
    whoever knows the seed knows every draw, and the same seed replays them; deploy with
    ``secure=True``.

    Args:
        seed: ``None``, an int, a :class:`numpy.random.SeedSequence` (spawn one per
            mechanism from the run's sequence) or an existing ``Generator``.
        secure: draw from the OS CSPRNG instead; then ``seed`` must be ``None``.

    Raises:
        TypeError: secure mode with a seed, or a seed of the wrong type.
    """
    check_bool("secure", secure)
    if secure:
        if seed is not None:
            raise TypeError("secure mode draws from the OS CSPRNG and refuses seeds; pass seed=None")
        return SecureGenerator()
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("seed must be None, an int, a SeedSequence or a Generator, not bool")
    if isinstance(seed, (np.random.Generator, SecureGenerator)):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, numbers.Integral):
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {int(seed)}")
        seed = np.random.SeedSequence(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(np.random.SeedSequence(
            seed.entropy, spawn_key=tuple(seed.spawn_key) + (MECHANISM_KEY,),
            pool_size=seed.pool_size))
    raise TypeError(f"seed must be None, an int, a SeedSequence or a Generator, "
                    f"got {type(seed).__name__}")


# --------------------------------------------------------------------------- tracing

_TRACE: contextvars.ContextVar[list | None] = contextvars.ContextVar("ldp_gym_trace", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[dict]]:
    """Record every mechanism call made inside the block (for the replay test of PRIVACY.md).

    Each record holds the mechanism name, the clipped input, the declared
    sensitivity, the noise parameter and the budget charged.

    Example:
        >>> from ldp_gym.wrappers.mechanisms import LaplaceMechanism, recording
        >>> m = LaplaceMechanism(1.0, 0.0, 1.0, seed=1)
        >>> with recording() as trace:
        ...     _ = m([0.5])
        >>> trace[0]["mechanism"], trace[0]["epsilon"]
        ('LaplaceMechanism', 1.0)
    """
    trace: list[dict] = []
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def _record(name: str, clipped: np.ndarray, sensitivity, noise, epsilon: float, delta: float):
    trace = _TRACE.get()
    if trace is not None:
        trace.append({"mechanism": name, "input": np.array(clipped, copy=True),
                      "shape": np.shape(clipped), "sensitivity": np.array(sensitivity, copy=True),
                      "noise": np.array(noise, copy=True), "epsilon": epsilon, "delta": delta})


# --------------------------------------------------------------------------- calibration


def grid_step(scale, magnitude=0.0) -> np.ndarray:
    """Grid of the float-safe releases: ``2^ceil(log2 scale) * 2^-40`` (PRIVACY.md rule 3), for
    noise of scale (Laplace b, Gaussian sigma) ``scale``.

    With ``magnitude`` (the largest absolute value the snapped input can take), the grid is
    at least ``2^ceil(log2 magnitude) * 2^-50``: then every snapped input and every noise
    draw is an integer multiple of the grid below 2^53 grid steps, so their sum is exact in
    float64 and the output's low bits carry nothing (a finer grid would round the sum in a
    way that depends on the input). This only coarsens grids where the noise is tiny
    against the inputs (epsilon in the thousands, or the tree's long partial sums).

    Raises:
        ValueError: when the grid would underflow (noise scale below about 1e-289).
    """
    if not np.all(np.asarray(scale) >= MIN_GRID * 2.0**GRID_BITS):
        raise ValueError("the noise scale is too small for a float-safe grid (below about "
                         "1e-289); widen the bounds or lower epsilon")
    g = np.ldexp(1.0, np.ceil(np.log2(scale)).astype(np.int64) - GRID_BITS)
    if np.any(np.asarray(magnitude) > 0):
        exp = np.ceil(np.log2(np.maximum(magnitude, MIN_GRID))).astype(np.int64)
        g = np.maximum(g, np.ldexp(1.0, exp - MAGNITUDE_BITS))
    return g


def snap(x: np.ndarray, grid) -> np.ndarray:
    """``x`` rounded to the nearest multiple of the power-of-two ``grid`` (exact in float64)."""
    return np.rint(x / grid) * grid


def gaussian_grid_noise(z: np.ndarray, sigma, grid) -> np.ndarray:
    """Gaussian noise on the grid: ``rint(sigma z / grid) grid`` for standard normals ``z``.

    Added to an input snapped to the same grid it gives ``snap(x) + k g`` with ``k`` a
    function of ``z`` only: the rounding to the grid of the Gaussian mechanism's output
    ``snap(x) + sigma z``, i.e. post-processing of that mechanism.
    """
    return np.rint(z * (sigma / grid)) * grid


def laplace_scale(sensitivity, epsilon: float, magnitude=0.0, snaps: int = 1):
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


def gaussian_delta(epsilon: float, sensitivity: float, sigma) -> np.ndarray:
    """Exact privacy profile of a Gaussian with ratio Delta/sigma (Balle and Wang 2018, Thm 8).

    ``delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.
    """
    a = sensitivity / (2.0 * np.asarray(sigma, dtype=np.float64))
    b = epsilon * np.asarray(sigma, dtype=np.float64) / sensitivity
    return special.ndtr(a - b) - np.exp(epsilon + special.log_ndtr(-a - b))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma with ``gaussian_delta(epsilon, sensitivity, sigma) <= delta`` (any epsilon)."""
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


# --------------------------------------------------------------------------- base class


class Mechanism:
    """Base class: owns a generator, reports ``privacy = (epsilon, delta)``.

    Args:
        epsilon: privacy budget, in (0, inf).
        seed: ``None``, int, ``SeedSequence`` or ``Generator`` (spawn one per mechanism);
            ints and sequences are domain-separated (:func:`make_rng`). Seeded noise is for
            simulation: whoever knows the seed can predict every draw, and the same seed
            replays them. Deploy with ``secure=True``.
        secure: draw from the OS CSPRNG; refuses a seed.
    """

    delta: float = 0.0
    #: largest absolute value a snapped input can take (sets the grid's floor, see grid_step)
    magnitude: float = 0.0
    #: coordinates one neighbouring change touches, each moved by up to g/2 by snapping (the
    #: Laplace calibration adds ``snaps g`` to the l1 sensitivity)
    snaps: int = 1

    def __init__(self, epsilon: float, *, seed: Any = None, secure: bool = False):
        self.epsilon = check_epsilon(epsilon)
        self.rng = make_rng(seed, secure=secure)

    def _substreams(self, names: Any) -> dict[str, Any]:
        """One independent child stream per kind of draw (spawned from the mechanism's
        generator). Each kind's draws then form one sequence, so drawing a block of rounds at
        once (``draws``) gives bitwise the numbers of as many single calls."""
        names = tuple(names)
        if isinstance(self.rng, SecureGenerator):
            return {n: SecureGenerator() for n in names}
        return dict(zip(names, self.rng.spawn(len(names)), strict=True))

    @property
    def privacy(self) -> tuple[float, float]:
        """The guarantee ``(epsilon, delta)`` of one call on one input."""
        return (self.epsilon, self.delta)

    def _grid_laplace(self, x: np.ndarray, sensitivity) -> np.ndarray:
        """Snap ``x`` to the grid and add discrete Laplace noise calibrated to
        ``sensitivity + snaps g`` (``snaps``: the snapped coordinates one change touches)."""
        sens = np.asarray(sensitivity, dtype=np.float64)
        if sens.ndim:  # per-element sensitivities (e.g. episode means over different counts)
            sens = np.broadcast_to(sens, x.shape)
        g = grid_step(sens / self.epsilon, self.magnitude)
        snapped = sens + self.snaps * g
        # discrete Laplace on the grid: P(k) ~ exp(-|k| g eps / snapped)
        p = -np.expm1(-g * self.epsilon / snapped)
        k = np.rint(x / g) + (self.rng.geometric(p, size=x.shape)
                              - self.rng.geometric(p, size=x.shape))
        _record(type(self).__name__, x, sens, snapped / self.epsilon, self.epsilon, 0.0)
        return k * g


class NoiseStream:
    """A stream of noise values drawn ahead in chunks from one generator.

    ``take(count)`` returns the next ``count`` values of the stream: bitwise the
    values that drawing them one call at a time would give (numpy's generators
    fill arrays sequentially), so a round drawn alone and a block of rounds
    drawn at once see the same noise. Drawing ahead makes a single round cheap.

    Args:
        rng: the generator (a substream of one mechanism, or the OS CSPRNG).
        draw: ``(rng, count) -> values`` (1-D float64).
        chunk: values drawn per refill at least.
    """

    def __init__(self, rng: Any, draw: Any, chunk: int = 4096):
        self.rng, self.draw, self.chunk = rng, draw, chunk
        self._buf = np.empty(0)
        self._pos = 0

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` values (a read-only array)."""
        end = self._pos + count
        if end <= self._buf.shape[0]:
            out = self._buf[self._pos:end]
            self._pos = end
            return out
        left = self._buf[self._pos:]
        need = count - left.shape[0]
        fresh = self.draw(self.rng, max(need, self.chunk))
        fresh.flags.writeable = False
        self._buf, self._pos = fresh, need
        out = np.concatenate([left, fresh[:need]]) if left.shape[0] else fresh[:need]
        out.flags.writeable = False
        return out


# --------------------------------------------------------------------------- Laplace


class LaplaceMechanism(Mechanism):
    """Float-safe Laplace mechanism for values in declared bounds (epsilon-DP, pure).

    Each input coordinate lies in ``[lower, upper]``; with ``dim`` set, each
    input is a vector of ``dim`` such coordinates (the last axis) and the l1
    sensitivity is ``dim * (upper - lower)``. Inputs are clipped to the box,
    snapped to the grid ``g`` and perturbed by discrete Laplace noise of scale
    ``(sensitivity + g)/epsilon``.

    Args:
        epsilon: privacy budget per input.
        lower, upper: declared bounds of every coordinate.
        dim: ``None`` for scalar inputs, else the vector length.
        seed, secure: see :class:`Mechanism`.

    Example:
        >>> m = LaplaceMechanism(0.5, lower=0.0, upper=1.0, dim=3, seed=0)
        >>> m.sensitivity
        3.0
    """

    def __init__(self, epsilon: float, lower: float = 0.0, upper: float = 1.0, *,
                 dim: int | None = None, seed: Any = None, secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.lower, self.upper = check_bounds(lower, upper)
        self.magnitude = max(abs(self.lower), abs(self.upper))
        self.dim = None if dim is None else check_int("dim", dim)
        self.sensitivity = (self.upper - self.lower) * (1 if self.dim is None else self.dim)
        self.snaps = self.dim or 1
        self.scale = float(laplace_scale(self.sensitivity, self.epsilon, self.magnitude,
                                         self.snaps))
        self.grid = float(grid_step(self.sensitivity / self.epsilon, self.magnitude))

    def __call__(self, x: Any) -> np.ndarray:
        x = check_input(x)
        if self.dim is not None and (x.ndim == 0 or x.shape[-1] != self.dim):
            raise ValueError(f"x must have last dimension dim={self.dim}")
        return self._grid_laplace(np.clip(x, self.lower, self.upper), self.sensitivity)


class PrivateEpisodeMean(Mechanism):
    """Private means over disjoint episodes (Azize and Basu 2022, Lemma 1 and Thm 6).

    ``release(sums, counts)`` returns ``sums/counts + Lap((upper - lower)/(epsilon counts))``
    on the grid: each released mean covers ``counts`` rewards in
    ``[lower, upper]`` that enter no other release, so every reward is
    protected with epsilon-DP.

    A release is epsilon-DP per reward only if every reward in the sum lies in
    ``[lower, upper]``: the caller clips each reward before summing, or takes
    the sum from a setting that guarantees bounded rewards
    (``BanditCore.bounded_rewards``). Clipping the sum would not bound one
    reward's influence (one reward of 1000 among 16 moves a mean in [0, 1]
    from 0.5 to 1), so a sum outside ``[counts lower, counts upper]``, which
    proves a reward broke the bounds, is refused (up to float rounding of the
    sum, which is clipped).

    Example:
        >>> m = PrivateEpisodeMean(1.0, seed=0)
        >>> m.release([3.0, 8.0], [4, 16]).shape
        (2,)
    """

    def __init__(self, epsilon: float, lower: float = 0.0, upper: float = 1.0, *,
                 seed: Any = None, secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.lower, self.upper = check_bounds(lower, upper)
        self.magnitude = max(abs(self.lower), abs(self.upper))

    def scale(self, counts) -> np.ndarray:
        """Noise scale of a release over ``counts`` rewards."""
        return laplace_scale((self.upper - self.lower) / np.asarray(counts, np.float64),
                             self.epsilon, self.magnitude)

    def release(self, sums: Any, counts: Any) -> np.ndarray:
        sums = check_input(sums, "sums")
        counts = check_input(counts, "counts")
        if (counts < 1).any() or (counts != np.rint(counts)).any():
            raise ValueError("counts must be integers >= 1")
        sums, counts = np.broadcast_arrays(sums, counts)
        lo, hi = counts * self.lower, counts * self.upper
        slack = 1e-9 * counts * self.magnitude  # rounding of a float sum of clipped rewards
        if ((sums < lo - slack) | (sums > hi + slack)).any():
            raise ValueError("sums must lie in [counts * lower, counts * upper]: a reward outside "
                             "the declared bounds entered a sum (clip each reward, not the sum)")
        mean = np.clip(sums, lo, hi) / counts
        return self._grid_laplace(mean, (self.upper - self.lower) / counts)


class TreeMechanism(Mechanism):
    """Binary tree (counting) mechanism for continual sums (Dwork et al. 2010; Chan et al. 2011).

    A batch of independent streams (shape ``streams``) of values in
    ``[lower, upper]``, each at most ``horizon`` long. Element i of a stream
    enters one node per level, ``levels = floor(log2 horizon) + 1`` nodes in
    all; each node's partial sum is released once, with float-safe Laplace
    noise of scale ``levels (upper - lower + g)/epsilon``, and reused. The
    noisy prefix sum at count n adds the noisy nodes of the binary digits of
    n, so the whole sequence of prefix sums is epsilon-DP per element.

    Args:
        epsilon: budget per element for the whole stream.
        horizon: maximal stream length T.
        streams: shape of the batch of streams (e.g. ``(runs, arms)``).
        lower, upper: declared bounds of each element.

    Example:
        >>> tree = TreeMechanism(1.0, horizon=8, streams=(2,), seed=0)
        >>> tree.levels
        4
        >>> tree.add([1.0, 0.0], mask=[True, False]).shape
        (2,)
    """

    def __init__(self, epsilon: float, horizon: int, streams: tuple[int, ...] | int = (),
                 lower: float = 0.0, upper: float = 1.0, *, seed: Any = None,
                 secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.horizon = check_int("horizon", horizon)
        self.lower, self.upper = check_bounds(lower, upper)
        self.streams = (streams,) if isinstance(streams, int) else tuple(streams)
        for s in self.streams:
            check_int("streams", s)
        self.levels = self.horizon.bit_length()
        self.sensitivity = self.upper - self.lower
        self.node_sensitivity = self.levels * self.sensitivity
        # a node's partial sum covers up to 2^(levels - 1) elements
        self.magnitude = 2.0 ** (self.levels - 1) * max(abs(self.lower), abs(self.upper))
        self.snaps = self.levels  # one element is in one node per level, each node snapped
        self.scale = float(laplace_scale(self.node_sensitivity, self.epsilon, self.magnitude,
                                         self.snaps))
        self.grid = float(grid_step(self.node_sensitivity / self.epsilon, self.magnitude))
        n = int(np.prod(self.streams, dtype=np.int64))
        self._alpha = np.zeros((n, self.levels))   # exact partial sums of the open nodes
        self._noisy = np.zeros((n, self.levels))   # released (noisy) node values
        self.counts = np.zeros(self.streams, dtype=np.int64)
        self.noisy_sums = np.zeros(self.streams)
        self._bits = np.arange(self.levels)

    def add(self, values: Any, mask: Any = None) -> np.ndarray:
        """Append one element to every stream where ``mask`` is True; return all noisy prefix sums."""
        values = np.broadcast_to(check_input(values, "values"), self.streams)
        mask = np.ones(self.streams, bool) if mask is None else np.broadcast_to(
            np.asarray(mask, bool), self.streams)
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return self.noisy_sums
        flat_counts = self.counts.reshape(-1)
        if (flat_counts[idx] >= self.horizon).any():
            raise ValueError(f"a stream is longer than horizon={self.horizon}")
        x = np.clip(values.reshape(-1)[idx], self.lower, self.upper)
        i = flat_counts[idx] + 1
        low = (i & -i).astype(np.float64)
        j = np.log2(low).astype(np.int64)               # the node that closes at element i
        below = self._bits[None, :] < j[:, None]
        alpha = self._alpha[idx]
        closed = (alpha * below).sum(axis=1) + x
        alpha[below] = 0.0
        alpha[np.arange(idx.size), j] = closed
        self._alpha[idx] = alpha
        noisy_node = self._grid_laplace(closed, self.node_sensitivity)
        noisy = self._noisy[idx]
        noisy[np.arange(idx.size), j] = noisy_node
        self._noisy[idx] = noisy
        digits = ((i[:, None] >> self._bits[None, :]) & 1).astype(bool)
        flat_counts[idx] = i
        self.noisy_sums.reshape(-1)[idx] = (noisy * digits).sum(axis=1)
        return self.noisy_sums

    def preview(self, streams: Any, values: Any) -> np.ndarray:
        """Noisy prefix sums (R, m) if ``values[r, :p+1]`` were appended to stream ``streams[r]``.

        Vectorised form of m successive :meth:`add` calls, for agents that
        run their per-round rule over a block of rounds and stop at a data-
        dependent point: :meth:`commit` then keeps the first ``used[r]``
        elements. Nodes that close after that point are discarded unseen and
        redrawn if their elements ever occur, so the kept part has exactly the
        law of sequential :meth:`add` calls (every node is still noised once).

        Args:
            streams: flat indices (R,) into the batch of streams (each at most once).
            values: (R, m) the next m elements of each stream.
        """
        streams = np.asarray(streams, dtype=np.int64)
        x = np.clip(check_input(values, "values"), self.lower, self.upper)
        if x.ndim != 2 or x.shape[0] != streams.shape[0]:
            raise ValueError("values must have shape (len(streams), m)")
        r, m = x.shape
        n0 = self.counts.reshape(-1)[streams]
        pos = n0[:, None] + np.arange(1, m + 1)                  # element positions i
        n_bits = max(self.levels, int(pos.max()).bit_length()) if r else self.levels
        bits = np.arange(n_bits)
        alpha = np.zeros((r, n_bits))
        alpha[:, : self.levels] = self._alpha[streams]
        noisy = np.zeros((r, n_bits))
        noisy[:, : self.levels] = self._noisy[streams]
        total = alpha.sum(axis=1)[:, None]                      # exact prefix sum at n0
        above = np.cumsum(alpha[:, ::-1], axis=1)[:, ::-1] - alpha  # sum of closed nodes above j
        cum = np.cumsum(x, axis=1)
        low = pos & -pos
        j = np.log2(low).astype(np.int64)                         # level of the node closing at i
        k = pos - low                                             # the node covers (k, i]
        inside = k > n0[:, None]
        p_k = np.where(inside, total + np.take_along_axis(cum, np.clip(k - n0[:, None] - 1, 0, m - 1), 1),
                       np.take_along_axis(above, j, 1))
        node = total + cum - p_k
        noisy_node = self._grid_laplace(node, self.node_sensitivity)
        # noisy prefix sum: S~(i) = S~(k) + noisy node (k, i]; S~(k) for k <= n0 adds the
        # released nodes of n0 above level j. Chains inside the block are at most
        # log2(m) + 1 long, so as many passes settle every position.
        held = noisy * ((n0[:, None] >> bits) & 1)
        held_above = np.take_along_axis(np.cumsum(held[:, ::-1], axis=1)[:, ::-1] - held, j, 1)
        at_k = np.clip(k - n0[:, None] - 1, 0, m - 1)
        rows = np.arange(r)[:, None]
        sums = noisy_node + np.where(inside, 0.0, held_above)
        for _ in range(int(m).bit_length()):
            sums = noisy_node + np.where(inside, sums[rows, at_k], held_above)
        self._pending = (streams, n0, node, noisy_node, alpha, noisy, sums, bits)
        return sums

    def commit(self, used: Any) -> np.ndarray:
        """Keep the first ``used[r]`` elements of the last :meth:`preview`; return all prefix sums."""
        streams, n0, node, noisy_node, alpha, noisy, sums, bits = self._pending
        used = np.asarray(used, dtype=np.int64)
        m = node.shape[1]
        if used.shape != n0.shape or (used < 0).any() or (used > m).any():
            raise ValueError(f"used must be (R,) integers in [0, {m}]")
        n1 = n0 + used
        if (n1 > self.horizon).any():
            raise ValueError(f"a stream is longer than horizon={self.horizon}")
        rows = np.arange(len(streams))[:, None]
        ends = (n1[:, None] >> bits) << bits
        digit = ((n1[:, None] >> bits) & 1).astype(bool)
        in_block = ends > n0[:, None]
        at = np.clip(ends - n0[:, None] - 1, 0, m - 1)
        new_alpha = np.where(digit, np.where(in_block, node[rows, at], alpha), 0.0)
        new_noisy = np.where(digit & in_block, noisy_node[rows, at], noisy)
        self._alpha[streams] = new_alpha[:, : self.levels]
        self._noisy[streams] = new_noisy[:, : self.levels]
        self.counts.reshape(-1)[streams] = n1
        flat = self.noisy_sums.reshape(-1)
        flat[streams] = np.where(used > 0, sums[rows[:, 0], np.maximum(used - 1, 0)], flat[streams])
        self._pending = None
        return self.noisy_sums

    def released_nodes(self) -> np.ndarray:
        """The noisy node values released so far, shape ``streams + (levels,)``."""
        return self._noisy.reshape(self.streams + (self.levels,))


# --------------------------------------------------------------------------- Gaussian


class GaussianMechanism(Mechanism):
    """Float-safe Gaussian mechanism for vectors in a declared l2 ball, or scalars in bounds.

    With ``dim`` set, inputs are vectors (last axis) clipped to l2 norm
    ``l2_bound`` and the sensitivity is ``2 l2_bound`` (replacement); without
    it, inputs are scalars clipped to ``[lower, upper]`` with sensitivity
    ``upper - lower``. ``calibration='analytic'`` (Balle and Wang 2018) holds
    for any epsilon; ``'classic'`` (the papers' ``sqrt(2 ln(1.25/delta))``) is
    refused for epsilon >= 1.

    Float safety (PRIVACY.md rule 3): ``x + sigma z`` in floats leaks the input
    through the output's low bits (for x = 1 it lies on the 2^-53 lattice, for
    x = 0 it is the raw noise). Here the clipped input is snapped to a
    power-of-two grid ``g`` (``2^ceil(log2 sigma) 2^-40``, see :func:`grid_step`)
    and the Gaussian draw is rounded to the same grid, so every output is
    exactly ``snap(x) + k g`` with ``k = rint(sigma z / g)`` independent of x:
    the rounding of the Gaussian mechanism's output on the snapped input, which
    is post-processing. Snapping moves each coordinate by at most g/2, so the
    mechanism is calibrated for the snapped sensitivity
    ``sensitivity + sqrt(entries) g`` (``snapped_sensitivity``). We chose this
    route over discrete Gaussian noise (Canonne, Kamath and Steinke 2020)
    because it keeps the exact privacy profile of the continuous Gaussian
    (the analytic calibration and the joint accounting of
    :class:`GaussianStatistics` apply unchanged), it is vectorised and costs
    two roundings, and compiled kernels can add noise drawn ahead.

    Example:
        >>> m = GaussianMechanism(0.5, 1e-5, l2_bound=1.0, dim=2, calibration="classic", seed=0)
        >>> round(m.sigma, 6)
        19.379221
        >>> y = m([0.6, 0.8])
        >>> bool(np.all(y / m.grid == np.rint(y / m.grid)))   # every output on the grid
        True
    """

    def __init__(self, epsilon: float, delta: float, *, lower: float = 0.0, upper: float = 1.0,
                 l2_bound: float | None = None, dim: int | None = None,
                 calibration: str = "analytic", seed: Any = None, secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.delta = check_delta(delta)
        if calibration not in ("analytic", "classic"):
            raise ValueError(f"calibration must be 'analytic' or 'classic', got {calibration!r}")
        self.calibration = calibration
        self.dim = None if dim is None else check_int("dim", dim)
        if self.dim is not None:
            if l2_bound is None:
                raise ValueError("l2_bound is required with dim")
            self.l2_bound = check_real("l2_bound", l2_bound, low=0.0)
            self.sensitivity = 2.0 * self.l2_bound
            self.magnitude = self.l2_bound
        else:
            if l2_bound is not None:
                raise ValueError("l2_bound needs dim; scalar inputs use lower and upper")
            self.lower, self.upper = check_bounds(lower, upper)
            self.sensitivity = self.upper - self.lower
            self.magnitude = max(abs(self.lower), abs(self.upper))
        calibrate = classic_gaussian_sigma if calibration == "classic" else analytic_gaussian_sigma
        self.grid = float(grid_step(calibrate(self.sensitivity, self.epsilon, self.delta),
                                    self.magnitude))
        self.snapped_sensitivity = self.sensitivity + math.sqrt(self.dim or 1) * self.grid
        self.sigma = calibrate(self.snapped_sensitivity, self.epsilon, self.delta)

    def clip(self, x: np.ndarray) -> np.ndarray:
        """Clip in the sensitivity's norm (l2 for vectors, the interval for scalars)."""
        if self.dim is None:
            return np.clip(x, self.lower, self.upper)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension dim={self.dim}")
        return clip_l2(x, self.l2_bound)

    def __call__(self, x: Any) -> np.ndarray:
        x = snap(self.clip(check_input(x)), self.grid)
        _record(type(self).__name__, x, self.snapped_sensitivity, self.sigma, self.epsilon,
                self.delta)
        return x + gaussian_grid_noise(self.rng.standard_normal(x.shape), self.sigma, self.grid)


@functools.lru_cache(maxsize=64)
def _upper_indices(dim: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(dim)


def clip_l2(x: np.ndarray, bound: float) -> np.ndarray:
    """Scale every vector of x (..., d) down to l2 norm at most ``bound`` (the norm of every
    l2 sensitivity in this library; never per coordinate)."""
    sq = np.einsum("...i,...i->...", x, x)[..., None]
    return x * np.minimum(1.0, bound / np.sqrt(np.maximum(sq, 1e-300)))


#: The kinds of parts of a :class:`GaussianStatistics` message.
PART_KINDS = ("vector", "outer")


class GaussianPart(NamedTuple):
    """One part of a :class:`GaussianStatistics` message (computed from its declaration).

    Attributes:
        kind: ``"vector"`` (a vector in the l2 ball ``bound``, released as it is) or
            ``"outer"`` (``x x^T`` for x in the l2 ball ``bound``, released as its upper
            triangle, mirrored).
        bound: the declared l2 bound of the input vector.
        sd: standard deviation of the noise of every released coordinate.
        entries: released coordinates per slot (d, or d(d+1)/2 for an outer part).
        grid: the power-of-two grid of the part's outputs (:func:`grid_step` of ``sd``).
        sensitivity: l2 sensitivity of the part's released coordinates over the whole
            message, after snapping to the grid (see :class:`GaussianStatistics`).
    """

    kind: str
    bound: float
    sd: float
    entries: int
    grid: float
    sensitivity: float


class GaussianStatistics(Mechanism):
    """A message of several float-safe Gaussian-noised statistics, accounted jointly.

    Each part is declared by its kind, the l2 bound of its input and the noise
    standard deviation: ``"vector"`` parts release ``v + N(0, s^2 I)`` for ``v``
    clipped to the l2 ball ``bound`` (sensitivity ``2 bound``); ``"outer"``
    parts release ``x x^T + W`` for ``x`` clipped to the l2 ball ``bound``, W
    symmetric with i.i.d. N(0, s^2) entries on and above the diagonal (the upper
    triangle changes by at most ``sqrt(2) bound^2``: x = B e1 against B e2).
    Every released coordinate is snapped to the part's grid and gets Gaussian
    noise rounded to it (float-safe, as :class:`GaussianMechanism`), so each
    part's sensitivity grows by ``sqrt(entries) g``.

    A message may have ``slots`` copies of every part (one per arm, as in Han
    et al.'s multi-parameter protocol, where the pulled arm's slot carries the
    data and the others the message of a zero input): neighbouring users then
    change one slot fully, or two slots between data and zero (the arm
    changed), and the sensitivity is the larger of the two cases.

    The whole message is one Gaussian mechanism with noise-normalised
    sensitivity ``rho = sqrt(sum (Delta_i / s_i)^2)``; its exact guarantee is
    ``delta(epsilon)`` of the Gaussian profile at ``rho`` (:func:`gaussian_delta`
    with sigma = 1), which must not exceed the declared delta: a declared noise
    level is accepted when (and only when) the exact accounting proves it.

    Transforms: :mod:`ldp_gym.wrappers.compiled` (``release_vector``,
    ``release_outer``), shared with the agents' compiled rounds; noise comes
    from one :class:`NoiseStream` per part (``noise``).

    Args:
        epsilon, delta: the claimed guarantee of one message.
        parts: name -> ``(kind, bound, sd)``.
        dim: d, the length of every input vector.
        slots: copies of every part in one message.

    Example:
        >>> m = GaussianStatistics(1.0, 0.01, {"M": ("outer", 1.0, 12.4), "u": ("vector", 1.1, 6.8)},
        ...                        dim=2, seed=0)
        >>> m.rho < 0.4
        True
        >>> m.release("M", [[0.6, 0.8]]).shape
        (1, 2, 2)
    """

    def __init__(self, epsilon: float, delta: float, parts: dict[str, tuple[str, float, float]],
                 dim: int, *, slots: int = 1, seed: Any = None, secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.delta = check_delta(delta)
        self.dim = check_int("dim", dim)
        self.slots = check_int("slots", slots)
        if not parts:
            raise ValueError("parts must declare at least one part")
        self.parts: dict[str, GaussianPart] = {}
        single, double = 0.0, 0.0
        for name, spec in parts.items():
            if len(spec) != 3 or spec[0] not in PART_KINDS:
                raise ValueError(f"parts[{name!r}] must be (kind, bound, noise sd) with kind in "
                                 f"{PART_KINDS}")
            kind = spec[0]
            bound = check_real(f"bound of {name}", spec[1], low=0.0)
            sd = check_real(f"noise sd of {name}", spec[2], low=0.0)
            outer = kind == "outer"
            entries = self.dim * (self.dim + 1) // 2 if outer else self.dim
            norm = bound**2 if outer else bound          # largest norm of the released part
            change = math.sqrt(2.0) * norm if outer else 2.0 * norm  # one slot, any change
            grid = float(grid_step(sd, change))
            slack = math.sqrt(entries) * grid             # snapping: g/2 per coordinate, each side
            one = change + slack
            two = math.sqrt(2.0) * (norm + slack / 2.0) if self.slots > 1 else 0.0
            single += (one / sd) ** 2
            double += (two / sd) ** 2
            self.parts[name] = GaussianPart(kind, bound, sd, entries, grid, max(one, two))
        self.rho = math.sqrt(max(single, double))
        self.exact_delta = float(gaussian_delta(self.epsilon, self.rho, 1.0))
        if self.exact_delta > self.delta:
            raise ValueError(f"the declared noise gives delta={self.exact_delta:.3g} > "
                             f"delta={self.delta:g} at epsilon={self.epsilon:g}; raise the noise")
        self.streams = {name: NoiseStream(sub, functools.partial(_grid_normals, sd=p.sd,
                                                                 grid=p.grid))
                        for (name, sub), p in zip(self._substreams(self.parts).items(),
                                                  self.parts.values(), strict=True)}

    def noise(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The next grid noise of part ``name``, shape ``shape`` (..., entries): what the next
        releases add, in order (a compiled path adds them to inputs snapped to the grid)."""
        return self.streams[name].take(math.prod(shape)).reshape(shape)

    def release(self, name: str, x: Any) -> np.ndarray:
        """The part ``name`` of a batch of messages: x (..., d) -> vectors (..., d) or
        symmetric matrices (..., d, d)."""
        x = check_input(x)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension dim={self.dim}")
        part = self.parts[name]
        rows = np.ascontiguousarray(x.reshape(-1, self.dim))
        noise = self.noise(name, (rows.shape[0], part.entries))
        if part.kind == "outer":
            out = np.empty(rows.shape + (self.dim,))
            compiled.release_outer_rows(rows, part.bound, noise, part.grid, out)
        else:
            out = np.empty(rows.shape)
            compiled.release_vector_rows(rows, part.bound, noise, part.grid, out)
        out = out.reshape(x.shape + ((self.dim,) if part.kind == "outer" else ()))
        self.record(name, out, noise)
        return out

    def record(self, name: str, released: np.ndarray, noise: np.ndarray) -> None:
        """Trace a release for the replay test (:func:`recording`): its input is exactly the
        release minus its grid noise (the upper triangle of an outer part)."""
        if _TRACE.get() is None:
            return
        part = self.parts[name]
        if part.kind == "outer":
            rows, cols = _upper_indices(self.dim)
            released = released[..., rows, cols]
        inp = released - noise.reshape(released.shape)
        _record(f"{type(self).__name__}.{name}", inp, part.sensitivity, part.sd, self.epsilon,
                self.delta)


def _grid_normals(rng: Any, count: int, *, sd: float, grid: float) -> np.ndarray:
    return gaussian_grid_noise(rng.standard_normal(count), sd, grid)


def _normals(rng: Any, count: int) -> np.ndarray:
    return rng.standard_normal(count)


def _uniforms(rng: Any, count: int) -> np.ndarray:
    return rng.random(count)


# --------------------------------------------------------------------------- l2 ball


class L2BallMechanism(Mechanism):
    """Duchi et al.'s l2-ball mechanism (Han et al. 2021, Lemma 2.2): pure epsilon-LDP, unbiased.

    Inputs are clipped to the l2 ball of radius ``radius``. With probability
    ``1/2 + ||x||/(2R)`` keep ``x~ = R x/||x||`` else ``-R x/||x||``; then with
    probability ``e^eps/(1+e^eps)`` draw uniformly on the hemisphere of radius
    ``r`` (:func:`l2_ball_radius`) facing ``x~``, else on the other one.
    ``E[output] = x``. The output depends on the input only through two
    binary choices, so its float bits carry nothing more. Transform:
    :func:`ldp_gym.wrappers.compiled.l2_ball` (shared with the agents'
    compiled rounds); randomness: one :class:`NoiseStream` per kind of draw.

    Example:
        >>> m = L2BallMechanism(1.0, radius=1.0, dim=3, seed=0)
        >>> out = m([[0.3, 0.0, 0.4]])
        >>> bool(abs(np.linalg.norm(out) - m.output_radius) < 1e-9)
        True
    """

    #: the kinds of randomness of one call: normals (dim,) or uniforms (1,) per input
    KINDS = {"direction": _normals, "sign": _uniforms, "side": _uniforms, "sphere": _normals}

    def __init__(self, epsilon: float, radius: float, dim: int, *, seed: Any = None,
                 secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.radius = check_real("radius", radius, low=0.0)
        self.dim = check_int("dim", dim)
        self.output_radius = l2_ball_radius(self.epsilon, self.radius, self.dim)
        self.p_keep_side = math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon)) \
            if self.epsilon < 700 else 1.0
        self.streams = {kind: NoiseStream(sub, self.KINDS[kind])
                        for kind, sub in self._substreams(self.KINDS).items()}

    def __call__(self, x: Any) -> np.ndarray:
        x = check_input(x)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension dim={self.dim}")
        rows = np.ascontiguousarray(x.reshape(-1, self.dim))
        r = self.draws(rows.shape[0])
        out, clipped = np.empty(rows.shape), np.empty(rows.shape)
        compiled.l2_ball_rows(rows, self.radius, self.output_radius, self.p_keep_side,
                              r["direction"], r["sign"], r["side"], r["sphere"], clipped, out)
        self.record(clipped)
        return out.reshape(x.shape)

    def draws(self, count: int) -> dict[str, np.ndarray]:
        """The randomness of the next ``count`` inputs: ``direction`` and ``sphere`` normals
        (count, dim), ``sign`` and ``side`` uniforms (count,); reshape them to (rounds, batch...)
        for a block."""
        vec = (count, self.dim)
        return {kind: self.streams[kind].take(math.prod(shape)).reshape(shape)
                for kind, shape in (("direction", vec), ("sign", (count,)), ("side", (count,)),
                                    ("sphere", vec))}

    def record(self, clipped: np.ndarray) -> None:
        """Trace a batch of calls with their clipped inputs (:func:`recording`)."""
        _record(type(self).__name__, clipped, 2.0 * self.radius, self.output_radius,
                self.epsilon, 0.0)


# --------------------------------------------------------------------------- randomized response


class RandomizedResponse(Mechanism):
    """k-ary randomized response (Warner 1965): epsilon-LDP for a category in {0, ..., k-1}.

    Reports the true category with probability ``e^eps/(e^eps + k - 1)``,
    otherwise one of the other ``k - 1`` uniformly.

    Example:
        >>> rr = RandomizedResponse(1.0, n_categories=2, seed=0)
        >>> round(rr.p_true, 6)
        0.731059
    """

    def __init__(self, epsilon: float, n_categories: int = 2, *, seed: Any = None,
                 secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.n_categories = check_int("n_categories", n_categories, low=2)
        self.p_true = 1.0 / (1.0 + (self.n_categories - 1) * math.exp(-self.epsilon))

    def __call__(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if arr.dtype == np.bool_:
            raise TypeError("x must be integer categories, not bool")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError("x must be integer categories")
        if ((arr < 0) | (arr >= self.n_categories)).any():
            raise ValueError(f"x must lie in {{0, ..., n_categories - 1 = {self.n_categories - 1}}}")
        keep = self.rng.random(arr.shape) < self.p_true
        other = (arr + self.rng.integers(1, self.n_categories, size=arr.shape)) % self.n_categories
        _record(type(self).__name__, arr, 1, self.p_true, self.epsilon, 0.0)
        return np.where(keep, arr, other)
