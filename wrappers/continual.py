"""Continual counting: the binary tree mechanism (:class:`TreeMechanism`).

Noisy prefix sums of streams of bounded values, epsilon-DP per element over
the whole stream (Dwork et al. 2010; Chan et al. 2011), built on the
float-safe grid Laplace of :class:`ldp_gym.wrappers.mechanisms.Mechanism`.
Also importable from :mod:`ldp_gym.wrappers.mechanisms`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_gym.validation import check_bounds, check_input, check_int

from .calibration import grid_step, laplace_scale
from .mechanisms import Mechanism

__all__ = ["TreeMechanism"]


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

    #: the last :meth:`preview`'s arrays, until :meth:`commit` keeps part of it
    _pending: tuple[Any, ...] | None = None

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

    def clip(self, values: Any) -> np.ndarray:
        """Elements clipped to ``[lower, upper]`` (what :meth:`add` and :meth:`preview` do)."""
        return np.clip(check_input(values, "values"), self.lower, self.upper)

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
        if self._pending is None:
            raise RuntimeError("commit() needs a preview() first")
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
