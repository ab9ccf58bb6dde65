"""Combinatorial semi-bandit agents: CUCB, CUCB-LDP1, CUCB-LDP2 (local DP) and CUCB-DP (global DP).

Setting: Chen, Zheng et al., ICML 2020, combinatorial semi-bandits under DP and
LDP. Algorithm, lemma and theorem numbers are as in that paper. There are m
base arms with outcomes in [0, 1], and super arms S of a family with ``|S| <= K``.
An action is a ``MultiBinary(m)`` indicator of S. After playing S the
learner observes the outcome of every base arm of S: semi-bandit feedback.
The observation of ``LDPCombinatorialBandit-v0`` is the float vector
``[outcomes of the base arms in S (0 elsewhere), mask of S]`` of length 2m.

Every agent keeps, per run and base arm, a count ``T_i`` and a mean ``mu~(i)``,
which may be noisy. It builds the index ``mu_bar(i) = min{mu~(i) + w_i, 1}``,
where the width ``w_i`` is infinite while the arm is unpulled. It plays
``S = family.oracle(weights)``, the super-arm family's (alpha, beta)-
approximation oracle, batched over runs. The family comes from the env's core,
``env.unwrapped.setting["family"]``, and is shared with the env. It has attributes
``m``, ``K``, ``alpha``, ``beta`` and ``oracle(weights (N, m)) -> bool (N, m)``.

Ties and unpulled arms: the oracle gets the paper's index with ties broken
at random, unpulled arms first. Arms whose index is below the cap 1 keep it
exactly. The others are mapped into ``(top, 1)``, with ``top`` the largest
uncapped index of the run. These are the capped pulled arms and the unpulled arms,
whose index is ``min(inf, 1) = 1``. Unpulled arms go above capped ones, with a
uniform random order within each group, drawn from the agent's decision stream.
The order of distinct indices is unchanged and every weight stays at most 1,
the range of a mean, which probabilistic coverage needs. For top-K this is
exactly "the K largest indices, ties uniformly at random, unpulled first", so
with ``K = 1`` CUCB-LDP1 and CUCB-LDP2 have the law of
:class:`~ldp_gym.agents.mab.LDPUCB` on the multi-armed bandit.

Compiled paths: ``act`` computes the index and the tie-breaking of every run in
one numba pass, :func:`_weights_into`. It runs the index of :func:`_index_value`,
which :meth:`CombinatorialAgent.index` also reports, and the tie-breaking of
:func:`oracle_weights`, on the same decision stream. It then calls the library
families' oracle without re-checking the weights. ``observe`` checks the
runner's batch of int8 actions and float observations in one compiled pass. It
falls back to the checked path of the base class for anything else or any
failure, so every error below is unchanged. The noise of these per-round paths
comes from the mechanisms' ``__call__``.

Block path (``block_play = PLAYS_OUTCOMES``): it serves all four agents with a library
family: top-K, paths, coverage. The env draws every base arm's outcomes of L rounds (N, L,
m) ahead; they do not depend on the super arms. The runner hands them to
:meth:`CombinatorialAgent.play_outcomes`, which plays the L rounds in one compiled kernel,
:func:`_play_rounds`. Each round runs the per-round protocol with the user/server border
kept:

1. the user's index and oracle (:func:`~ldp_gym.oracles.oracle_row`) on the public state;
2. the user's message: the raw outcomes of S for CUCB, else :func:`ldp1_report_row`
   or :func:`ldp2_report_row`;
3. the server's update from the message only; for CUCB-DP, each outcome of S enters its
   arm's tree.

The env scores the super arms. CUCB's actions are bitwise those of
``act``/``observe``. The private agents' noise is drawn ahead in fixed chunks
by their :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism` and added by
:func:`~ldp_gym.wrappers.mechanisms.compiled.snap_add`. This is bitwise the mechanism's
release on the same draw, so their law is that of per-round play on another stream.
The tests check this: bitwise on a replayed stream, Kolmogorov-Smirnov against per-round
play, and audits of :meth:`CUCBLDP1.block_report` / :meth:`CUCBLDP2.block_report`,
the kernel's report step. CUCB-DP's trees take their noise from their own stream, as in
per-round play, and give back what a piece of the block does not use.

Feedback validation (``observe``): ``next_obs`` must have length 2m, and its mask
must equal the action: feedback of another super arm is refused. The
outcomes of S must lie in ``outcome_bounds``, default [0, 1]. :meth:`from_env` reads
the bounds off the env's observation space, so CUCB on a
:class:`~ldp_gym.wrappers.semibandit.LaplaceSemiBandit` env accepts the
released, unbounded outcomes. NaN and inf are refused by the base class.
Each is one ``ValueError`` naming ``next_obs``, and nothing is learned.

Example:
    >>> import numpy as np
    >>> from ldp_gym.agents import CUCBLDP1
    >>> class Top2:                         # a family: the 2 largest weights (normally the env's)
    ...     m, K, alpha, beta = 4, 2, 1.0, 1.0
    ...     def oracle(self, w):
    ...         s = np.zeros(w.shape, bool)
    ...         np.put_along_axis(s, np.argsort(-w, axis=1)[:, :2], True, axis=1)
    ...         return s
    >>> agent = CUCBLDP1(4, family=Top2(), epsilon=1.0, horizon=100, seed=0)
    >>> obs = np.zeros(8)
    >>> action = agent.act(obs)
    >>> action.dtype, int(action.sum())
    (dtype('int8'), 2)
    >>> next_obs = np.concatenate([0.5 * action, action]).astype(np.float32)
    >>> agent.observe(obs, action, 1.0, next_obs)
    >>> sorted(agent.last_report), agent.counts.sum()
    (['mask', 'values'], np.int64(2))
    >>> print(agent.privacy)
    local DP, epsilon=1 per user's outcomes (the base arms of the played super arm, one round)
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from numba import njit
from typing_extensions import override

from ldp_gym.oracles import Family, oracle_row
from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import Part, check_int, check_share
from ldp_gym.wrappers.mechanisms import LaplaceMechanism
from ldp_gym.wrappers.mechanisms.compiled import snap_add
from ldp_gym.wrappers.mechanisms.continual import TreeMechanism, tree_add
from ldp_gym.wrappers.mechanisms.noise import DrawnAhead
from ldp_gym.wrappers.semibandit import check_at_most_k

from .base import Agent, GlobalDPAgent, LocalDPAgent, readonly

__all__ = ["AGENTS", "CUCB", "CUCBDP", "CUCBLDP1", "CUCBLDP2", "CombinatorialAgent",
           "oracle_weights"]

_ENV_ID = "LDPCombinatorialBandit-v0"
#: The privacy unit of every private agent here: one user's data is the outcomes of the
#: round (all base arms of the played super arm); the super arm itself is public.
_UNIT = "outcomes"


def oracle_weights(rng: np.random.Generator, index: np.ndarray, pulled: np.ndarray) -> np.ndarray:
    """The weights handed to the oracle: ``index`` with ties at the cap broken at random.

    ``index`` (N, m) is the paper's ``mu_bar`` for pulled arms (at most 1); unpulled arms
    (``pulled`` False) have an infinite width, hence ``mu_bar = 1``. Uncapped indices are kept;
    with ``top`` the largest of them and 0 and ``h = (1 - top)/2``, capped pulled
    arms get ``1 - h/2 + u h/4`` and unpulled ones ``1 - h/4 + u h/4`` (``u`` uniform): above
    every uncapped index, unpulled first, uniformly random order within each group, at most 1.
    This is the compiled :func:`_tie_break_row` of each run, as ``act`` runs it.
    """
    u = rng.random(index.shape)
    out = np.array(index, dtype=np.float64)
    _tie_break_rows(np.asarray(pulled, dtype=np.int64), out, u)
    return out


#: the index formulas of the fused kernel :func:`_weights_into` (``mu_bar`` before the cap)
_CUCB, _LOCAL, _GLOBAL = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _index_value(kind, k, total, a, b, c):  # pragma: no cover - compiled
    """``mu_bar`` of a pulled arm with ``k > 0`` pulls and sum ``total``.

    Before the cap it is ``total/k + sqrt(a/k)`` for CUCB, with ``a = 1.5 ln t``;
    ``total/k + b/sqrt(k)`` for LDP1/2, with ``b`` the width constant; or
    ``total/k + sqrt(b/k) + c/k`` for DP."""
    n = float(k)
    if kind == 0:
        v = total / n + np.sqrt(a / n)
    elif kind == 1:
        v = total / n + b / np.sqrt(n)
    else:
        v = total / n + np.sqrt(b / n) + c / n
    return min(v, 1.0)


@njit(cache=True, nogil=True, inline="always")
def _cached_value(kind, k, total, b, c):  # pragma: no cover - compiled
    """What the block kernel keeps of a pulled arm, updated as it is pulled.

    For CUCB it is the mean ``total/k``, since its width moves with t. For the private agents,
    whose widths are constant, it is the capped index."""
    return total / float(k) if kind == 0 else _index_value(kind, k, total, 0.0, b, c)


def _cucb_a(t: np.ndarray) -> np.ndarray:
    """CUCB's ``a = 1.5 ln t`` (t >= 1) of :func:`_index_value`."""
    return 1.5 * np.log(np.maximum(t, 1))


@njit(cache=True, nogil=True, inline="always")
def _tie_break_row(counts, r, index, u, out):  # pragma: no cover - compiled
    """``oracle_weights`` of run r (m,) from the capped index ``index`` (m,) of its pulled arms.

    ``counts`` is the (N, m) array of pulls and ``u`` (N, m) the uniforms ``rng.random`` drew,
    both read at row r by index. ``index`` is read where ``counts[r] > 0``, and ``out`` may
    be ``index``. Both values of an arm are computed and one is selected: a branch per arm
    here is mispredicted whenever arms cross the cap (CUCB's block kernel: 15 % less time)."""
    m = index.shape[0]
    top = 0.0  # the largest uncapped index of a pulled arm, and 0
    for i in range(m):
        v = index[i] if counts[r, i] > 0 and index[i] < 1.0 else 0.0
        top = v if v > top else top
    q = 0.25 - 0.25 * top
    for i in range(m):
        pulled = counts[r, i] > 0
        capped = 1.0 - q + 0.5 * q * (u[r, i] + (0.0 if pulled else 1.0))
        out[i] = index[i] if pulled and index[i] < 1.0 else capped


@njit(cache=True, nogil=True)
def _tie_break_rows(pulled, index, u):  # pragma: no cover - compiled
    """:func:`_tie_break_row` of every run, in place (``pulled`` (N, m) 0/1)."""
    for r in range(index.shape[0]):
        _tie_break_row(pulled, r, index[r], u, index[r])


@njit(cache=True, nogil=True)
def _index_into(kind, counts, sums, a, b, c, out):  # pragma: no cover - compiled
    """The capped index (N, m) of every run: :func:`_index_value` of the pulled arms, 1 for
    the unpulled ones (``min(inf, 1)``)."""
    for r in range(counts.shape[0]):
        for i in range(counts.shape[1]):
            out[r, i] = _index_value(kind, counts[r, i], sums[r, i], a[r], b, c) \
                if counts[r, i] > 0 else 1.0
    return out


@njit(cache=True, nogil=True)
def _weights_row(kind, counts, sums, r, a, b, c, u, out):  # pragma: no cover - compiled
    """``oracle_weights`` of run r (m,): :func:`_index_value` of every pulled arm, then
    :func:`_tie_break_row` (``u`` (N, m))."""
    for i in range(out.shape[0]):
        if counts[r, i] > 0:
            out[i] = _index_value(kind, counts[r, i], sums[r, i], a, b, c)
    _tie_break_row(counts, r, out, u, out)


@njit(cache=True, nogil=True)
def _weights_into(kind, counts, sums, a, b, c, u, out):  # pragma: no cover - compiled
    """``oracle_weights(rng, index(), counts > 0)`` of every run in one pass, bitwise.

    It runs :func:`_weights_row` of each run, ``a`` (N,): the same IEEE operations in the same
    order. ``u`` holds the uniforms ``rng.random`` drew for it."""
    for r in range(counts.shape[0]):
        _weights_row(kind, counts, sums, r, a[r], b, c, u, out[r])
    return out


# ---------------------------------------------------------------------------- the block path
#: what the user sends on the block path: the raw outcomes of S (CUCB, not private), CUCB-LDP1's
#: or CUCB-LDP2's message, or the raw outcomes that enter the arms' trees (CUCB-DP)
_RAW, _LDP1, _LDP2, _TREES = 0, 1, 2, 3
#: run-rounds played per call of the block kernel (bounds the decision uniforms drawn at once)
PIECE = 1 << 14
#: noise values a mechanism draws at once for the block path (``mechanism(zeros(CHUNK))``)
CHUNK = 1 << 16


@njit(cache=True, nogil=True, inline="always")
def _members(S, members):  # pragma: no cover - compiled
    """The base arms of the bool row S, in increasing order, into ``members`` (m,); returns
    their number. It has no data-dependent branch: the steps after the oracle run over the K
    members instead of testing every ``S[i]``, a branch the processor cannot predict, as S is
    random while the arms sit at the cap (that was about a fifth of the block kernel)."""
    size = 0
    for i in range(S.shape[0]):
        members[size] = i
        size += S[i]
    return size


@njit(cache=True, nogil=True, inline="always")
def ldp1_report_row(x, r, s, members, size, noise, pos, grid, values):  # pragma: no cover
    """User side of CUCB-LDP1 on the block path, one user, whose outcomes are ``x[r, s]``
    (``x`` (N, L, m)): for the k-th base arm i of S (``members[:size]``, increasing i)
    ``values[k] = snap_add(x_i, noise[pos + k], grid)``; returns the next position. ``noise``
    is the ``k g`` the user's :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism`, with
    budget epsilon/K, drew ahead. So the value is bitwise what the mechanism releases on
    ``x_i`` with the same draw, as in ``local_report``. ``x`` lies in the mechanism's [0, 1];
    the caller checks this, so there is nothing to clip."""
    for k in range(size):
        values[k] = snap_add(np.float64(x[r, s, members[k]]), noise[pos + k], grid)
    return pos + size


@njit(cache=True, nogil=True, inline="always")
def ldp2_report_row(x, r, s, members, size, counts, noise, pos, grid):  # pragma: no cover
    """User side of CUCB-LDP2 on the block path, one user: run r's outcomes ``x[r, s]``.

    The arm is ``I = argmin_{i in S} counts[r, i]`` over the public counts (S is
    ``members[:size]``, increasing), ties to the smallest index; it is -1 for an empty S, and
    nothing is sent. The value is ``snap_add(x_I, noise[pos], grid)``: the mechanism's
    release of ``x_I``, budget epsilon. One noise value is used per user whether sent or not,
    as ``local_report``'s mechanism draws one per run. Returns ``(arm, value, next
    position)``."""
    arm, least = -1, np.iinfo(np.int64).max
    for k in range(size):
        if counts[r, members[k]] < least:
            arm, least = members[k], counts[r, members[k]]
    value = snap_add(np.float64(x[r, s, arm]), noise[pos], grid) if arm >= 0 else 0.0
    return arm, value, pos + 1


@njit(cache=True, nogil=True)
def _ldp1_report_rows(x, S, noise, pos, grid, values):  # pragma: no cover - compiled
    """:func:`ldp1_report_row` of every run (``block_report``), ``x`` (N, 1, m); ``values``
    (N, m) zeroed, the message of S's arms written at their places."""
    p = pos[0]
    members, message = np.empty(S.shape[1], np.int64), np.empty(S.shape[1])
    for r in range(x.shape[0]):
        size = _members(S[r], members)
        p = ldp1_report_row(x, r, 0, members, size, noise, p, grid, message)
        for k in range(size):
            values[r, members[k]] = message[k]
    pos[0] = p


@njit(cache=True, nogil=True)
def _ldp2_report_rows(x, S, counts, noise, pos, grid, arms, values):  # pragma: no cover
    """:func:`ldp2_report_row` of every run (``block_report``), ``x`` (N, 1, m)."""
    p = pos[0]
    members = np.empty(S.shape[1], np.int64)
    for r in range(x.shape[0]):
        size = _members(S[r], members)
        arms[r], values[r], p = ldp2_report_row(x, r, 0, members, size, counts, noise, p, grid)
    pos[0] = p


@njit(cache=True, nogil=True, inline="always")
def _user_weights(index_kind, counts, cache, r, at, u, w):  # pragma: no cover - compiled
    """Step 1 of a round, run r: the oracle's weights ``w``.

    They come from the public state, that is the arms' ``counts`` and the ``cache`` of
    :func:`_cached_value` (both (N, m), read at row r); from CUCB's ``at = 1.5 ln t``; and from
    the decision uniforms ``u`` (N, m) that ``act`` would draw for :func:`_tie_break_row`.
    The private agents' capped index is the cache's row itself (a row view measured faster
    here than a copy, and than reading the cache by index)."""
    if index_kind == 0:
        for i in range(w.shape[0]):
            if counts[r, i] > 0:
                w[i] = min(cache[r, i] + np.sqrt(at / float(counts[r, i])), 1.0)
        _tie_break_row(counts, r, w, u, w)
    else:
        _tie_break_row(counts, r, cache[r], u, w)


@njit(cache=True, nogil=True, inline="always")
def _pulled(index_kind, counts, sums, cache, r, i, b, c):  # pragma: no cover - compiled
    """Step 3 for arm i of run r, its sum already updated: ``T_i += 1`` and its cached value."""
    counts[r, i] += 1
    cache[r, i] = _cached_value(index_kind, counts[r, i], sums[r, i], b, c)


@njit(cache=True, nogil=True, inline="always")
def _tree_update(trees, r, s, members, size, x, noise, p, p0, grid, counts, sums, cache,
                 index_kind, b, c):  # pragma: no cover - compiled
    """Step 3 of CUCB-DP for run r: each outcome ``x[r, s, i]`` of S (``members[:size]``,
    increasing i; clipped to [0, 1]) enters its arm's tree
    (:func:`~ldp_gym.wrappers.mechanisms.continual.tree_add`) with the next noise value
    ``noise[p]``, the closed node's exact sum kept at ``p - p0`` for the trace, and the arm's
    sum is the tree's noisy prefix sum; returns the next noise position."""
    alpha, noisy, closed = trees
    for k in range(size):
        i = members[k]
        closed[p - p0], sums[r, i] = tree_add(alpha[r, i], noisy[r, i], counts[r, i],
                                              min(max(np.float64(x[r, s, i]), 0.0), 1.0),
                                              noise[p], grid)
        p += 1
        _pulled(index_kind, counts, sums, cache, r, i, b, c)
    return p


@njit(cache=True, nogil=True)
def _play_rounds(rule, oracle, outcomes, start, stop, server, draws, release_noise,
                 actions):  # pragma: no cover - compiled
    """Play rounds ``start`` to ``stop`` of a block of every base arm's outcomes (N, L, m).

    It goes round by round over all runs, so the noise is used in the order of the per-round
    path: round, run, arm. Each round runs the per-round protocol:

    1. user: the weights of the public state (:func:`_user_weights`) and the family's oracle
       (:func:`~ldp_gym.oracles.oracle_row`): S;
    2. user: the message of the round's feedback, the outcomes of S: the raw outcomes
       (``_RAW``, CUCB), :func:`ldp1_report_row` or :func:`ldp2_report_row`;
    3. server: the update of counts and sums from the message only, ``t += 1``. For CUCB-DP
       (``_TREES``), each outcome of S enters its arm's tree
       (:func:`~ldp_gym.wrappers.mechanisms.continual.tree_add`) with the tree's next noise value, and
       the sum is the tree's noisy prefix sum.

    ``rule = (index_kind, release, b, c)`` holds :func:`_index_value`'s constants;
    ``oracle = (oracle_kind, width, count, probs)`` is the family's ``_kernel_spec``;
    ``server = (counts, sums, t)``, updated in place; ``draws = (a, u)``, CUCB's
    ``1.5 ln t`` (N, stop - start) and the decision uniforms (stop - start, N, m);
    ``release_noise = (noise, pos, grid, trees)``, the drawn noise read from ``pos[0]`` on
    and, for CUCB-DP, ``trees = (alpha, noisy, closed)``: the tree mechanism's arrays and
    the closed nodes' exact sums, one per element, for its trace.

    The arrays are read by index, not through row views, which cost about a tenth of the kernel
    here.
    """
    index_kind, release, b, c = rule
    oracle_kind, width, count, probs = oracle
    counts, sums, t = server
    a, u = draws
    noise, pos, grid, trees = release_noise
    runs, m = counts.shape
    w = np.empty(m)
    S = np.zeros(m, np.bool_)
    members = np.empty(m, np.int64)  # S's base arms, increasing (:func:`_members`)
    message = np.zeros(m)  # the user's message: S's raw outcomes, or LDP1's values, in order
    vals = np.empty(max(count, 1))
    picks = np.empty(max(count, 1), np.int64)
    uncovered = np.empty(probs.shape[1])
    # what the server's state gives, kept up to date as arms are updated (the same operations
    # as recomputing it every round): CUCB's means sums/T_i (its width moves with t), the
    # LDP agents' capped index (constant width)
    cache = np.zeros((runs, m))
    for r in range(runs):
        for i in range(m):
            if counts[r, i] > 0:
                cache[r, i] = _cached_value(index_kind, counts[r, i], sums[r, i], b, c)
    p = pos[0]
    for s in range(start, stop):
        us = u[s - start]  # the round's uniforms (N, m)
        for r in range(runs):
            _user_weights(index_kind, counts, cache, r, a[r, s - start] if index_kind == 0 else 0.0,
                          us, w)
            S[:] = False
            oracle_row(oracle_kind, w, width, count, probs, vals, picks, uncovered, S)
            size = _members(S, members)
            if release == 2:
                arm, value, p = ldp2_report_row(outcomes, r, s, members, size, counts, noise, p,
                                                grid)
                if arm >= 0:
                    sums[r, arm] += value
                    _pulled(index_kind, counts, sums, cache, r, arm, b, c)
            elif release == 3:
                p = _tree_update(trees, r, s, members, size, outcomes, noise, p, pos[0], grid,
                                 counts, sums, cache, index_kind, b, c)
            else:
                if release == 1:
                    p = ldp1_report_row(outcomes, r, s, members, size, noise, p, grid, message)
                else:
                    for k in range(size):
                        message[k] = np.float64(outcomes[r, s, members[k]])
                for k in range(size):
                    sums[r, members[k]] += message[k]
                    _pulled(index_kind, counts, sums, cache, r, members[k], b, c)
            t[r] += 1
            for i in range(m):
                actions[r, s, i] = 1 if S[i] else 0
    pos[0] = p


@njit(cache=True, nogil=True)
def _feedback_status(obs, next_obs, actions, rewards, lo, hi):  # pragma: no cover - compiled
    """0 when one round's batch is well formed: ``obs``, ``next_obs`` and ``rewards`` finite,
    ``actions`` 0/1, the mask of ``next_obs`` equal to the actions and the outcomes of S in
    ``[lo, hi]``. Otherwise 1, and the checked path then says what is wrong."""
    runs, m = actions.shape
    for r in range(runs):
        if not np.isfinite(rewards[r]):
            return 1
        for j in range(2 * m):
            if not (np.isfinite(obs[r, j]) and np.isfinite(next_obs[r, j])):
                return 1
        for i in range(m):
            a = actions[r, i]
            if a != 0 and a != 1:
                return 1
            if next_obs[r, m + i] != a:
                return 1
            if a == 1 and (next_obs[r, i] < lo or next_obs[r, i] > hi):
                return 1
    return 0


@njit(cache=True, nogil=True)
def _accumulate(actions, next_obs, counts, sums):  # pragma: no cover - compiled
    """CUCB's update: ``T_i += 1`` and the outcome added to the sum for every arm of S."""
    runs, m = actions.shape
    for r in range(runs):
        for i in range(m):
            if actions[r, i]:
                counts[r, i] += 1
                sums[r, i] += np.float64(next_obs[r, i])


class _Private:
    """The construction shared by the private agents here: epsilon, the outcome bounds and the
    horizon their widths use. The only outcome bounds accepted are the setting's [0, 1]."""

    #: ``"local"`` or ``"global"``
    model: ClassVar[str]
    needs_horizon = True
    test_params: ClassVar[dict[str, Any]] = {"epsilon": 1.0}
    name: ClassVar[str]
    lower: float
    upper: float
    declare_privacy: Any

    @classmethod
    def _unit_test_params(cls):
        return [{"epsilon": 1.0}, {"epsilon": 0.5}]

    def __init__(self, n_arms, *, epsilon: float, lower: float = 0.0, upper: float = 1.0,
                 **kwargs):
        self.declare_privacy(self.model, epsilon, 0.0, _UNIT, lower, upper)
        if (self.lower, self.upper) != (0.0, 1.0):
            raise ValueError(f"lower, upper: {self.name} takes outcomes in [0, 1] (the "
                             f"setting's bounds), got [{self.lower:g}, {self.upper:g}]")
        super().__init__(n_arms, **kwargs)  # type: ignore[call-arg]


class CombinatorialAgent(Agent):
    """Base of the combinatorial semi-bandit agents (``MultiBinary(m)`` actions).

    Args:
        n_arms: the number m of base arms.
        family: the super-arm family (``env.unwrapped.setting["family"]``; :meth:`from_env` reads it):
            ``m == n_arms``, ``K``, the largest super arm, and ``oracle(weights (N, m)) -> bool
            (N, m)``.
        outcome_bounds: ``(lo, hi)``, the interval the observed outcomes must lie in. The
            default is [0, 1], the env's; :meth:`from_env` reads it off the observation space.
        horizon, num_envs, seed, secure: as every :class:`~ldp_gym.agents.Agent`.

    State: ``counts`` (N, m) pulls ``T_i`` of each base arm, ``t`` (N,) rounds played.
    """

    supported_action_spaces: ClassVar[tuple[type[spaces.Space], ...]] = (spaces.MultiBinary,)
    test_env: ClassVar[str] = _ENV_ID

    def __init__(self, n_arms: int, *, family: Any = None,
                 outcome_bounds: tuple[float, float] = (0.0, 1.0), **kwargs: Any):
        self._given_family = family
        self._given_bounds = outcome_bounds
        super().__init__(n_arms, **kwargs)
        del self._given_family, self._given_bounds

    @classmethod
    def space_params(cls, space: spaces.Space) -> dict[str, Any]:
        """``n_arms`` of a one-dimensional ``MultiBinary(m)`` space, the indicator of S."""
        if not isinstance(space, spaces.MultiBinary) or len(space.shape) != 1:
            raise ValueError(f"{cls.name} needs a MultiBinary(m) action space (the indicator of "
                             f"a super arm), not {space}")
        return {"n_arms": int(space.shape[0])}

    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        """The super-arm family of the env's public description of its setting
        (``env.unwrapped.setting``) and the outcome bounds of its observation space."""
        family = (getattr(env.unwrapped, "setting", None) or {}).get("family")
        space = env.single_action_space if is_vec else env.action_space
        if family is None or not hasattr(family, "oracle"):
            raise ValueError(f"{cls.name} needs a combinatorial semi-bandit env ({_ENV_ID}) whose "
                             f"core has a super-arm family, not an env with action space {space}")
        obs_space = env.single_observation_space if is_vec else env.observation_space
        m = int(space.shape[0])
        low = np.asarray(getattr(obs_space, "low", -np.inf), np.float64).reshape(-1)[:m]
        high = np.asarray(getattr(obs_space, "high", np.inf), np.float64).reshape(-1)[:m]
        return {"family": family, "outcome_bounds": (float(low.min()), float(high.max()))}

    def _make_action_space(self) -> spaces.Space:
        family = self._given_family
        if family is None or not callable(getattr(family, "oracle", None)):
            raise ValueError(f"family: {self.name} needs a super-arm family with an oracle "
                             f"(env.unwrapped.setting['family']), got {family!r}")
        m = check_int("family.m", getattr(family, "m", None))
        if m != self.n_arms:
            raise ValueError(f"family: the family has m={m} base arms, n_arms={self.n_arms}")
        self.K = check_int("family.K", getattr(family, "K", None))
        if self.K > m:
            raise ValueError(f"family: K={self.K} exceeds the number of base arms m={m}")
        self.family = family
        lo, hi = self._given_bounds
        if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo < hi):
            raise ValueError(f"outcome_bounds must be two numbers lo < hi, got {self._given_bounds!r}")
        self.outcome_bounds = (float(lo), float(hi))
        return spaces.MultiBinary(self.n_arms)

    def __repr__(self) -> str:
        priv = f", {self.privacy}" if self.privacy else ""
        return f"{type(self).__name__}(n_arms={self.n_arms}, K={self.K}, num_envs={self.num_envs}{priv})"

    # ------------------------------------------------------------------ shared
    def _init_state(self, n):
        self.counts = np.zeros((n, self.n_arms), dtype=np.int64)
        self.t = np.zeros(n, dtype=np.int64)

    def _feedback(self, actions: np.ndarray, next_obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The played super arms (N, m) bool and the outcomes (N, m), after checking the feedback."""
        m = self.n_arms
        if next_obs.ndim != 2 or next_obs.shape[1] != 2 * m:
            raise ValueError(f"next_obs must have length 2 n_arms = {2 * m} (the outcomes of the "
                             f"base arms, then the mask of the super arm), got shape "
                             f"{next_obs.shape[1:]}")
        played = actions.astype(bool)
        if (next_obs[:, m:] != played).any():
            raise ValueError("next_obs: its mask (last n_arms entries) contradicts the action: "
                             "the feedback is not the one of the super arm played")
        outcomes = next_obs[:, :m]
        lo, hi = self.outcome_bounds
        if ((outcomes < lo) | (outcomes > hi)).any(where=played):
            raise ValueError(f"next_obs: the outcomes of the super arm must lie in "
                             f"[{lo:g}, {hi:g}] (outcome_bounds)")
        return played, outcomes

    #: Whether the privacy budget is spent per base arm of S (epsilon/K each, at most K of
    #: them): such an agent refuses a super arm of more than K base arms on every path, its
    #: own family's oracle included (CUCB-LDP1, CUCB-DP).
    _spends_per_arm: ClassVar[bool] = False

    def _act(self, obs):
        counts = self.counts
        u = self.rng.random(counts.shape)  # the draw of oracle_weights
        weights = _weights_into(*self._index_terms(), u, np.empty(counts.shape))
        if isinstance(self.family, Family):  # the library's families: finite weights, unchecked
            S = self.family._oracle(weights).view(np.int8)
        else:
            S = np.asarray(self.family.oracle(weights), dtype=bool).astype(np.int8)
        if self._spends_per_arm:
            check_at_most_k(S.view(bool), self.K, "family.oracle")
        return S

    def index(self) -> np.ndarray:
        """The paper's ``mu_bar`` (N, m): ``min{mu~ + width, 1}``, 1 for unpulled arms.

        It is the formula of :func:`_index_value` that ``act`` and the block path use."""
        kind, counts, sums, a, b, c = self._index_terms()
        return _index_into(kind, counts, sums, a, b, c, np.empty(counts.shape))

    @abstractmethod
    def _index_terms(self) -> tuple:
        """The arguments ``kind, counts, sums, a, b, c`` of :func:`_index_value`: the sums of
        the server's (public) state and the width's terms."""
        raise NotImplementedError

    # ------------------------------------------------------------------ block path
    #: what the user sends on the block path (``_RAW``, ``_LDP1``, ``_LDP2``); ``None``: no
    #: block path (the agent plays round by round)
    _release: ClassVar[int | None] = None
    _ahead: DrawnAhead | None = None
    _ahead_mechanism: LaplaceMechanism | None = None

    @property
    def block_play(self) -> BlockPlay:  # type: ignore[override]  # (it depends on the family)
        """``PLAYS_OUTCOMES`` where :meth:`play_outcomes` is available, else ``ROUNDS``.

        This is the runner's block path, :class:`~ldp_gym.protocols.PlaysOutcomeBlocks`. It
        needs a class with a compiled block path: CUCB, CUCB-LDP1, CUCB-LDP2 or CUCB-DP. It
        also needs a library family with a compiled oracle: top-K, paths or coverage."""
        if self._release is not None and isinstance(self.family, Family) \
                and self.family._kernel_spec() is not None:
            return BlockPlay.PLAYS_OUTCOMES
        return BlockPlay.ROUNDS

    def _draw_noise(self, count: int) -> np.ndarray:
        """``count`` values of the user's mechanism's noise: its release of zeros."""
        mech = self._mechanism()
        assert mech is not None
        return mech(np.zeros(count))

    def _mechanism(self) -> LaplaceMechanism | None:
        """The user's mechanism whose noise the block path draws ahead; None for CUCB."""
        return None

    def _block_noise(self, need: int) -> tuple[np.ndarray, np.ndarray]:
        """The block path's noise buffer (values, position) with ``need`` values ahead.

        The user's mechanism draws them. The buffer is new when the mechanism was replaced."""
        mech = self._mechanism()
        assert mech is not None
        if self._ahead is None or self._ahead_mechanism is not mech:
            self._ahead = DrawnAhead(CHUNK)
            self._ahead_mechanism = mech
        self._ahead.ensure(need, self._draw_noise)
        return self._ahead.values, self._ahead.pos

    def play_outcomes(self, outcomes: Any) -> np.ndarray:
        """Block path: play L rounds on every base arm's outcomes (N, L, m) drawn ahead by the env.

        The outcomes come from :meth:`~ldp_gym.envs.combinatorial.CombinatorialCore.draw_outcomes`;
        the agent reads those of its super arm only. It returns the super arms (N, L, m) int8.

        One compiled kernel, :func:`_play_rounds`, plays the rounds in order. Each is the
        per-round protocol: index of the public state and oracle, then the user's message, then
        the server's update from the message. The decision stream is drawn as ``act`` draws it.
        For CUCB, the actions are bitwise those of ``act``/``observe`` on the same
        feedback. The private agents' noise is drawn ahead by their
        :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism` in chunks of :data:`CHUNK`
        values and added by :func:`~ldp_gym.wrappers.mechanisms.compiled.snap_add`. This is the
        mechanism's release, bitwise, on the same draw: the law of per-round play, on another
        stream. The next chunk is drawn in the background thread while the kernel runs, where a
        core is spare (:mod:`ldp_gym.background`).
        ``last_report`` is left as it was. Every outcome must lie in ``outcome_bounds`` and in
        the mechanism's [0, 1], else ``ValueError``: nothing is clipped here."""
        if self.block_play is not BlockPlay.PLAYS_OUTCOMES:
            raise ValueError(f"{self.name} has no block path with family {self.family!r} "
                             f"(block_play is ROUNDS): play it by act/observe")
        n, m = self._n, self.n_arms
        x = np.asarray(outcomes)
        if x.ndim != 3 or x.shape[0] != n or x.shape[2] != m or x.dtype.kind != "f":
            raise ValueError(f"outcomes must be a float array (N={n}, L, m={m}), got "
                             f"{x.dtype} {x.shape}")
        lo, hi = self.outcome_bounds
        mech = self._mechanism()
        if mech is not None:
            lo, hi = max(lo, mech.lower), min(hi, mech.upper)
        if x.size and not (x.min() >= lo and x.max() <= hi):  # NaN fails too
            raise ValueError(f"outcomes must lie in [{lo:g}, {hi:g}] on the block path")
        kind, counts, sums, _, b, c = self._index_terms()
        oracle_kind, width, count, probs = self.family._kernel_spec()
        length = x.shape[1]
        actions = np.empty((n, length, m), dtype=np.int8)
        trees = self._trees(length)
        step = max(1, PIECE // max(n, 1))
        scratch = np.empty((min(step, length), n, m))
        for start in range(0, length, step):
            stop = min(length, start + step)
            u = self.rng.random(out=scratch[:stop - start])  # act's draws, round after round
            a = _cucb_a(self.t[:, None] + np.arange(stop - start)) if kind == _CUCB \
                else np.zeros((n, 0))
            noise, pos, grid = self._piece_noise(stop - start)
            _play_rounds((kind, self._release, b, c), (oracle_kind, width, count, probs), x,
                         start, stop, (counts, sums, self.t), (a, u), (noise, pos, grid, trees),
                         actions)
            self._piece_done(noise, pos, trees)
        if self._ahead is not None:
            self._ahead.settle()
        return actions

    def _trees(self, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The block kernel's ``trees`` for ``length`` rounds; empty for agents other than CUCB-DP.

        For CUCB-DP, they are its ``alpha`` and ``noisy`` node arrays (N, m, levels) and a buffer
        for the nodes they close."""
        return np.zeros((0, 0, 0)), np.zeros((0, 0, 0)), np.zeros(0)

    def _piece_noise(self, rounds: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The noise of the next ``rounds`` rounds of every run for the block kernel:
        ``(values, position, grid)``; none for CUCB.

        The user's mechanism draws it ahead, and draws the next chunk while the kernel runs."""
        mech = self._mechanism()
        if mech is None:
            return np.zeros(0), np.zeros(1, dtype=np.int64), 1.0
        noise, pos = self._block_noise(rounds * self._n * (self.K if self._release == _LDP1
                                                           else 1))
        assert self._ahead is not None
        self._ahead.prefetch(self._draw_noise)
        return noise, pos, mech.grid

    def _piece_done(self, noise: np.ndarray, pos: np.ndarray, trees: tuple) -> None:
        """After a piece of the block; the buffer of drawn noise keeps its position."""

    @override
    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        # the runner's batch (arrays of the expected dtypes and shapes) checked in one compiled
        # pass; anything else, or a batch that fails it, takes the checked path of the base class
        n, m = self._n, self.n_arms
        if self.num_envs is not None and type(obs) is np.ndarray \
                and type(next_obs) is np.ndarray and type(action) is np.ndarray \
                and type(reward) is np.ndarray and action.dtype == np.int8 \
                and action.shape == (n, m) and obs.shape == (n, 2 * m) \
                and next_obs.shape == (n, 2 * m) and obs.dtype.kind == "f" \
                and next_obs.dtype.kind == "f" and reward.dtype == np.float64 \
                and reward.shape == (n,):
            lo, hi = self.outcome_bounds
            if _feedback_status(obs, next_obs, action, reward, lo, hi) == 0:
                self._learn(obs, action, reward, next_obs)
                return
        super().observe(obs, action, reward, next_obs)

    def _observe(self, obs, actions, rewards, next_obs):
        self._feedback(actions, next_obs)
        self._learn(obs, actions, rewards, next_obs)

    @abstractmethod
    def _learn(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
               next_obs: np.ndarray) -> None:
        """Learn from a checked round: ``actions`` 0/1 int8 and ``next_obs`` its feedback."""
        raise NotImplementedError


# =========================================================================== non-private


class CUCB(CombinatorialAgent):
    """CUCB (Chen, Wang and Yuan, ICML 2013, Alg 1; the non-private base of Chen et al. 2020).

    ``mu_bar(i) = min{mu^(i) + sqrt(3 ln t / (2 T_i)), 1}`` and ``S = oracle(mu_bar)``. Here
    ``t`` is the number of rounds played so far, at least 1, and the width is infinite while
    ``T_i = 0``. ``mu^`` is the empirical mean of the observed outcomes.

    Privacy: none. On a :class:`~ldp_gym.wrappers.semibandit.LaplaceSemiBandit` env it
    averages the released noisy outcomes. This is the black-box route to CUCB-LDP1's guarantee,
    with CUCB's width rather than the relaxed one.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import CUCB
        >>> env = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=100)
        >>> agent = CUCB.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> action.shape, int(agent.t[0]), agent.privacy is None
        ((20,), 10, True)
    """

    name = "CUCB"
    _release = _RAW

    def _init_state(self, n):
        super()._init_state(n)
        self.sums = np.zeros((n, self.n_arms))

    def _index_terms(self):
        return _CUCB, self.counts, self.sums, _cucb_a(self.t), 0.0, 0.0

    def _learn(self, obs, actions, rewards, next_obs):
        _accumulate(actions, next_obs, self.counts, self.sums)
        self.t += 1


# =========================================================================== local DP


class _LocalCombinatorial(_Private, LocalDPAgent, CombinatorialAgent):
    """Shared server state of CUCB-LDP1/2: counts ``T_i`` and sums of the noisy values."""

    model = "local"
    #: the Laplace mechanism of the user side (float-safe, clips to [0, 1])
    mechanism: LaplaceMechanism

    @abstractmethod
    def _width_constant(self) -> float:
        raise NotImplementedError

    def _init_state(self, n):
        super()._init_state(n)
        self.noisy_sums = np.zeros((n, self.n_arms))
        assert self.horizon is not None
        self.width = self._width_constant()
        self._no_terms = np.zeros(n)
        self._ahead = None

    def _mechanism(self):
        return self.mechanism

    def public_state(self):
        """The server's broadcast: ``counts`` (T_i) and ``noisy_sums`` (read-only)."""
        return readonly(counts=self.counts, noisy_sums=self.noisy_sums)

    def _index_terms(self):
        return _LOCAL, self.counts, self.noisy_sums, self._no_terms, self.width, 0.0

    _observe = CombinatorialAgent._observe  # the feedback checked, then learned (not LocalDPAgent's)

    def _user_inputs(self, obs, actions, rewards, next_obs):
        out = super()._user_inputs(obs, actions, rewards, next_obs)
        if out[3].shape[1:] != (2 * self.n_arms,):
            raise ValueError(f"next_obs must have length 2 n_arms = {2 * self.n_arms}, got "
                             f"shape {out[3].shape[1:]}")
        return out

    def _learn(self, obs, actions, rewards, next_obs):
        LocalDPAgent._observe(self, obs, actions, rewards, next_obs)  # report, then update


class CUCBLDP1(_LocalCombinatorial):
    """CUCB-LDP1 (Chen et al., ICML 2020, Algorithm 1): every outcome of S with Lap(K/epsilon).

    User side (:meth:`local_report`): for every base arm i of the played S_t the user sends
    ``X_{t,i} + Lap(K/epsilon)``: float-safe :class:`~ldp_gym.wrappers.mechanisms.
    LaplaceMechanism` with budget ``epsilon/K`` per coordinate on [0, 1]. Outcomes are clipped
    to [0, 1], and the scale is ``K (1 + g)/epsilon`` with g the grid step. The message is
    ``{"mask": S (N, m) bool, "values": (N, m), 0 outside S}``. Server side (:meth:`update`):
    running means ``mu~`` of the noisy values, ``T_i += 1`` for i in S_t. Index (Algorithm 1,
    line 4): ``mu_bar(i) = min{mu~(i) + 4 sqrt(2 K^2 ln T / (epsilon^2 T_i)), 1}``.

    Privacy: epsilon-LDP (Theorem 1), local model, pure; unit: the user's outcomes of the
    round, all base arms of S. Neighbours may change every one of them, by any amount, out of
    bounds included: those are clipped. Accounting: ``|S| <= K`` coordinates, each
    ``epsilon/K``-DP, so at most epsilon by composition, and exactly epsilon when ``|S| = K``.
    The super arm is a function of the public state and of the decision stream, not of the
    user's data. Regret: Theorem 2, under B_inf-bounded smoothness.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import CUCBLDP1
        >>> env = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=100)
        >>> agent = CUCBLDP1.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        local DP, epsilon=1 per user's outcomes (the base arms of the played super arm, one round)
        >>> sorted(agent.last_report), agent.last_report["values"].shape  # what the server got
        (['mask', 'values'], (1, 20))
    """

    name = "CUCB-LDP1"
    _release = _LDP1
    _spends_per_arm = True

    def _width_constant(self):
        assert self.horizon is not None
        return 4.0 * math.sqrt(2.0 * self.K ** 2 * math.log(self.horizon) / self.epsilon ** 2)

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = LaplaceMechanism(check_share("epsilon", self.epsilon, self.K), 0.0, 1.0,
                                          **self.noise_source())

    report_reads_public_state = False  # the user sends its noised outcomes only

    def _report(self, obs, actions, rewards, next_obs, public_state):
        played = _at_most_k(actions, self.K)
        values = np.zeros(played.shape)
        values[played] = self.mechanism(next_obs[:, :self.n_arms][played])
        return {"mask": played, "values": values}

    def block_report(self, actions: Any, outcomes: Any) -> dict[str, np.ndarray]:
        """User side of the block path, for audits: the message (as :meth:`local_report`'s)
        that :meth:`play_outcomes`' report step (:func:`ldp1_report_row`) builds for super arms
        ``actions`` (N, m) on outcomes (N, m) in [0, 1], from the block path's noise."""
        played = _at_most_k(actions, self.K)
        x = _report_inputs(played, outcomes, self.n_arms)
        noise, pos = self._block_noise(int(played.sum()))
        values = np.zeros(played.shape)
        _ldp1_report_rows(x[:, None], played, noise, pos, self.mechanism.grid, values)
        return {"mask": played, "values": values}

    def report_schema(self):
        """``mask`` (N, m) of S, at most K base arms, and ``values`` (N, m), finite."""
        return {"mask": Part((self._n, self.n_arms), "mask", high=self.K),
                "values": Part((self._n, self.n_arms), bound=self.mechanism.release_bound())}

    def _consistent(self, report):
        if (report["values"][~report["mask"]] != 0).any():
            raise ValueError("report['values'] must be 0 outside the mask of S")

    def _fold(self, report):
        self.counts += report["mask"]
        self.noisy_sums += report["values"]
        self.t += 1


def _at_most_k(actions: Any, K: int) -> np.ndarray:
    """The super arms (N, m) as a bool mask, refused if one has more than K base arms."""
    return check_at_most_k(np.asarray(actions).astype(bool), K, "actions")


def _report_inputs(played: np.ndarray, outcomes: Any, m: int) -> np.ndarray:
    """The outcomes for ``block_report``'s compiled report step, checked against ``played``.

    Both must be (N, m) and the outcomes finite and in [0, 1], else one clear error: the
    compiled step reads them by index, so mismatched shapes would read and write out of
    bounds. The kernel's release does not clip, as the env's outcomes lie in [0, 1]."""
    if played.ndim != 2 or played.shape[1] != m:
        raise ValueError(f"actions must be super arms (N, m={m}), got shape {played.shape}")
    x = np.ascontiguousarray(outcomes, dtype=np.float64)
    if x.shape != played.shape:
        raise ValueError(f"outcomes must have the shape of actions {played.shape}, got {x.shape}")
    if not (np.isfinite(x).all() and (x >= 0.0).all() and (x <= 1.0).all()):
        raise ValueError("outcomes must be finite and in [0, 1]")
    return x


class CUCBLDP2(_LocalCombinatorial):
    """CUCB-LDP2 (Chen et al., ICML 2020, Algorithm 2): only the least-pulled arm of S, Lap(1/epsilon).

    User side (:meth:`local_report`): ``I_t = argmin_{i in S_t} T_i`` from the broadcast
    counts, which are public; ties go to the smallest index. The user then sends
    ``X_{t,I_t} + Lap(1/epsilon)``, by a float-safe
    :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism` on [0, 1]; the outcome is clipped.
    The message is ``{"arm": I_t (N,), "value": (N,)}``, with arm -1 for an empty S: nothing
    sent. Server side: only arm ``I_t`` is updated, with ``T_{I_t} += 1`` and the running mean
    of its noisy values. Index (Algorithm 2, line 4):
    ``mu_bar(i) = min{mu~(i) + 4 sqrt(2 ln T / (epsilon^2 T_i)), 1}``.

    Privacy: epsilon-LDP (Theorem 3), local model, pure; unit: the user's outcomes of the
    round. Only one of them leaves the user, and I_t depends on public counts only. Regret:
    Theorem 4, without CUCB-LDP1's K^2 factor.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import CUCBLDP2
        >>> env = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=100)
        >>> agent = CUCBLDP2.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> sorted(agent.last_report), int(agent.counts.sum())   # one base arm per round
        (['arm', 'value'], 10)
    """

    name = "CUCB-LDP2"
    _release = _LDP2

    def _width_constant(self):
        assert self.horizon is not None
        return 4.0 * math.sqrt(2.0 * math.log(self.horizon) / self.epsilon ** 2)

    def _init_state(self, n):
        super()._init_state(n)
        self.mechanism = LaplaceMechanism(self.epsilon, 0.0, 1.0, **self.noise_source())

    def _report(self, obs, actions, rewards, next_obs, public_state):
        played = np.asarray(actions).astype(bool)
        rows = np.arange(played.shape[0])
        counts = np.where(played, public_state["counts"], np.iinfo(np.int64).max)
        arm = counts.argmin(axis=1)
        sent = played[rows, arm]
        value = np.where(sent, self.mechanism(next_obs[rows, arm]), 0.0)
        return {"arm": np.where(sent, arm, -1), "value": value}

    def block_report(self, actions: Any, outcomes: Any,
                     public_state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """User side of the block path, for audits: the message (as :meth:`local_report`'s)
        that :meth:`play_outcomes`' report step (:func:`ldp2_report_row`) builds for super arms
        ``actions`` (N, m) on outcomes (N, m) in [0, 1] given the broadcast counts, from the
        block path's noise."""
        played = np.asarray(actions).astype(bool)
        x = _report_inputs(played, outcomes, self.n_arms)
        counts = np.ascontiguousarray(public_state["counts"], dtype=np.int64)
        if counts.shape != played.shape:
            raise ValueError(f"public_state['counts'] must have the shape of actions "
                             f"{played.shape}, got {counts.shape}")
        noise, pos = self._block_noise(played.shape[0])
        arms, values = np.empty(played.shape[0], np.int64), np.empty(played.shape[0])
        _ldp2_report_rows(x[:, None], played, counts, noise, pos, self.mechanism.grid, arms,
                          values)
        return {"arm": arms, "value": values}

    def report_schema(self):
        """``arm`` (N,) the base arm sent, ``value`` (N,); ``arm`` is -1 for an empty S, nothing sent."""
        return {"arm": Part((self._n,), "int", -1, self.n_arms - 1),
                "value": Part((self._n,), bound=self.mechanism.release_bound())}

    def _fold(self, report):
        arm = report["arm"]
        ok = arm >= 0
        rows, arms = self._rows[ok], arm[ok]
        self.counts[rows, arms] += 1
        self.noisy_sums[rows, arms] += report["value"][ok]
        self.t += 1


# =========================================================================== global DP


class CUCBDP(_Private, GlobalDPAgent, CombinatorialAgent):
    """CUCB-DP (Chen et al., ICML 2020, Algorithm 3): per-base-arm tree aggregation.

    The server sees the raw outcomes. Each base arm's stream of outcomes goes through a
    binary tree mechanism, :class:`~ldp_gym.wrappers.mechanisms.continual.TreeMechanism`
    (Dwork et al. 2010, Chan et al. 2011; the paper's Lemma 1). Its nodes get
    ``Lap(2K log T/epsilon)``: the tree runs with budget ``epsilon/(2K)``, i.e. node scale
    ``levels (1 + g) 2K/epsilon`` with ``levels = floor(log2 T) + 1 >= log2 T``. ``mu~(i)`` is
    the tree's noisy sum over ``T_i``. Index (Algorithm 3, line 4):
    ``mu_bar(i) = min{mu~(i) + sqrt(4 ln(mT)/T_i) + c K ln^3 T/(T_i epsilon), 1}``.

    The constant c: Algorithm 3 shows ``c = 12``, while the analysis uses 24, in Lemma 2 and
    the proof of Theorem 8. We take ``c = 12`` (:attr:`c`), the algorithm as stated: it is what
    a reader implementing Algorithm 3 runs, and the smaller width explores less. The regret
    bound of Theorem 8 is proved with 24; the privacy does not depend on c.

    Privacy: epsilon-DP (Theorem 7), global model, pure; unit: one user's outcomes of the
    round. These are up to K base arms, one element in each of their streams. Each element is
    ``epsilon/(2K)``-DP in its stream, so by composition over at most K streams the round is
    ``epsilon/2``-DP: the paper's ``2K`` noise is conservative by a factor 2, and epsilon is
    stated. Actions depend on the noisy sums only. The accounting needs ``|S| <= K``: a super
    arm of more than K base arms is refused on every path. These are ``act``, where a family's
    oracle may break its own K, and ``observe``.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import CUCBDP
        >>> env = gym.make("LDPCombinatorialBandit-v0", max_episode_steps=100)
        >>> agent = CUCBDP.from_env(env, epsilon=1.0, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(10):
        ...     action = agent.act(obs)
        ...     next_obs, reward, terminated, truncated, info = env.step(action)
        ...     agent.observe(obs, action, reward, next_obs)
        ...     obs = next_obs
        >>> print(agent.privacy)
        global DP, epsilon=1 per user's outcomes (the base arms of the played super arm, one round)
        >>> bool((agent.tree.counts == agent.counts).all())
        True
    """

    name = "CUCB-DP"
    model = "global"
    _spends_per_arm = True
    _release = _TREES
    #: the constant of the privacy width (Algorithm 3 shows 12, Lemma 2 shows 24)
    c: ClassVar[float] = 12.0

    def _init_state(self, n):
        super()._init_state(n)
        T = self.horizon
        assert T is not None
        self.tree = TreeMechanism(check_share("epsilon", self.epsilon, 2 * self.K), T,
                                  (n, self.n_arms), 0.0, 1.0, **self.noise_source())
        self.counts = self.tree.counts  # the pulls are the streams' lengths
        self._c1 = 4.0 * math.log(self.n_arms * T)
        self._c2 = self.c * self.K * math.log(T) ** 3 / self.epsilon
        self._no_terms = np.zeros(n)

    def _index_terms(self):
        return _GLOBAL, self.counts, self.tree.noisy_sums, self._no_terms, self._c1, self._c2

    def _learn(self, obs, actions, rewards, next_obs):
        played = check_at_most_k(actions.view(bool), self.K, "actions")
        self.tree.add(np.clip(next_obs[:, :self.n_arms], 0.0, 1.0), played)  # (and the counts)
        self.t += 1

    def _trees(self, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if (self.t + length > self.horizon).any():
            raise ValueError(f"{self.name} plays at most horizon={self.horizon} rounds (its "
                             f"trees hold that many outcomes)")
        shape = (self._n, self.n_arms, self.tree.levels)  # views, made per call
        closed = np.empty(min(length, max(1, PIECE // self._n)) * self._n * self.K)
        return self.tree._alpha.reshape(shape), self.tree._noisy.reshape(shape), closed

    def _piece_noise(self, rounds: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The trees' own noise stream, at most K values per run and round.

        :meth:`_piece_done` gives back what the piece does not use, so the block path draws the
        noise of per-round play."""
        return self.tree.noise(rounds * self._n * self.K), np.zeros(1, dtype=np.int64), \
            self.tree.grid

    def _piece_done(self, noise: np.ndarray, pos: np.ndarray, trees: tuple) -> None:
        used = int(pos[0])
        self.tree.stream.give_back(noise.shape[0] - used)
        self.tree.record(trees[2][:used])


AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (CUCB, CUCBLDP1, CUCBLDP2, CUCBDP)}
