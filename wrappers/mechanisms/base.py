"""Differential-privacy mechanisms: the primitives every private agent and wrapper uses.

Every mechanism here follows the rules of the README's privacy section:

* bounds are declared in the constructor, the sensitivity is computed from
  them, and every input is clipped to them in the norm the sensitivity uses;
* every parameter and every input is validated: a ``ValueError`` or ``TypeError``
  names the parameter and never echoes a private value;
* every release is float-safe (Mironov 2012): the input is snapped to a
  power-of-two grid and the noise lies on that grid, so an output is exactly
  ``snapped input + k g`` with ``k`` independent of the input and its low bits
  tell nothing. Laplace noise is discrete Laplace on the grid; Gaussian noise
  is a Gaussian draw rounded to the grid. :class:`GaussianMechanism` says
  why we chose this route rather than the discrete Gaussian;
* the Gaussian mechanism offers the classic calibration, only for
  ``epsilon < 1``, and the analytic one of Balle and Wang (2018);
* noise comes from a generator the mechanism owns, spawned from the caller's
  :class:`numpy.random.SeedSequence`, or from the operating system's CSPRNG
  in secure mode, which refuses integer seeds;
* every mechanism reports its guarantee as ``privacy = (epsilon, delta)``.

All mechanisms are vectorised over leading dimensions: an array of inputs is
an array of independent users (or rewards), each privatised on its own.

Layout: this module holds the :class:`Mechanism` base class and the
mechanisms (:class:`LaplaceMechanism`, :class:`PrivateEpisodeMean`,
:class:`GaussianMechanism`, :class:`GaussianStatistics` with
:class:`GaussianPart`, :class:`L2BallMechanism`, :class:`RandomizedResponse`).
The other concerns live in their own modules, and every name of ``__all__``
is importable from here as well:

* :mod:`ldp_gym.wrappers.mechanisms.calibration`: the grid and calibration arithmetic,
  that is ``GRID_BITS``, :func:`grid_step`, :func:`laplace_scale`, the Gaussian
  calibrations and :func:`l2_ball_radius`;
* :mod:`ldp_gym.wrappers.mechanisms.noise`: randomness and noise primitives,
  that is :class:`SecureGenerator`, :func:`make_rng`, :class:`NoiseStream`,
  :func:`snap`, :func:`gaussian_grid_noise`, :func:`clip_l2` and tracing with
  :func:`recording`;
* :mod:`ldp_gym.wrappers.mechanisms.continual`: continual counting (:class:`TreeMechanism`);
* :mod:`ldp_gym.wrappers.mechanisms.compiled`: the compiled (numba) transforms.

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

import functools
import math
from typing import Any, NamedTuple

import numpy as np
from typing_extensions import override

from ldp_gym.validation import (
    check_bounds,
    check_delta,
    check_epsilon,
    check_input,
    check_int,
    check_real,
)

from . import compiled
from .calibration import (
    analytic_gaussian_sigma,
    check_sampler_tail,
    classic_gaussian_sigma,
    gaussian_delta,
    grid_step,
    l2_ball_radius,
    laplace_scale,
)
from .noise import (
    NoiseStream,
    SecureGenerator,
    clip_l2,
    draw_discrete_laplace,
    draw_grid_normals,
    draw_normals,
    draw_uniforms,
    gaussian_grid_noise,
    make_rng,
    record_release,
    snap,
    tracing,
    upper_indices,
)
from .privacy import Privacy

__all__ = ["PART_KINDS", "GaussianEpisodeMean", "GaussianMechanism", "GaussianPart",
           "GaussianStatistics",
           "L2BallMechanism", "LaplaceMechanism", "Mechanism", "PrivateEpisodeMean",
           "RandomizedResponse"]


# --------------------------------------------------------------------------- base class


class Mechanism:
    """Base class: owns a generator, reports ``privacy = (epsilon, delta)``.

    Args:
        epsilon: privacy budget, in (0, inf).
        seed: ``None``, int, ``SeedSequence`` or ``Generator``. Spawn one per mechanism.
            Ints and sequences are domain-separated (:func:`make_rng`). Seeded noise is for
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
        """One independent child stream per kind of draw, spawned from the mechanism's
        generator. Each kind's draws then form one sequence, so drawing a block of rounds at
        once (``draws``) gives bitwise the numbers of as many single calls."""
        names = tuple(names)
        if isinstance(self.rng, SecureGenerator):
            return {n: SecureGenerator() for n in names}
        return dict(zip(names, self.rng.spawn(len(names)), strict=True))

    @property
    def privacy(self) -> tuple[float, float]:
        """The guarantee ``(epsilon, delta)`` of one call on one input."""
        return (self.epsilon, self.delta)

    def release_bound(self, part: str | None = None) -> float:
        """A magnitude no coordinate of a release (of ``part``) exceeds but with probability
        below 1e-30.

        That is 80 scales beyond the bounds for Laplace noise and 40 sd for Gaussian noise.
        A server refuses a larger value as a message no user sent. Default: no bound (inf).
        """
        return math.inf

    def _geometric_p(self, sensitivity: Any, grid: Any) -> Any:
        """The success probability of the geometric pairs whose difference is the discrete
        Laplace noise on ``grid`` for ``sensitivity``: ``P(k) ~ exp(-|k| g eps / (sensitivity
        + snaps g))``. It includes the snapping of every coordinate one change touches."""
        return -np.expm1(-grid * self.epsilon / (sensitivity + self.snaps * grid))

    def _grid_laplace(self, x: np.ndarray, sensitivity: Any) -> np.ndarray:
        """Snap ``x`` to the grid and add discrete Laplace noise calibrated to
        ``sensitivity + snaps g``, where ``snaps`` counts the snapped coordinates one change
        touches."""
        # a scalar sensitivity's calibration is computed once per (sensitivity, epsilon,
        # magnitude, snaps): bitwise the values of computing it at every call
        key = (sensitivity, self.epsilon, self.magnitude, self.snaps) \
            if type(sensitivity) is float else None
        cache = self.__dict__.setdefault("_calibrations", {})
        cal = cache.get(key) if key is not None else None
        if cal is None:
            sens = np.asarray(sensitivity, dtype=np.float64)
            if sens.ndim:  # per-element sensitivities (e.g. episode means over different counts)
                sens = np.broadcast_to(sens, x.shape)
            g = grid_step(sens / self.epsilon, self.magnitude)
            snapped = sens + self.snaps * g
            cal = (sens, g, self._geometric_p(sens, g), snapped / self.epsilon)
            if key is not None:
                cache[key] = cal
        sens, g, p, scale = cal
        k = np.rint(x / g) + (self.rng.geometric(p, size=x.shape)
                              - self.rng.geometric(p, size=x.shape))
        record_release(type(self).__name__, x, sens, scale, self.epsilon, 0.0)
        return k * g


# --------------------------------------------------------------------------- Laplace


class LaplaceMechanism(Mechanism):
    """Float-safe Laplace mechanism for values in declared bounds: pure epsilon-DP.

    Each input coordinate lies in ``[lower, upper]``. With ``dim`` set, each
    input is a vector of ``dim`` such coordinates along the last axis, and the l1
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
        self.stream = self._noise_stream(self.sensitivity)

    def _noise_stream(self, sensitivity: float) -> NoiseStream:
        """Discrete Laplace noise on the grid for ``sensitivity`` (:meth:`_geometric_p`), drawn
        ahead in a stream: a round alone and a block of rounds drawn at once see the same
        noise."""
        return NoiseStream(self.rng, functools.partial(
            draw_discrete_laplace, p=float(self._geometric_p(sensitivity, self.grid)),
            grid=self.grid))

    def record(self, clipped: np.ndarray) -> None:
        """Trace a release of the clipped inputs ``clipped`` for the replay test
        (:func:`recording`); a compiled path that adds :meth:`noise` itself calls it too."""
        record_release(type(self).__name__, clipped, self.sensitivity, self.scale, self.epsilon, 0.0)

    def noise(self, count: int) -> np.ndarray:
        """The next ``count`` noise values on the grid: what the next releases add, in order.

        A compiled path adds them to inputs snapped to the grid (:func:`compiled.snap_add`).
        """
        return self.stream.take(count)

    @override
    def release_bound(self, part: str | None = None) -> float:
        return self.magnitude + self.grid + 80.0 * self.scale

    def __call__(self, x: Any) -> np.ndarray:
        """Clip ``x`` to the bounds, snap it to the grid and add one noise value per entry."""
        x = check_input(x)
        if self.dim is not None and (x.ndim == 0 or x.shape[-1] != self.dim):
            raise ValueError(f"x must have last dimension dim={self.dim}")
        x = np.clip(x, self.lower, self.upper)
        self.record(x)
        noise = self.noise(x.size).reshape(x.shape)
        return np.rint(x / self.grid) * self.grid + noise + 0.0  # compiled.snap_add, vectorised


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
    reward's influence: one reward of 1000 among 16 moves a mean in [0, 1]
    from 0.5 to 1. A sum outside ``[counts lower, counts upper]`` proves that a
    reward broke the bounds, so it is refused. A sum outside them by no more
    than float rounding is clipped instead.

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

    def clip(self, rewards: Any) -> np.ndarray:
        """Single rewards clipped to ``[lower, upper]``: what a caller does to every reward
        before it enters a sum, since a sum cannot be clipped reward by reward."""
        return np.clip(check_input(rewards, "rewards"), self.lower, self.upper)

    def scale(self, counts: Any) -> np.ndarray:
        """Noise scale of a release over ``counts`` rewards."""
        return laplace_scale((self.upper - self.lower) / np.asarray(counts, np.float64),
                             self.epsilon, self.magnitude)

    def release(self, sums: Any, counts: Any) -> np.ndarray:
        """The private means of ``counts`` rewards summing to ``sums``, broadcast together."""
        mean, counts = _episode_means(sums, counts, self.lower, self.upper, self.magnitude)
        return self._grid_laplace(mean, (self.upper - self.lower) / counts)


def _episode_means(sums: Any, counts: Any, lower: float, upper: float,
                   magnitude: float) -> tuple[np.ndarray, np.ndarray]:
    """The means ``sums / counts`` of episodes of rewards in ``[lower, upper]``, and the counts.

    A sum outside ``[counts lower, counts upper]`` proves that a reward broke the bounds. It is
    refused, up to the float rounding of a sum of clipped rewards.
    """
    sums = check_input(sums, "sums")
    counts = check_input(counts, "counts")
    if (counts < 1).any() or (counts != np.rint(counts)).any():
        raise ValueError("counts must be integers >= 1")
    sums, counts = np.broadcast_arrays(sums, counts)
    lo, hi = counts * lower, counts * upper
    slack = 1e-9 * counts * magnitude  # rounding of a float sum of clipped rewards
    if ((sums < lo - slack) | (sums > hi + slack)).any():
        raise ValueError("sums must lie in [counts * lower, counts * upper]: a reward outside "
                         "the declared bounds entered a sum (clip each reward, not the sum)")
    return np.clip(sums, lo, hi) / counts, counts


class GaussianEpisodeMean:
    """Private means over disjoint episodes with Gaussian noise: rho-zCDP per reward.

    The zCDP counterpart of :class:`PrivateEpisodeMean`, for the adaptive episodes of Azize and
    Basu (2024). A mean of n rewards in ``[lower, upper]`` has sensitivity
    ``s = (upper - lower)/n``. The Gaussian mechanism with ``sigma = s / sqrt(2 rho)`` is
    rho-zCDP (Bun and Steinke 2016, Prop. 1.6). Each reward enters one release, so the
    releases compose in parallel: rho-zCDP per reward overall.

    The release is float-safe, as :class:`GaussianMechanism`. The mean is snapped to a
    power-of-two grid g and the noise is rounded to it. Snapping moves a mean by at most g/2,
    so sigma is calibrated for ``s + g``. The caller clips the rewards, as for
    :class:`PrivateEpisodeMean`. A sum that proves a reward broke the bounds is refused.

    The normal samplers never return ``|z|`` above ``SAMPLER_Z_MAX`` (12 seeded, 8.57 in
    secure mode), so each release is within total variation ``eta = erfc(z_max/sqrt(2))``
    (4e-33 seeded, 1e-17 secure) of the exact Gaussian mechanism. zCDP has no additive slack
    for that: the guarantee holds for the exact mechanism, and for this one up to an event of
    probability ``eta`` per release, as (epsilon, delta)-DP conversions make precise
    (:meth:`~ldp_gym.wrappers.mechanisms.privacy.Privacy.to_epsilon_delta` at a delta far
    above eta).

    Args:
        rho: the zCDP budget per reward, > 0.
        lower: the lower bound of every reward.
        upper: the upper bound of every reward.
        seed: as :class:`Mechanism`.
        secure: as :class:`Mechanism`.

    Example:
        >>> from ldp_gym.wrappers.mechanisms import GaussianEpisodeMean
        >>> m = GaussianEpisodeMean(0.5, seed=0)
        >>> m.release([3.0, 8.0], [4, 16]).shape
        (2,)
        >>> print(m.privacy)
        global zCDP, rho=0.5 per reward
    """

    def __init__(self, rho: float, lower: float = 0.0, upper: float = 1.0, *,
                 seed: Any = None, secure: bool = False):
        self.rho = check_real("rho", rho, low=0.0)
        self.lower, self.upper = check_bounds(lower, upper)
        self.magnitude = max(abs(self.lower), abs(self.upper))
        self.rng = make_rng(seed, secure=secure)

    @property
    def privacy(self) -> Privacy:
        """The guarantee of the releases: rho-zCDP per reward."""
        return Privacy("global", rho=self.rho)

    def clip(self, rewards: Any) -> np.ndarray:
        """Single rewards clipped to ``[lower, upper]``, before they enter a sum."""
        return np.clip(check_input(rewards, "rewards"), self.lower, self.upper)

    def calibration(self, counts: Any) -> tuple[np.ndarray, np.ndarray]:
        """The grid g and the noise sd sigma of releases over ``counts`` rewards."""
        sens = (self.upper - self.lower) / np.asarray(counts, np.float64)
        root = math.sqrt(2.0 * self.rho)
        grid = grid_step(sens / root, self.magnitude)
        return grid, (sens + grid) / root

    def release(self, sums: Any, counts: Any) -> np.ndarray:
        """The private means of ``counts`` rewards summing to ``sums``, broadcast together."""
        mean, counts = _episode_means(sums, counts, self.lower, self.upper, self.magnitude)
        grid, sigma = self.calibration(counts)
        noise = gaussian_grid_noise(self.rng.standard_normal(mean.shape), sigma, grid)
        return snap(mean, grid) + noise


# --------------------------------------------------------------------------- Gaussian


class GaussianMechanism(Mechanism):
    """Float-safe Gaussian mechanism for vectors in a declared l2 ball, or scalars in bounds.

    With ``dim`` set, inputs are vectors along the last axis, clipped to l2 norm
    ``l2_bound``, and the sensitivity is ``2 l2_bound`` (replacement). Without
    it, inputs are scalars clipped to ``[lower, upper]`` with sensitivity
    ``upper - lower``. ``calibration='analytic'``, of Balle and Wang (2018), holds
    for any epsilon. ``'classic'``, the papers' ``sqrt(2 ln(1.25/delta))``, is
    refused for epsilon >= 1.

    Float safety: ``x + sigma z`` in floats leaks the input through the
    output's low bits. For x = 1 it lies on the 2^-53 lattice; for x = 0 it is
    the raw noise. Here the clipped input is snapped to a
    power-of-two grid ``g`` (``2^ceil(log2 sigma) 2^-40``, see :func:`grid_step`)
    and the Gaussian draw is rounded to the same grid, so every output is
    exactly ``snap(x) + k g`` with ``k = rint(sigma z / g)`` independent of x:
    the rounding of the Gaussian mechanism's output on the snapped input, which
    is post-processing. Snapping moves each coordinate by at most g/2, so the
    mechanism is calibrated for the snapped sensitivity
    ``sensitivity + sqrt(entries) g`` (``snapped_sensitivity``). We chose this
    route over the discrete Gaussian noise of Canonne, Kamath and Steinke (2020)
    for three reasons. It keeps the exact privacy profile of the continuous
    Gaussian, so the analytic calibration and the joint accounting of
    :class:`GaussianStatistics` apply unchanged. It is vectorised and costs two
    roundings. And compiled kernels can add noise drawn ahead.

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
        check_sampler_tail(self.epsilon, self.delta, isinstance(self.rng, SecureGenerator))

    def clip(self, x: np.ndarray) -> np.ndarray:
        """Clip in the sensitivity's norm: l2 for vectors, the interval for scalars."""
        if self.dim is None:
            return np.clip(x, self.lower, self.upper)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension dim={self.dim}")
        return clip_l2(x, self.l2_bound)

    def noise(self, shape: tuple[int, ...]) -> np.ndarray:
        """The grid noise of the next releases of ``shape`` inputs in all, from the mechanism's
        stream in order.

        It is what ``__call__`` adds. A compiled path adds it, drawn ahead, to inputs clipped
        and snapped to the grid.
        """
        return gaussian_grid_noise(self.rng.standard_normal(shape), self.sigma, self.grid)

    def __call__(self, x: Any) -> np.ndarray:
        """Clip ``x``, snap it to the grid and add Gaussian grid noise to every entry."""
        x = snap(self.clip(check_input(x)), self.grid)
        record_release(type(self).__name__, x, self.snapped_sensitivity, self.sigma, self.epsilon,
                self.delta)
        return x + self.noise(x.shape)


#: The kinds of parts of a :class:`GaussianStatistics` message.
PART_KINDS = ("vector", "outer")


class GaussianPart(NamedTuple):
    """One part of a :class:`GaussianStatistics` message, computed from its declaration.

    Attributes:
        kind: ``"vector"`` or ``"outer"``. A vector part is a vector in the l2 ball
            ``bound``, released as it is. An outer part is ``x x^T`` for x in the l2 ball
            ``bound``, released as its upper triangle and mirrored.
        bound: the declared l2 bound of the input vector.
        sd: standard deviation of the noise of every released coordinate.
        entries: released coordinates per slot: d, or d(d+1)/2 for an outer part.
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
    standard deviation. ``"vector"`` parts release ``v + N(0, s^2 I)`` for ``v``
    clipped to the l2 ball ``bound``, with sensitivity ``2 bound``. ``"outer"``
    parts release ``x x^T + W`` for ``x`` clipped to the l2 ball ``bound``, W
    symmetric with i.i.d. N(0, s^2) entries on and above the diagonal. Their upper
    triangle changes by at most ``sqrt(2) bound^2``: x = B e1 against B e2.
    Every released coordinate is snapped to the part's grid and gets Gaussian
    noise rounded to it, float-safe as in :class:`GaussianMechanism`. So each
    part's sensitivity grows by ``sqrt(entries) g``.

    A message may have ``slots`` copies of every part, one per arm, as in Han
    et al.'s multi-parameter protocol. There the pulled arm's slot carries the
    data and the others the message of a zero input. Neighbouring users then
    change one slot fully, or two slots between data and zero when the arm
    changed. The sensitivity is the larger of the two cases.

    The whole message is one Gaussian mechanism with noise-normalised
    sensitivity ``rho = sqrt(sum (Delta_i / s_i)^2)``. Its exact guarantee is
    ``delta(epsilon)`` of the Gaussian profile at ``rho``: :func:`gaussian_delta`
    with sigma = 1. This must not exceed the declared delta: a declared noise
    level is accepted when, and only when, the exact accounting proves it.

    Transforms: :mod:`ldp_gym.wrappers.mechanisms.compiled` (``release_vector``,
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
        check_sampler_tail(self.epsilon, self.delta, isinstance(self.rng, SecureGenerator))
        self.streams = {name: NoiseStream(sub, functools.partial(draw_grid_normals, sd=p.sd,
                                                                 grid=p.grid))
                        for (name, sub), p in zip(self._substreams(self.parts).items(),
                                                  self.parts.values(), strict=True)}

    def release_bound(self, part: str | None = None) -> float:
        """The release bound of part ``part``; by default, the largest over the parts."""
        parts = self.parts.values() if part is None else [self.parts[part]]
        return max((p.bound**2 if p.kind == "outer" else p.bound) + p.grid + 40.0 * p.sd
                   for p in parts)

    def noise(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The next grid noise of part ``name``, shape ``shape`` (..., entries): what the next
        releases add, in order.

        A compiled path adds them to inputs snapped to the grid.
        """
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
        release minus its grid noise. For an outer part, both are taken on the upper triangle."""
        if not tracing():
            return
        part = self.parts[name]
        if part.kind == "outer":
            rows, cols = upper_indices(self.dim)
            released = released[..., rows, cols]
        inp = released - noise.reshape(released.shape)
        record_release(f"{type(self).__name__}.{name}", inp, part.sensitivity, part.sd, self.epsilon,
                self.delta)


# --------------------------------------------------------------------------- l2 ball


class L2BallMechanism(Mechanism):
    """Duchi et al.'s l2-ball mechanism (Han et al. 2021, Lemma 2.2): pure epsilon-LDP, unbiased.

    Inputs are clipped to the l2 ball of radius ``radius``. With probability
    ``1/2 + ||x||/(2R)`` keep ``x~ = R x/||x||`` else ``-R x/||x||``; then with
    probability ``e^eps/(1+e^eps)`` draw uniformly on the hemisphere of radius
    ``r`` (:func:`l2_ball_radius`) facing ``x~``, else on the other one.
    ``E[output] = x``. The output depends on the input only through two
    binary choices, so its float bits carry nothing more. Transform:
    :func:`ldp_gym.wrappers.mechanisms.compiled.l2_ball`, shared with the agents'
    compiled rounds. Randomness: one :class:`NoiseStream` per kind of draw.

    Example:
        >>> m = L2BallMechanism(1.0, radius=1.0, dim=3, seed=0)
        >>> out = m([[0.3, 0.0, 0.4]])
        >>> bool(abs(np.linalg.norm(out) - m.output_radius) < 1e-9)
        True
    """

    #: the kinds of randomness of one call: normals (dim,) or uniforms (1,) per input
    KINDS = {"direction": draw_normals, "sign": draw_uniforms, "side": draw_uniforms, "sphere": draw_normals}

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

    def release_bound(self, part: str | None = None) -> float:
        """The output sphere's radius, plus a relative 1e-9 for rounding."""
        return self.output_radius * (1.0 + 1e-9)

    def __call__(self, x: Any) -> np.ndarray:
        """Clip every row of ``x`` (..., dim) to the ball and release it as a point on the output sphere."""
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
        record_release(type(self).__name__, clipped, 2.0 * self.radius, self.output_radius,
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
        """Keep each category of ``x`` with probability ``p_true``, else report another uniformly."""
        arr = np.asarray(x)
        if arr.dtype == np.bool_:
            raise TypeError("x must be integer categories, not bool")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError("x must be integer categories")
        if ((arr < 0) | (arr >= self.n_categories)).any():
            raise ValueError(f"x must lie in {{0, ..., n_categories - 1 = {self.n_categories - 1}}}")
        keep = self.rng.random(arr.shape) < self.p_true
        other = (arr + self.rng.integers(1, self.n_categories, size=arr.shape)) % self.n_categories
        record_release(type(self).__name__, arr, 1, self.p_true, self.epsilon, 0.0)
        return np.where(keep, arr, other)
