"""Continual counting: the binary tree mechanism, for scalars (:class:`TreeMechanism`,
Laplace) and for the outer products of vectors (:class:`GramTreeMechanism`, Gaussian).

Noisy prefix sums of streams of bounded values, epsilon-DP per element over
the whole stream, after Dwork et al. (2010) and Chan et al. (2011). They are
built on the float-safe grid Laplace of :class:`ldp_gym.wrappers.mechanisms.Mechanism`.
One element is added by one compiled function (:func:`tree_add`), which
:meth:`TreeMechanism.add` and the compiled agents built on the tree (DP-UCB)
call alike. Also importable from :mod:`ldp_gym.wrappers.mechanisms`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import njit

from ldp_gym.validation import check_bounds, check_delta, check_input, check_int, check_real

from .base import Mechanism
from .calibration import analytic_gaussian_sigma, check_sampler_tail, grid_step, laplace_scale
from .compiled import snap_add
from .noise import (
    NoiseStream,
    SecureGenerator,
    clip_l2,
    draw_discrete_laplace,
    gaussian_grid_noise,
    record_release,
    snap,
)

__all__ = ["GramTreeMechanism", "TreeMechanism", "tree_add"]


@njit(cache=True, nogil=True, error_model="numpy")
def tree_add(alpha: np.ndarray, noisy: np.ndarray, count: int, x: float, noise: float,
             grid: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """Append ``x``, already clipped, as element ``i = count + 1`` of one stream.

    The node of level ``j``, the number of trailing zeros of i, closes with the exact sum of
    the open nodes below it and x. It is released once, as that sum snapped to ``grid`` plus
    ``noise``, a discrete Laplace value on the grid. The noisy prefix sum at i adds the
    released nodes of i's binary digits.

    Args:
        alpha: (levels,) the exact partial sums of the open nodes, in place.
        noisy: (levels,) the released node values, in place.
        count: the number of elements appended before ``x``.
        x: the new element, already clipped.
        noise: the noise value of the node that closes.
        grid: the grid the node's sum is snapped to.

    Returns:
        ``(closed, prefix)``: the node's exact sum, which its release protects, and the noisy
        prefix sum.
    """
    i = count + 1
    j = 0
    while (i >> j) & 1 == 0:
        j += 1
    closed = 0.0
    for b in range(j):
        closed += alpha[b]
        alpha[b] = 0.0
    closed += x
    alpha[j] = closed
    noisy[j] = snap_add(closed, noise, grid)
    prefix = 0.0
    for b in range(noisy.shape[0]):
        if (i >> b) & 1:
            prefix += noisy[b]
    return closed, prefix


@njit(cache=True, nogil=True, error_model="numpy")
def _add_streams(alpha: np.ndarray, noisy: np.ndarray, counts: np.ndarray, sums: np.ndarray,
                 streams: np.ndarray, x: np.ndarray, noise: np.ndarray, grid: float,
                 closed: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`tree_add` of ``x[r]`` to stream ``streams[r]``, with ``noise[r]``, for every r."""
    for r in range(streams.shape[0]):
        s = streams[r]
        closed[r], sums[s] = tree_add(alpha[s], noisy[s], counts[s], x[r], noise[r], grid)
        counts[s] += 1


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

    def clip(self, values: Any) -> np.ndarray:
        """Elements clipped to ``[lower, upper]``, as :meth:`add` clips them."""
        return np.clip(check_input(values, "values"), self.lower, self.upper)

    @functools.cached_property
    def stream(self) -> NoiseStream:
        """The nodes' discrete Laplace noise on :attr:`grid`, drawn ahead: one value per
        element added, in order.

        The noise is calibrated for :attr:`node_sensitivity` and the snapping of the ``levels``
        nodes one element enters. The stream is built on first use, from the calibration then
        in force.
        """
        return NoiseStream(self.rng, functools.partial(
            draw_discrete_laplace, p=float(self._geometric_p(self.node_sensitivity, self.grid)),
            grid=self.grid))

    def noise(self, count: int) -> np.ndarray:
        """The noise of the next ``count`` elements added; one node closes per element."""
        return self.stream.take(count)

    def record(self, closed: np.ndarray) -> None:
        """Trace the release of nodes whose exact sums are ``closed`` (:func:`recording`);
        a compiled path that calls :func:`tree_add` itself calls it too."""
        record_release(type(self).__name__, closed, self.node_sensitivity,
                (self.node_sensitivity + self.snaps * self.grid) / self.epsilon, self.epsilon,
                0.0)

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
        closed = np.empty(idx.size)
        _add_streams(self._alpha, self._noisy, flat_counts, self.noisy_sums.reshape(-1), idx, x,
                     self.noise(idx.size), self.grid, closed)
        self.record(closed)
        return self.noisy_sums

    def released_nodes(self) -> np.ndarray:
        """The noisy node values released so far, shape ``streams + (levels,)``."""
        return self._noisy.reshape(self.streams + (self.levels,))


class GramTreeMechanism(Mechanism):
    """Continual release of the Gram matrices ``sum_s z_s z_s^T`` of streams of vectors, by the
    binary tree mechanism with Gaussian nodes (Shariff and Sheffet, NeurIPS 2018, Sec. 4,
    after Dwork et al. 2010 and Chan et al. 2011).

    Each stream's vectors z in R^n are clipped to l2 norm ``bound``. At element i the node of
    level j, the number of trailing zeros of i, closes: it holds the partial sum of ``z z^T``
    over the last 2^j elements, and its upper triangle (diagonal included, E = n (n + 1)/2
    entries) is released once with Gaussian noise and reused. An element is in at most
    ``levels = floor(log2 horizon) + 1`` released nodes. The noisy prefix sum at count i adds the nodes
    of the binary digits of i, mirrored into a symmetric matrix.

    Privacy: (epsilon, delta)-DP per element for the whole sequence of prefix sums. Replacing
    z by z' moves a node's upper triangle by at most ``||z z^T - z' z'^T||_F <= sqrt(2)
    bound^2`` in l2, and the element is in at most ``levels`` nodes: one Gaussian mechanism of
    l2 sensitivity ``sqrt(levels) (sqrt(2) bound^2 + sqrt(E) grid)``, the last term for the
    snapping of each node to the float-safe grid. Its sigma is the analytic calibration
    (Balle and Wang 2018), exact for that sensitivity. The float safety is
    :class:`~ldp_gym.wrappers.mechanisms.GaussianMechanism`'s: node sums snapped to the grid,
    Gaussian draws rounded to it.

    A stream longer than ``horizon`` continues in a fresh tree, on top of the released total
    of the full one: each element is in exactly one tree, so the guarantee per element holds
    for any length.

    Attributes: ``sensitivity`` is one node's, ``sqrt(2) bound^2``; ``snapped_sensitivity``
    the whole tree's, for which ``sigma`` is calibrated (rounded up by 1e-9, relative).

    Args:
        epsilon, delta: the budget per element for the whole stream.
        horizon: the elements per tree, T.
        size: n, the vectors' dimension.
        bound: the declared l2 bound of the vectors.
        streams: the number of independent streams (e.g. runs).

    Example:
        >>> import numpy as np
        >>> from ldp_gym.wrappers.mechanisms import GramTreeMechanism
        >>> tree = GramTreeMechanism(1.0, 1e-5, horizon=8, size=2, bound=1.0, streams=3, seed=0)
        >>> tree.levels, round(tree.sigma, 3)
        (4, 10.552)
        >>> gram = tree.add(np.array([[0.6, 0.8]] * 3))
        >>> gram.shape, bool((gram == gram.transpose(0, 2, 1)).all())
        ((3, 2, 2), True)
    """

    def __init__(self, epsilon: float, delta: float, horizon: int, size: int, bound: float,
                 streams: int = 1, *, seed: Any = None, secure: bool = False):
        super().__init__(epsilon, seed=seed, secure=secure)
        self.delta = check_delta(delta)
        self.horizon = check_int("horizon", horizon)
        self.size = check_int("size", size)
        self.bound = check_real("bound", bound, low=0.0)
        if not 1e-150 < self.bound < 1e150:
            raise ValueError(f"bound must lie in (1e-150, 1e150) (its square and its tree's sums "
                             f"are computed in float64), got {bound!r}")
        self.streams = check_int("streams", streams)
        self.levels = self.horizon.bit_length()
        self.rows, self.cols = np.triu_indices(self.size)
        entries = self.rows.size
        self.sensitivity = math.sqrt(2.0) * self.bound ** 2
        total = math.sqrt(self.levels) * self.sensitivity
        # a node's partial sum covers up to 2^(levels - 1) elements, each entry within bound^2
        self.magnitude = 2.0 ** (self.levels - 1) * self.bound ** 2
        self.grid = float(grid_step(analytic_gaussian_sigma(total, self.epsilon, self.delta),
                                    self.magnitude))
        self.snapped_sensitivity = math.sqrt(self.levels) * (
            self.sensitivity + math.sqrt(entries) * self.grid)
        # rounded up: the root finder's sigma can sit 1e-12 (relative) on the wrong side of delta
        self.sigma = analytic_gaussian_sigma(self.snapped_sensitivity, self.epsilon,
                                             self.delta) * (1.0 + 1e-9)
        check_sampler_tail(self.epsilon, self.delta, isinstance(self.rng, SecureGenerator),
                           draws=self.levels * entries)
        self.count = 0
        self._alpha = np.zeros((self.streams, self.levels, entries))  # open nodes' exact sums
        self._noisy = np.zeros((self.streams, self.levels, entries))  # released node values
        self._base = np.zeros((self.streams, entries))  # the released totals of full trees
        self.gram = np.zeros((self.streams, self.size, self.size))    # the noisy prefix sums

    def add(self, z: Any) -> np.ndarray:
        """Append one vector to every stream (``z``: (streams, size)); returns every stream's
        noisy prefix Gram matrix (streams, size, size), symmetric."""
        z = check_input(z, "z")
        if z.shape != (self.streams, self.size):
            raise ValueError(f"z must have shape (streams={self.streams}, size={self.size}), got "
                             f"{z.shape}")
        huge = ~np.isfinite(np.einsum("ij,ij->i", z, z))[:, None]  # a square norm overflows:
        scale = np.where(huge, np.abs(z).max(axis=1, keepdims=True), 1.0)
        z = clip_l2(z / scale, self.bound)
        if self.count and self.count % self.horizon == 0:  # a full tree: the next one starts
            self._base += self._noisy[:, [b for b in range(self.levels)
                                          if (self.horizon >> b) & 1]].sum(axis=1)
            self._alpha[:] = 0.0
            self._noisy[:] = 0.0
        self.count += 1
        i = (self.count - 1) % self.horizon + 1  # the element's index in its tree
        j = (i & -i).bit_length() - 1  # the level of the node that closes: i's trailing zeros
        closed = self._alpha[:, :j].sum(axis=1) + z[:, self.rows] * z[:, self.cols]
        self._alpha[:, :j] = 0.0
        self._alpha[:, j] = closed
        noise = gaussian_grid_noise(self.rng.standard_normal(closed.shape), self.sigma, self.grid)
        self._noisy[:, j] = snap(closed, self.grid) + noise
        record_release(type(self).__name__, closed, self.snapped_sensitivity, self.sigma,
                       self.epsilon, self.delta)
        digits = [b for b in range(self.levels) if (i >> b) & 1]
        upper = self._base + self._noisy[:, digits].sum(axis=1)
        self.gram[:, self.rows, self.cols] = upper
        self.gram[:, self.cols, self.rows] = upper
        return self.gram.copy()

    def released_nodes(self) -> np.ndarray:
        """A copy of the released node values of the current tree: (streams, levels, E) upper
        triangles; the node of level j is the last one released there."""
        return self._noisy.copy()
