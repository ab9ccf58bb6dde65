"""Continual counting: the binary tree mechanism (:class:`TreeMechanism`).

Noisy prefix sums of streams of bounded values, epsilon-DP per element over
the whole stream, after Dwork et al. (2010) and Chan et al. (2011). They are
built on the float-safe grid Laplace of :class:`ldp_gym.wrappers.mechanisms.Mechanism`.
One element is added by one compiled function (:func:`tree_add`), which
:meth:`TreeMechanism.add` and the compiled agents built on the tree (DP-UCB)
call alike. Also importable from :mod:`ldp_gym.wrappers.mechanisms`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import njit

from ldp_gym.validation import check_bounds, check_input, check_int

from .base import Mechanism
from .calibration import grid_step, laplace_scale
from .compiled import snap_add
from .noise import NoiseStream, draw_discrete_laplace, record_release

__all__ = ["TreeMechanism", "tree_add"]


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
