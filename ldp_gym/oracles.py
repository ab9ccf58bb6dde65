"""Super-arm families of combinatorial semi-bandits and their offline oracles, for env and agents.

A combinatorial semi-bandit (Chen, Zheng et al., ICML 2020, "(Locally)
Differentially Private Combinatorial Semi-Bandits", section 2.1) has m base
arms with outcomes X in [0, 1]^m of mean mu, and a family of *super arms*
S, subsets of the base arms with ``|S| <= K``. A :class:`Family` holds one
such family with its reward ``R(S, X)``, its expected reward ``r_mu(S)`` and
an (alpha, beta)-approximation oracle, as in the paper's Definition 1. Given
weights w, it returns a super arm S with ``r_w(S) >= alpha opt_w`` with
probability at least beta. In the agents, the weights are upper confidence
bounds of mu. Every method is batched over runs: super arms are bool arrays
(N, m), the indicator of S; weights, means and outcomes are float arrays (N, m).

Families (:func:`make_family`):

* ``"topk"`` (:class:`TopK`): every S with ``1 <= |S| <= K``; linear reward
  ``R(S, X) = sum_{i in S} X_i``, ``r_mu(S) = sum_{i in S} mu_i``, B_1-bounded
  smooth with B_1 = 1. Exact oracle: the K largest weights. Of these it keeps
  the positive ones, or the single largest when none is positive.
* ``"paths"`` (:class:`LayeredPaths`): the s-t paths of a layered graph with
  K layers of ``width`` nodes, consecutive layers fully connected. The *nodes*
  are the base arms: node ``p`` of layer ``l`` is arm ``l * width + p``, so
  ``m = K * width``. A path takes exactly one node per layer. Linear
  reward as above, B_1 = 1. Exact oracle: the longest-path dynamic program,
  which on fully connected layers is the per-layer argmax.
* ``"coverage"`` (:class:`Coverage`): probabilistic maximum coverage, from Chen,
  Wang and Yuan 2013; it is the paper's B_inf example. A known bipartite graph
  gives every base arm i and target j a probability ``p_ij`` in [0, 1]. Base
  arm i is active with the unknown probability mu_i: this activity is its outcome
  X_i. An active arm i of S covers target j with probability p_ij, independently. The
  reward is the expected fraction of the n targets covered given the outcomes,
  ``R(S, X) = (1/n) sum_j [1 - prod_{i in S} (1 - p_ij X_i)]``, in
  [0, 1]. It is multilinear in X, so for independent outcomes ``r_mu(S) = R(S, mu)``.
  Monotone and submodular; ``|r_mu(S) - r_mu'(S)| <= B_1 ||mu_S - mu'_S||_1``
  with ``B_1 = max_i (1/n) sum_j p_ij <= 1``, hence B_inf <= K B_1 (Fact 1).
  Declared ``"Binf"`` as the paper classifies it. Family: ``1 <= |S| <= K``.
  Oracle: greedy on the marginal gains, a ``(1 - 1/e, 1)``-approximation
  (Nemhauser, Wolsey and Fisher 1978); weights are clipped to [0, 1] first.
  ``opt_mu`` is computed exactly by enumerating the ``C(m, K)`` sets of size K,
  which suffices as the reward is monotone. It is refused above
  :data:`ENUMERATION_LIMIT` sets.

Compiled oracles: every library family's oracle is a compiled function of one
run's weights, :func:`oracle_row`. The batched ``oracle`` and the agents'
compiled block path both call it, through ``Family._kernel_spec``.

Lenient projection (:meth:`Family.project`) serves the env's ``strict=False``.
For the cardinality families, top-K and coverage, a set with more than K arms
keeps its K lowest-indexed arms and an empty set becomes ``{0}``. For paths,
each layer keeps its lowest-indexed chosen node, or its first node when none
is chosen. Feasible sets are returned unchanged.

Example:
    >>> import numpy as np
    >>> from ldp_gym.oracles import make_family
    >>> fam = make_family("topk", 5, 2)
    >>> fam.oracle(np.array([[0.1, 0.9, 0.3, 0.8, 0.2]])).astype(int)
    array([[0, 1, 0, 1, 0]])
    >>> fam.optimum(np.array([[0.1, 0.9, 0.3, 0.8, 0.2]])).round(2)
    array([1.7])
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np
from numba import njit
from typing_extensions import override

from ldp_gym.validation import check_finite, check_int, check_real

__all__ = ["ENUMERATION_LIMIT", "FAMILIES", "Coverage", "Family", "LayeredPaths", "TopK",
           "make_family"]

FAMILIES = ("topk", "paths", "coverage")
#: the largest number of size-K sets :meth:`Coverage.optimum` enumerates
ENUMERATION_LIMIT = 200_000
#: the coverage graph of the families that have none
_NO_PROBS = np.zeros((0, 0))


@njit(cache=True, nogil=True)
def _coverage_values(S, x, probs, out):  # pragma: no cover - compiled
    """``out[r] = (1/n) sum_j [1 - prod_{i in S_r} (1 - p_ij x_ri)]`` for every run r."""
    runs, m = S.shape
    targets = probs.shape[1]
    keep = np.empty(targets)
    for r in range(runs):
        keep[:] = 1.0
        for i in range(m):
            if S[r, i]:
                xi = x[r, i]
                for j in range(targets):
                    keep[j] *= 1.0 - probs[i, j] * xi
        total = 0.0
        for j in range(targets):
            total += keep[j]
        out[r] = 1.0 - total / targets
    return out


@njit(cache=True, nogil=True, inline="always")
def _greedy_row(w, probs, K, uncovered, out):  # pragma: no cover - compiled
    """Greedy maximum coverage of one run: weights w (m,) in [0, 1], K times the arm of
    largest marginal gain ``w_i sum_j p_ij u_j``, ties to the lowest index.

    ``u_j`` is the probability that target j is still uncovered. ``uncovered`` (targets,) is
    scratch."""
    m = w.shape[0]
    targets = probs.shape[1]
    uncovered[:] = 1.0
    for _ in range(K):
        best, pick = -1.0, 0
        for i in range(m):
            if out[i]:
                continue
            gain = 0.0
            for j in range(targets):
                gain += probs[i, j] * uncovered[j]
            gain *= w[i]
            if gain > best:
                best, pick = gain, i
        out[pick] = True
        wi = w[pick]
        for j in range(targets):
            uncovered[j] *= 1.0 - probs[pick, j] * wi


@njit(cache=True, nogil=True)
def _greedy(w, probs, K, out):  # pragma: no cover - compiled
    """:func:`_greedy_row` on every run of w (N, m)."""
    uncovered = np.empty(probs.shape[1])
    for r in range(w.shape[0]):
        _greedy_row(w[r], probs, K, uncovered, out[r])
    return out


@njit(cache=True, nogil=True)
def _first_infeasible(S, width, lo, hi):  # pragma: no cover - compiled
    """The first run whose row of S, bool or integers, is not 0/1 or has, in some block of
    ``width`` consecutive arms, fewer than ``lo`` or more than ``hi`` arms; -1 when every
    run's is a super arm."""
    runs, m = S.shape
    for r in range(runs):
        for start in range(0, m, width):
            count = 0
            for i in range(start, start + width):
                if S[r, i] != 0 and S[r, i] != 1:
                    return r
                count += S[r, i]
            if count < lo or count > hi:
                return r
    return -1


@njit(cache=True, nogil=True, inline="always")
def _four_largest(w, start, stop):  # pragma: no cover - compiled
    """The four largest weights of ``w[start:stop]`` in decreasing order, ``-inf`` where there
    are fewer: each weight is passed down a min/max network, with no data-dependent branch
    (NaN weights are the caller's to exclude)."""
    v0 = v1 = v2 = v3 = -np.inf
    for i in range(start, stop):
        c = w[i]
        v0, c = max(v0, c), min(v0, c)
        v1, c = max(v1, c), min(v1, c)
        v2, c = max(v2, c), min(v2, c)
        v3 = max(v3, c)
    return v0, v1, v2, v3


@njit(cache=True, nogil=True, inline="always")
def _few_best(w, start, stop, count, out):  # pragma: no cover - compiled
    """One block of :func:`_block_best_row` for ``count <= 4``, without the unpredictable
    branches of an insertion: ``thr``, the count-th largest weight, and ``top``, the largest,
    come from :func:`_four_largest`. The kept arms are those above ``thr`` and the first ones
    equal to it, up to ``count`` (ties to the lowest index); S is the first arm of weight
    ``top`` and the positive kept ones. Without a tie at ``thr`` or ``top`` (the usual case)
    it is one branch-free pass. Returns False, having written nothing, for a block holding a
    NaN: the insertion's order is kept for it (:meth:`Family.oracle` refuses NaN weights, and
    the agents' indices are finite, so only a direct call can meet one)."""
    v0, v1, v2, v3 = _four_largest(w, start, stop)
    top, thr = v0, v0 if count == 1 else v1 if count == 2 else v2 if count == 3 else v3
    at_least, tops, nan = 0, 0, False
    for i in range(start, stop):
        at_least += w[i] >= thr
        tops += w[i] == top
        nan |= w[i] != w[i]
    if not nan and at_least == count and tops == 1:
        for i in range(start, stop):
            out[i] = (w[i] >= thr) & ((w[i] > 0.0) | (w[i] == top))
    elif not nan:
        left = count  # the places left for the weights equal to thr, in index order
        for i in range(start, stop):
            left -= w[i] > thr
        first = -1  # the first arm of weight top
        for i in range(start, stop):
            tie = w[i] == thr
            kept = (w[i] > thr) | (tie & (left > 0))
            left -= tie & kept
            is_first = (first < 0) & (w[i] == top)
            first = i if is_first else first
            out[i] = kept & ((w[i] > 0.0) | is_first)
    return not nan


@njit(cache=True, nogil=True, inline="always")
def _inserted_best(w, start, stop, count, vals, picks, out):  # pragma: no cover - compiled
    """One block of :func:`_block_best_row` for any count: one pass keeps the ``count`` best
    so far in ``vals``/``picks``, in decreasing order; a later arm enters only with a strictly
    larger weight, so ties go to the lowest index."""
    kept = 0
    for i in range(start, stop):
        v = w[i]
        if kept == count and not v > vals[count - 1]:
            continue
        j = kept if kept < count else count - 1
        while j > 0 and v > vals[j - 1]:  # shift the smaller ones down
            vals[j], picks[j] = vals[j - 1], picks[j - 1]
            j -= 1
        vals[j], picks[j] = v, i
        if kept < count:
            kept += 1
    out[picks[0]] = True
    for k in range(1, kept):
        if not vals[k] > 0.0:
            break
        out[picks[k]] = True


@njit(cache=True, nogil=True, inline="always")
def _block_best_row(w, width, count, vals, picks, out):  # pragma: no cover - compiled
    """In every block of ``width`` consecutive arms of one run's weights w (m,), the ``count``
    largest, ties to the lowest index; after the first, only the positive ones. Top-K is one
    block of m arms with count K; layered paths are blocks of one layer with count 1.
    ``vals`` (count,) and ``picks`` (count,) are scratch; ``out`` must be zeroed.

    Up to 4 picks per block, :func:`_few_best` selects without data-dependent branches: on
    weights in random order (arms at the cap, broken at random) the insertion of
    :func:`_inserted_best` mispredicted so often that it took 2-3x as long. Both give the same
    set; more picks, or a NaN, take the insertion. (Without the NaN test, the CUCB-DP block
    kernel replayed 15 % slower: a code-layout effect.)"""
    for start in range(0, w.shape[0], width):
        if count <= 4 and _few_best(w, start, start + width, count, out):
            continue
        _inserted_best(w, start, start + width, count, vals, picks, out)


@njit(cache=True, nogil=True)
def _block_best(w, width, count, out):  # pragma: no cover - compiled
    """:func:`_block_best_row` on every run of w (N, m)."""
    vals = np.empty(count)
    picks = np.empty(count, dtype=np.int64)
    for r in range(w.shape[0]):
        _block_best_row(w[r], width, count, vals, picks, out[r])
    return out


#: the oracles of :func:`oracle_row` (``Family._kernel_spec``)
BLOCK_BEST, GREEDY = 0, 1


@njit(cache=True, nogil=True, inline="always")
def oracle_row(kind, w, width, count, probs, vals, picks, uncovered, out):  # pragma: no cover
    """The library families' oracle on one run's weights w (m,), into the zeroed bool row ``out``.

    ``kind`` BLOCK_BEST, for top-K and paths, runs :func:`_block_best_row`. ``kind`` GREEDY, for
    coverage, runs :func:`_greedy_row` on w clipped to [0, 1]. The result is bitwise
    :meth:`Family.oracle` of the row. The agents' compiled block path calls it."""
    if kind == 0:
        _block_best_row(w, width, count, vals, picks, out)
    else:
        for i in range(w.shape[0]):
            w[i] = min(max(w[i], 0.0), 1.0)  # np.clip(w, 0, 1), as Coverage._oracle
        _greedy_row(w, probs, count, uncovered, out)


class Family:
    """A family of super arms over ``m`` base arms with ``|S| <= K``, its reward and oracle.

    Attributes:
        name: ``"topk"``, ``"paths"`` or ``"coverage"``.
        m: number of base arms.
        K: largest super-arm size.
        alpha, beta: approximation ratio and success probability of :meth:`oracle`;
            1.0 and 1.0 for an exact oracle.
        smoothness: ``"B1"`` or ``"Binf"``, as in Assumption 2 of the paper.
        linear: whether ``R(S, X) = sum_{i in S} X_i``.
        reward_bounds: ``(lo, hi)`` containing every reward ``R(S, X)``.
    """

    name = "family"
    alpha = 1.0
    beta = 1.0
    smoothness = "B1"
    linear = True

    def __init__(self, m: int, K: int):
        self.m = check_int("m", m)
        self.K = check_int("K", K)
        if self.K > self.m:
            raise ValueError(f"K must be <= m, got K={self.K} > m={self.m}")
        self.reward_bounds: tuple[float, float] = (0.0, float(self.K))
        # feasibility as block counts: every block of _width arms holds _lo to _hi of them
        self._width, self._lo, self._hi = self.m, 1, self.K

    # ------------------------------------------------------------------ public, checked

    def oracle(self, weights: Any) -> np.ndarray:
        """The super arm the oracle picks for ``weights`` (N, m): bool (N, m), or (m,) for weights (m,).

        +inf is allowed, for unexplored arms; NaN is refused."""
        w, single = self._weights(weights)
        out = self._oracle(w)
        return out[0] if single else out

    def feasible(self, S: Any) -> np.ndarray:
        """Whether each row of ``S`` (N, m), 0/1 or bool, is a super arm of the family: (N,)."""
        return self._feasible(self._sets(S))

    def expected_reward(self, S: Any, mu: Any) -> np.ndarray:
        """``r_mu(S)`` (N,) for super arms S (N, m) and means mu (N, m) in [0, 1]."""
        sets = self._sets(S)
        return self._reward(sets, self._unit(mu, "mu", sets.shape[0]))

    def reward(self, S: Any, X: Any) -> np.ndarray:
        """``R(S, X)`` (N,) for super arms S (N, m) and outcomes X (N, m) in [0, 1]."""
        sets = self._sets(S)
        return self._reward(sets, self._unit(X, "X", sets.shape[0]))

    def optimum(self, mu: Any) -> np.ndarray:
        """``opt_mu = max_S r_mu(S)`` (N,), exactly, for means mu (N, m) in [0, 1]."""
        return self._optimum(self._unit(mu, "mu", None))

    def sample(self, rng: np.random.Generator, n: int | None = None) -> np.ndarray:
        """A uniformly drawn size then set: one feasible super arm (m,) int8, or (n, m) with n."""
        rows = self._sample(rng, 1 if n is None else check_int("n", n))
        return rows[0] if n is None else rows

    def project(self, S: Any) -> np.ndarray:
        """``S`` (N, m) with every infeasible row mapped to a feasible one; bool (N, m).

        The lenient rule is described in the module docstring."""
        return self._project(self._sets(S))

    def describe(self, s: np.ndarray) -> str:
        """Why the bool row ``s`` (m,) is not a super arm of the family."""
        return f"|S| = {int(s.sum())}, need 1 <= |S| <= K = {self.K}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(m={self.m}, K={self.K})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and repr(other) == repr(self)

    def __hash__(self) -> int:
        return hash(repr(self))

    # ------------------------------------------------------------------ fast, unchecked

    def _first_infeasible(self, S: np.ndarray) -> int:
        """The first run whose row of S, bool or 0/1 integers, is not a super arm, or -1.

        Compiled."""
        return int(_first_infeasible(S, self._width, self._lo, self._hi))

    def _oracle(self, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _kernel_spec(self) -> tuple[int, int, int, np.ndarray] | None:
        """``(kind, width, count, probs)`` of :func:`oracle_row` for this family's oracle, or ``None``.

        The agents' compiled block path uses it. It is ``None`` for a subclass that overrides
        :meth:`_oracle` and not this."""
        return None

    def _feasible(self, S: np.ndarray) -> np.ndarray:
        count = np.count_nonzero(S, axis=1)
        return (count >= 1) & (count <= self.K)

    def _reward(self, S: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", x, S.astype(np.float64))

    def _optimum(self, mu: np.ndarray) -> np.ndarray:
        return self._reward(self._oracle(mu), mu)

    def _sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        sizes = rng.integers(1, self.K + 1, size=n)
        ranks = np.argsort(np.argsort(rng.random((n, self.m)), axis=1), axis=1)
        return (ranks < sizes[:, None]).astype(np.int8)

    def _project(self, S: np.ndarray) -> np.ndarray:
        out = S & (np.cumsum(S, axis=1) <= self.K)
        out[~out.any(axis=1), 0] = True
        return out

    # ------------------------------------------------------------------ input checks

    def _weights(self, weights: Any) -> tuple[np.ndarray, bool]:
        w = np.asarray(weights)
        if w.dtype.kind == "b" or w.dtype.kind not in "iuf":
            raise TypeError("weights must be a real numeric array")
        w = w.astype(np.float64, copy=False)
        single = w.ndim == 1
        if single:
            w = w[None]
        if w.ndim != 2 or w.shape[1] != self.m:
            raise ValueError(f"weights must have shape (N, {self.m}) or ({self.m},), got "
                             f"{np.shape(weights)}")
        if w.size and np.isnan(w.min()):  # min propagates NaN, without a temporary array
            raise ValueError("weights must not contain NaN")
        return w, single

    def _sets(self, S: Any) -> np.ndarray:
        arr = np.asarray(S)
        if arr.ndim != 2 or arr.shape[1] != self.m:
            raise ValueError(f"S must have shape (N, {self.m}), got {arr.shape}")
        if arr.dtype.kind == "b":
            return arr
        if arr.dtype.kind not in "iu" or ((arr != 0) & (arr != 1)).any():
            raise ValueError("S must be a bool or 0/1 integer array")
        return arr.astype(bool)

    def _unit(self, x: Any, name: str, n: int | None) -> np.ndarray:
        arr = check_finite(x, name).astype(np.float64, copy=False)
        if arr.ndim != 2 or arr.shape[1] != self.m or (n is not None and arr.shape[0] != n):
            want = f"({'N' if n is None else n}, {self.m})"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
        if ((arr < 0) | (arr > 1)).any():
            raise ValueError(f"{name} must lie in [0, 1]")
        return arr


class TopK(Family):
    """Every S with ``1 <= |S| <= K``, linear reward; exact oracle: the K largest weights.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.oracles import TopK
        >>> TopK(4, 2).oracle(np.array([0.5, -1.0, np.inf, 0.2])).astype(int)
        array([1, 0, 1, 0])
    """

    name = "topk"

    def _oracle(self, w):
        return _block_best(w, self.m, self.K, np.zeros(w.shape, dtype=bool))

    def _kernel_spec(self):
        return (BLOCK_BEST, self.m, self.K, _NO_PROBS) if type(self) is TopK else None


class LayeredPaths(Family):
    """The paths of a layered graph with ``layers`` (= K) fully connected layers of ``width`` nodes.

    The nodes are the base arms: ``m = layers * width``, and node p of layer l is arm
    ``l * width + p``. A path takes one node per layer. Linear reward; exact oracle.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.oracles import LayeredPaths
        >>> fam = LayeredPaths(layers=2, width=3)
        >>> fam.oracle(np.array([0.1, 0.7, 0.2, 0.9, 0.0, 0.3])).astype(int)
        array([0, 1, 0, 1, 0, 0])
    """

    name = "paths"

    def __init__(self, layers: int, width: int):
        self.layers = check_int("layers", layers)
        self.width = check_int("width", width)
        super().__init__(self.layers * self.width, self.layers)
        self._width, self._lo, self._hi = self.width, 1, 1

    def __repr__(self):
        return f"LayeredPaths(layers={self.layers}, width={self.width})"

    def _oracle(self, w):
        return _block_best(w, self.width, 1, np.zeros(w.shape, dtype=bool))

    def _kernel_spec(self):
        return (BLOCK_BEST, self.width, 1, _NO_PROBS) if type(self) is LayeredPaths else None

    def _feasible(self, S):
        return (np.count_nonzero(S.reshape(S.shape[0], self.layers, self.width), axis=2) == 1).all(axis=1)

    @override
    def describe(self, s):
        counts = s.reshape(self.layers, self.width).sum(axis=1)
        bad = int(np.flatnonzero(counts != 1)[0])
        return f"layer {bad} has {int(counts[bad])} nodes, a path takes exactly one per layer"

    def _sample(self, rng, n):
        pick = rng.integers(0, self.width, size=(n, self.layers))
        out = np.zeros((n, self.layers, self.width), dtype=np.int8)
        np.put_along_axis(out, pick[:, :, None], 1, axis=2)
        return out.reshape(n, self.m)

    def _project(self, S):
        layered = S.reshape(S.shape[0], self.layers, self.width)
        out = layered & (np.cumsum(layered, axis=2) <= 1)
        empty = ~out.any(axis=2)
        out[:, :, 0] |= empty
        return out.reshape(S.shape[0], self.m)


class Coverage(Family):
    """Probabilistic maximum coverage: ``R(S, X) = (1/n) sum_j [1 - prod_{i in S} (1 - p_ij X_i)]``
    over ``targets`` = n targets with known ``probs`` p (m, n) in [0, 1]; ``1 <= |S| <= K``;
    greedy (1 - 1/e, 1)-approximation oracle, exact optimum by enumeration.

    Example:
        >>> import numpy as np
        >>> from ldp_gym.oracles import Coverage
        >>> p = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        >>> fam = Coverage(3, 2, targets=3, probs=p)
        >>> fam.oracle(np.ones(3)).astype(int), fam.alpha == 1 - 1 / np.e
        (array([1, 0, 1]), True)
        >>> fam.expected_reward(np.array([[1, 0, 1]]), np.full((1, 3), 0.5))
        array([0.5])
    """

    name = "coverage"
    alpha = 1.0 - 1.0 / math.e
    smoothness = "Binf"
    linear = False

    def __init__(self, m: int, K: int, targets: int, probs: Any):
        super().__init__(m, K)
        self.targets = check_int("targets", targets)
        p = check_finite(probs, "probs").astype(np.float64)
        if p.shape != (self.m, self.targets):
            raise ValueError(f"probs must have shape (m, targets) = ({self.m}, {self.targets}), "
                             f"got {p.shape}")
        if ((p < 0) | (p > 1)).any():
            raise ValueError("probs must lie in [0, 1]")
        self.probs = p
        self.reward_bounds = (0.0, 1.0)
        #: B_1 of Assumption 2 for this instance
        self.b1 = float(p.sum(axis=1).max() / self.targets)
        self.n_sets = math.comb(self.m, self.K)

    def __repr__(self):
        return f"Coverage(m={self.m}, K={self.K}, targets={self.targets})"

    def __eq__(self, other):
        return super().__eq__(other) and np.array_equal(self.probs, other.probs)

    def __hash__(self):
        return hash(repr(self))

    def _reward(self, S, x):
        return _coverage_values(S, np.ascontiguousarray(x, dtype=np.float64), self.probs,
                                np.empty(S.shape[0]))

    def _oracle(self, w):
        w = np.clip(w, 0.0, 1.0)
        return _greedy(w, self.probs, self.K, np.zeros(w.shape, dtype=bool))

    def _kernel_spec(self):
        return (GREEDY, self.m, self.K, self.probs) if type(self) is Coverage else None

    def _optimum(self, mu):
        if self.n_sets > ENUMERATION_LIMIT:
            raise ValueError(f"the exact optimum enumerates C(m, K) = {self.n_sets} sets, more than "
                             f"{ENUMERATION_LIMIT}: use a smaller instance")
        keep = 1.0 - mu[:, :, None] * self.probs  # (N, m, n): 1 - q_ij
        combos = np.array(list(combinations(range(self.m), self.K)), dtype=np.intp)
        best = np.zeros(mu.shape[0])
        chunk = max(1, 2_000_000 // max(1, mu.shape[0] * self.targets))
        for start in range(0, len(combos), chunk):
            c = combos[start:start + chunk]
            prod = keep[:, c[:, 0]]
            for k in range(1, self.K):
                prod = prod * keep[:, c[:, k]]
            best = np.maximum(best, 1.0 - prod.mean(axis=2).min(axis=1))
        return best


def make_family(name: str = "topk", m: int = 20, K: int = 4, rng_or_params: Any = None) -> Family:
    """The family ``name`` (one of :data:`FAMILIES`) over m base arms with ``|S| <= K``.

    ``"paths"`` needs m to be a multiple of K (``width = m // K``). ``"coverage"`` takes its
    graph from ``rng_or_params``. It is either a dict ``{"targets": n, "probs": p}``, with p
    (m, n) in [0, 1], or a ``numpy`` Generator or int seed. A dict with ``"density"`` and
    ``"targets"`` alone draws p. A seed, where None means seed 0, draws the default graph:
    ``n = max(1, m // 2)`` targets, every edge (i, j) present with probability ``density`` = 0.3,
    ``p_ij`` uniform in [0.2, 1] on present edges, 0 elsewhere.

    Example:
        >>> from ldp_gym.oracles import make_family
        >>> make_family("paths", 6, 2)
        LayeredPaths(layers=2, width=3)
        >>> make_family("coverage", 6, 2, {"probs": [[1.0]] * 6}).targets
        1
    """
    if not isinstance(name, str) or name not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {name!r}")
    m, K = check_int("m", m), check_int("K", K)
    if K > m:
        raise ValueError(f"K must be <= m, got K={K} > m={m}")
    if name == "topk":
        return TopK(m, K)
    if name == "paths":
        if m % K:
            raise ValueError(f"family 'paths' needs m to be a multiple of K, got m={m}, K={K}")
        return LayeredPaths(K, m // K)
    params = rng_or_params if isinstance(rng_or_params, dict) else {}
    unknown = set(params) - {"targets", "probs", "density", "seed"}
    if unknown:
        raise ValueError(f"unknown coverage parameters {sorted(unknown)}")
    if params.get("probs") is not None:
        probs = check_finite(params["probs"], "probs")
        if probs.ndim != 2:
            raise ValueError(f"probs must have shape (m, targets), got {probs.shape}")
        targets = params.get("targets")
        return Coverage(m, K, probs.shape[1] if targets is None else targets, probs)
    if isinstance(rng_or_params, np.random.Generator):
        rng = rng_or_params
    else:
        seed = params.get("seed", 0) if isinstance(rng_or_params, dict) else rng_or_params
        rng = np.random.default_rng(0 if seed is None else seed)
    targets = check_int("targets", params.get("targets", max(1, m // 2)))
    density = check_real("density", params.get("density", 0.3), low=0.0, high=1.0)
    probs = np.where(rng.random((m, targets)) < density, rng.uniform(0.2, 1.0, (m, targets)), 0.0)
    return Coverage(m, K, targets, probs)
