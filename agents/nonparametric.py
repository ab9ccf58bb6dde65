"""Nonparametric contextual bandit agents: LDPMAB with and without auxiliary data, ABSE, uniform.

Contexts lie in [0, 1]^d, the K arms' mean rewards are smooth functions of the
context and nothing parametric is assumed (``LDPNonparametricBandit-v0``).

* :class:`LDPMAB`: Ma et al. (2025), Alg 1-2: a max-edge dyadic partition
  refined adaptively, arm elimination in every bin, every user privatising
  one indicator and one reward per slot with Laplace noise, one slot per active
  bin and arm; epsilon-LDP per user, pure.
* :class:`LDPMABAux`: Ma et al. (2025), Alg 3: the same, after a jump-start
  over logged auxiliary datasets under covariate shift, each privatised with its
  own budget, combined by the multi-source estimator of eq. 26-28.
* :class:`ABSE`: Perchet and Rigollet (2013), adaptively binned successive
  elimination; non-private, the reference of Ma et al.'s experiments.
* :class:`UniformRandom`: every arm with probability 1/K, the floor of every
  comparison. It runs on any setting with a ``Discrete`` action space.

**One kernel.** The partition agents are written once as compiled (numba)
rounds of one kernel per algorithm, with the steps of :mod:`ldp_gym.agents.glm_kernels`:

* ``CHOOSE``, by the user: the bin of the context, then an arm uniformly among its
  active arms.
* ``REPORT``, by the user: the inputs of every slot of the message, released by the
  :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism` of its part.
* ``UPDATE``, by the server: the message added to the bins' sums, then elimination and
  refinement.
* ``FAST``, for the runner's block path: the server's sums after each user, built from
  the same slot inputs plus noise the same mechanisms drew ahead. The noise is added by
  :func:`ldp_gym.wrappers.mechanisms.compiled.snap_add`, the float-safe ``snap(x) + k g``.
  It covers only the sums the algorithm can still read: an eliminated arm's sums, the
  reward sums of a bin with one active arm and every sum of a bin with one active arm at
  the depth cap are never read again, so their noise is not drawn.

Everything else is the per-user protocol, user by user and slot by slot, with the same
decision stream. The law of every action, every partition and every elimination is that
of ``local_report`` + ``update``; a statistical test in
``tests/test_nonparametric_agents.py`` checks it. Noise is drawn ahead in fixed chunks
by the mechanisms and used step by step over all runs, so results do not
depend on how the rounds are split into blocks.

**Memory** is that of the partition: node arrays grow by doubling as bins are
refined, up to the full tree of the depth cap, whatever the horizon.

Example:
    >>> import gymnasium as gym
    >>> import ldp_gym
    >>> from ldp_gym.agents import LDPMAB
    >>> env = gym.make("LDPNonparametricBandit-v0", max_episode_steps=1000)
    >>> agent = LDPMAB.from_env(env, epsilon=8.0, seed=0)
    >>> obs, _ = env.reset(seed=0)
    >>> for _ in range(5):
    ...     action = agent.act(obs)
    ...     next_obs, reward, terminated, truncated, info = env.step(action)
    ...     agent.observe(obs, action, reward, next_obs)
    ...     obs = next_obs
    >>> sorted(agent.last_report), agent.last_report["U"].shape   # one slot per (bin, arm)
    (['U', 'V', 'bins', 'source'], (1, 1, 3))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from typing_extensions import override

from ldp_gym.protocols import BlockPlay
from ldp_gym.validation import MIN_EPSILON, Part, check_finite, check_int, check_real, check_share
from ldp_gym.wrappers.mechanisms import LaplaceMechanism
from ldp_gym.wrappers.mechanisms.compiled import snap_add
from ldp_gym.wrappers.mechanisms.noise import DrawnAhead
from ldp_gym.wrappers.mechanisms.privacy import Privacy

from .base import Agent, LocalDPAgent, readonly

__all__ = ["ABSE", "AGENTS", "CHOOSE", "FAST", "LDPMAB", "REPORT", "UPDATE", "LDPMABAux",
           "UniformRandom", "abse_rounds", "partition_rounds", "partition_rounds_departures"]

#: steps of a kernel call (bit flags), as in :mod:`ldp_gym.agents.glm_kernels`
CHOOSE, REPORT, UPDATE, FAST = 1, 2, 4, 8
#: the public code's departures (bit flags of :func:`partition_rounds`; NOT private)
REUSED_SUMS, NOISE_IN_BIN = 1, 2
#: their names, as :class:`LDPMAB`'s ``departures`` takes them
DEPARTURES = {"reused_sums": REUSED_SUMS, "noise_in_bin": NOISE_IN_BIN}

_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
#: helpers of the rounds, inlined into them (no call, and no reference counting of their
#: array arguments, per bin and step)
_INLINE: dict[str, Any] = dict(_JIT, inline="always")

#: values drawn per refill of a noise or decision buffer (fixed, so that the stream of values
#: is the same however the rounds are split into calls)
CHUNK = 1 << 16
#: the default radius constant: ``C sqrt(ln n) = sqrt(2 log2 n)`` (Ma et al.'s public code)
DEFAULT_C = math.sqrt(2.0 / math.log(2.0))


# =========================================================================== LDPMAB kernel


@njit(**_INLINE)
def _leaf(obs, n, s, lo, hi, split, left, active):  # pragma: no cover - compiled
    """The active bin (node id) of run n containing its context x = ``obs[n, s]``: down the
    tree from the root, left when ``x_j < midpoint`` of the node's split coordinate j, right
    otherwise. Arrays are read by index (a numba view per round is a reference-counted
    object)."""
    node = 0
    while not active[n, node]:
        j = split[n, node]
        mid = 0.5 * (lo[n, node, j] + hi[n, node, j])
        node = left[n, node] if obs[n, s, j] < mid else left[n, node] + 1
    return node


@njit(**_INLINE)
def _arms_left(arms, n, b):  # pragma: no cover - compiled
    """The number of active arms of bin b of run n."""
    m = 0
    for k in range(arms.shape[2]):
        if arms[n, b, k]:
            m += 1
    return m


@njit(**_INLINE)
def _pick(arms, n, node, u):  # pragma: no cover - compiled
    """The ``floor(u m)``-th of the m active arms ``arms[n, node]`` (u uniform in [0, 1)):
    uniform over them."""
    m = _arms_left(arms, n, node)
    j = min(int(u * m), m - 1)
    arm = -1
    for k in range(arms.shape[2]):
        if arms[n, node, k]:
            if j == 0 and arm < 0:
                arm = k
            j -= 1
    return arm


class Partition(NamedTuple):
    """The server's partition of [0, 1]^d per run; axis 1 holds the nodes, grown between calls.

    Each node has its bounds ``lo``, ``hi`` (N, nodes, d), ``depth``, ``split`` coordinate and
    first child ``left`` (N, nodes) once refined, whether it is ``active``, that is a bin of
    the partition, and its active ``arms`` (N, nodes, K). The first ``n_active`` of each row
    of ``bins`` are the active bins in slot order; ``n_nodes`` (N,) counts the nodes used."""

    lo: np.ndarray
    hi: np.ndarray
    depth: np.ndarray
    split: np.ndarray
    left: np.ndarray
    active: np.ndarray
    arms: np.ndarray
    bins: np.ndarray
    n_active: np.ndarray
    n_nodes: np.ndarray


class BinSums(NamedTuple):
    """What the server keeps of the messages, per bin and source: the sums of the released
    indicators U~ and rewards V~ (N, nodes, sources, K), the users counted N_s(A) (N, nodes,
    sources); ``reused``: the ablation's re-added weighted sums (N, nodes, sources, K, 3),
    empty otherwise."""

    indicators: np.ndarray
    rewards: np.ndarray
    users: np.ndarray
    reused: np.ndarray


class Rule(NamedTuple):
    """The constants of LDPMAB's rounds: rewards ``lower + width [0, 1]``, each source's
    budget ``epsilons`` (S,), the ``warmup`` a bin's users must pass before it is checked,
    the radius constant ``C sqrt(log n)`` (``radius``), whether several sources are weighted
    (``multi_source``, eq. 26-28), the depth cap and every depth's ``taus`` (eq. 17), and the
    ablation's check period ``batch``."""

    lower: float
    width: float
    epsilons: np.ndarray
    warmup: int
    radius: float
    multi_source: bool
    max_depth: int
    taus: np.ndarray
    batch: int


class Draws(NamedTuple):
    """The randomness drawn ahead: the decision uniforms and the two mechanisms' noise.

    The uniforms ``decisions`` are read from ``decision_pos[0]``. The noise ``noise_u``,
    ``noise_v`` is read from ``noise_pos[0]`` and ``[1]``, on the grids ``grid_u``,
    ``grid_v``."""

    decisions: np.ndarray
    decision_pos: np.ndarray
    noise_u: np.ndarray
    noise_v: np.ndarray
    noise_pos: np.ndarray
    grid_u: float
    grid_v: float


class Messages(NamedTuple):
    """The reports of a block (L, N, B, ...): each slot's ``bins``, indicator ``U`` and reward
    ``V`` inputs. ``REPORT`` writes them; ``UPDATE`` reads the released ones."""

    bins: np.ndarray
    U: np.ndarray
    V: np.ndarray


# The helpers take the arrays they read, unpacked once per call of the rounds, and return one
# number, once (no return from inside a loop): passing the structures into the per-bin helpers,
# or returning a tuple from the noise helper, made the rounds 35-45 % slower; early returns
# from loops in _explored, _narrow, _pick and _fits, and counting a bin's arms with _arms_left in the
# per-bin loop, cost 25 % more than the single-exit helpers and the count in the loop.


@njit(**_INLINE)
def _estimate(indicator_sums, reward_sums, users, eps, warmup, multi_source, n, b,
              k):  # pragma: no cover - compiled
    """Arm k's estimate and radius over ``C sqrt(log n)`` in bin b of run n; the radius is inf
    when undefined. Both come from the sums of the released indicators ``indicator_sums`` and
    rewards ``reward_sums`` and the users counted.

    One source (eq. 13-14): ``r^ = sum V~ / sum U~``,
    ``sqrt(max{sum U~, N/eps^2}) / sum U~``. Several (eq. 26-28): weights
    ``lambda_s = min{1, eps_s^2 sum U~_s / N_s}``,
    ``r^ = sum_s lambda_s sum V~_s / sum_s lambda_s sum U~_s`` and
    ``sqrt(sum_s lambda_s^2 max{sum U~_s, N_s/eps_s^2}) / sum_s lambda_s sum U~_s``.
    A weight is 0 below the warm-up, and clipped at 0."""
    if not multi_source:
        released = indicator_sums[n, b, 0, k]
        if released <= 0.0:
            return 0.0, np.inf
        spread = math.sqrt(max(released, users[n, b, 0] / (eps[0] * eps[0])))
        return reward_sums[n, b, 0, k] / released, spread / released
    num, den, var = 0.0, 0.0, 0.0
    for s in range(indicator_sums.shape[2]):
        c = users[n, b, s]
        if c > warmup:
            e2 = eps[s] * eps[s]
            x = indicator_sums[n, b, s, k]
            lam = min(1.0, max(0.0, e2 * x / c))
            num += lam * reward_sums[n, b, s, k]
            den += lam * x
            var += lam * lam * max(x, c / e2)
    if den <= 0.0:
        return 0.0, np.inf
    return num / den, math.sqrt(var) / den


@njit(**_INLINE)
def _longest_edge(lo, hi, u):  # pragma: no cover - compiled
    """The edge of a bin ``[lo, hi]`` that Alg 1 splits: the ``floor(u t)``-th of its ``t``
    longest edges."""
    d = lo.shape[0]
    longest = 0.0
    for j in range(d):
        longest = max(longest, hi[j] - lo[j])
    ties = 0
    for j in range(d):
        if hi[j] - lo[j] == longest:
            ties += 1
    t = min(int(u * ties), ties - 1)
    for j in range(d):
        if hi[j] - lo[j] == longest:
            if t == 0:
                return j
            t -= 1
    return 0


@njit(**_JIT)
def _split(n, b, u, part, sums):  # pragma: no cover - compiled
    """Refine bin b of run n (Alg 1): split it at the midpoint of one of its longest edges.

    The edge is the ``floor(u t)``-th of the t tied ones. The two children replace the bin at
    the end of the active list, with its active arms and fresh sums: the parent's data are
    not reused."""
    lo, hi, d = part.lo, part.hi, part.lo.shape[2]
    dim = _longest_edge(lo[n, b], hi[n, b], u)
    c = part.n_nodes[n]
    part.n_nodes[n] += 2
    mid = 0.5 * (lo[n, b, dim] + hi[n, b, dim])
    arms, users, reused = part.arms, sums.users, sums.reused
    indicator_sums, reward_sums = sums.indicators, sums.rewards
    for child in (c, c + 1):
        for j in range(d):
            lo[n, child, j] = lo[n, b, j]
            hi[n, child, j] = hi[n, b, j]
        part.depth[n, child] = part.depth[n, b] + 1
        part.split[n, child] = -1
        part.left[n, child] = -1
        part.active[n, child] = True
        for k in range(arms.shape[2]):
            arms[n, child, k] = arms[n, b, k]
            for q in range(indicator_sums.shape[2]):
                indicator_sums[n, child, q, k] = 0.0
                reward_sums[n, child, q, k] = 0.0
                if reused.shape[0] > 0:
                    for e in range(3):
                        reused[n, child, q, k, e] = 0.0
        for q in range(indicator_sums.shape[2]):
            users[n, child, q] = 0
    hi[n, c, dim] = mid
    lo[n, c + 1, dim] = mid
    part.split[n, b] = dim
    part.left[n, b] = c
    part.active[n, b] = False
    bins, na = part.bins, part.n_active[n]
    pos = 0
    while bins[n, pos] != b:
        pos += 1
    for i in range(pos, na - 1):
        bins[n, i] = bins[n, i + 1]
    bins[n, na - 1] = c
    bins[n, na] = c + 1
    part.n_active[n] = na + 1


@njit(**_INLINE)
def _fits(mode, forced_row, depth, bins, n_active, n_nodes, cap, max_depth, need_per_slot,
          decisions_left):  # pragma: no cover - compiled
    """Whether the next round fits the node capacity ``cap`` and the ``decisions_left`` uniforms.

    The capacity must hold a refinement of every splittable bin. Returns the noise values the
    round needs, ``need_per_slot`` per active slot, or -1 when it does not fit."""
    need_dec, need_noise, fits = 0, 0, True
    for n in range(n_active.shape[0]):
        na = n_active[n]
        if mode & (UPDATE | FAST):
            splittable = 0
            for i in range(na):
                if depth[n, bins[n, i]] < max_depth:
                    splittable += 1
            fits &= n_nodes[n] + 2 * splittable <= cap
            need_dec += na
        if (mode & CHOOSE) and forced_row[n] < 0:
            need_dec += 1
        need_noise += na * need_per_slot
    return need_noise if fits and need_dec <= decisions_left else -1


@njit(**_INLINE)
def _report(msg_bins, msg_u, msg_v, s, n, bins, na, node, arm, y):  # pragma: no cover
    """The user's message inputs: in every slot i of the active list (``bins``, ``na``
    long), ``U = 1{bin i is the context's, arm k}`` and ``V = y U``, with ``y`` the reward
    scaled to [0, 1]."""
    for i in range(msg_bins.shape[2]):
        b = bins[n, i] if i < na else -1
        msg_bins[s, n, i] = b
        for k in range(msg_u.shape[3]):
            u = 1.0 if (b == node and k == arm) else 0.0
            msg_u[s, n, i, k] = u
            msg_v[s, n, i, k] = u * y


@njit(**_INLINE)
def _add_released(indicator_sums, reward_sums, arms, noise_u, noise_v, grid_u, grid_v, nk, src,
                  n, b, node, arm, y, pu, pv):  # pragma: no cover - compiled
    """Release the slots of bin b that the server can still read, on the ``FAST`` path.

    Each slot of its ``nk`` active arms gets ``snap(input) + noise`` from ``noise_u[pu:]``.
    While two arms or more are left, the slot also gets ``noise_v[pv:]``: the reward sums are
    read only to eliminate. A zero input's release is its noise. Returns the noise values
    used of each, in one int: a tuple returned from an inlined helper in this loop measured
    35 % slower.
    """
    used = 0
    for k in range(arms.shape[2]):
        if not arms[n, b, k]:
            continue
        if b == node and k == arm:
            indicator_sums[n, b, src, k] += snap_add(1.0, noise_u[pu + used], grid_u)
            if nk >= 2:
                reward_sums[n, b, src, k] += snap_add(y, noise_v[pv + used], grid_v)
        else:
            indicator_sums[n, b, src, k] += noise_u[pu + used]
            if nk >= 2:
                reward_sums[n, b, src, k] += noise_v[pv + used]
        used += 1
    return used


@njit(**_INLINE)
def _add_reported(indicator_sums, reward_sums, msg_u, msg_v, src, s, n, i, b):  # pragma: no cover - compiled
    """``UPDATE``: slot i of the released message of round s (bin b) added to b's sums."""
    for k in range(indicator_sums.shape[3]):
        indicator_sums[n, b, src, k] += msg_u[s, n, i, k]
        reward_sums[n, b, src, k] += msg_v[s, n, i, k]


@njit(**_INLINE)
def _reuse_sums(indicator_sums, reward_sums, users, reused, arms, eps, warmup, batch, src, n,
                b):  # pragma: no cover - compiled
    """The ablation's ``REUSED_SUMS``, which is NOT private.

    Once every ``batch`` users of a source, its weighted cumulative sums are added again into
    ``reused``. Returns False between batches: the public code checks the bin only then."""
    c = users[n, b, src]
    if c % batch != 0:
        return False
    e2 = eps[src] * eps[src]
    for k in range(arms.shape[2]):
        if arms[n, b, k]:
            x = indicator_sums[n, b, src, k]
            lam = min(1.0, e2 * x / c) if c > warmup else 0.0
            reused[n, b, src, k, 0] += lam * reward_sums[n, b, src, k]
            reused[n, b, src, k, 1] += lam * x
            reused[n, b, src, k, 2] += lam * lam * max(x, c / e2)
    return True


@njit(**_INLINE)
def _explored(users, warmup, multi_source, n, b):  # pragma: no cover - compiled
    """Whether bin b is past the warm-up: N(A) >= warm-up, or with several sources some
    N_s(A) above it."""
    explored = users[n, b, 0] >= warmup
    if multi_source:
        explored = False
        for q in range(users.shape[2]):
            explored |= users[n, b, q] > warmup
    return explored


@njit(**_INLINE)
def _eliminate(arms, n, b, estimate, radius, tau):  # pragma: no cover - compiled
    """Elimination (eq. 16, 29): arm k goes when ``max_k' (r^_k' - max(r_k', tau)) >
    r^_k + max(r_k, tau)``."""
    best = -np.inf
    for k in range(arms.shape[2]):
        if arms[n, b, k]:
            best = max(best, estimate[k] - max(radius[k], tau))
    for k in range(arms.shape[2]):
        if arms[n, b, k] and best > estimate[k] + max(radius[k], tau):
            arms[n, b, k] = False


@njit(**_INLINE)
def _estimates(indicator_sums, reward_sums, users, eps, warmup, multi_source, radius_c, arms, n,
               b, estimate, radius):  # pragma: no cover - compiled
    """Every active arm k's estimate and radius ``C sqrt(log n) r_k`` in bin b of run n
    (:func:`_estimate`), into ``estimate`` and ``radius``."""
    for k in range(arms.shape[2]):
        if arms[n, b, k]:
            est, r = _estimate(indicator_sums, reward_sums, users, eps, warmup, multi_source, n,
                               b, k)
            estimate[k] = est
            radius[k] = radius_c * r


@njit(**_INLINE)
def _reused_estimates(reused, arms, radius_c, n, b, estimate,
                      radius):  # pragma: no cover - compiled
    """:func:`_estimates` of the ablation ``REUSED_SUMS`` (NOT private): from the weighted sums
    that :func:`_reuse_sums` kept, ``min(1, max(0, num / (den + 1e-4)))`` and
    ``C sqrt(log n) sqrt(var + 1e-4) / |den|`` (inf where den is 0)."""
    for k in range(arms.shape[2]):
        if arms[n, b, k]:
            num, den, var = 0.0, 0.0, 0.0
            for q in range(reused.shape[2]):
                num += reused[n, b, q, k, 0]
                den += reused[n, b, q, k, 1]
                var += reused[n, b, q, k, 2]
            estimate[k] = min(1.0, max(0.0, num / (den + 1e-4)))
            radius[k] = radius_c * math.sqrt(var + 1e-4) / abs(den) if den != 0.0 else np.inf


@njit(**_INLINE)
def _narrow(arms, n, b, radius, tau):  # pragma: no cover - compiled
    """Refinement's test (Alg 1, eq. 17): ``r_k < tau`` for every remaining active arm."""
    narrow = True
    for k in range(arms.shape[2]):
        if arms[n, b, k] and not radius[k] < tau:
            narrow = False
    return narrow


@njit(**_INLINE)
def _rounds(mode, obs, rewards, forced, src, start, stop, rule, part, sums, draws, msgs,  # noqa: C901
            actions, departures):  # pragma: no cover - compiled
    # (the user's and the server's steps stay in this loop: the user's steps in an inlined
    # helper measured 6-14 % slower, helpers that take the state structures 35-45 %)
    """The body of :func:`partition_rounds`; ``departures`` is a constant of each entry point."""
    lo, hi, depth, split, left, active, arms, bins, n_active, n_nodes = part
    indicator_sums, reward_sums, users, reused = sums
    lower, width, eps, warmup, radius_c, multi_source, max_depth, taus, batch = rule
    decisions, decision_pos, noise_u, noise_v, noise_pos, grid_u, grid_v = draws
    k_arms = arms.shape[2]
    snapshot = np.empty(lo.shape[1], dtype=np.int64)
    estimate, radius = np.empty(k_arms), np.empty(k_arms)
    pu, pv = noise_pos[0], noise_pos[1]
    for s in range(start, stop):
        need = _fits(mode, forced[:, s], depth, bins, n_active, n_nodes, lo.shape[1], max_depth,
                     k_arms if mode & FAST else 0, decisions.shape[0] - decision_pos[0])
        if need < 0 or pu + need > noise_u.shape[0] or pv + need > noise_v.shape[0]:
            break
        for n in range(n_active.shape[0]):
            node, arm, y = -1, forced[n, s], 0.0
            if mode & (CHOOSE | REPORT | FAST):  # the user: its bin, its arm, its reward
                node = _leaf(obs, n, s, lo, hi, split, left, active)
                if arm < 0 and (mode & CHOOSE):
                    arm = _pick(arms, n, node, decisions[decision_pos[0]])
                    decision_pos[0] += 1
                actions[n, s] = arm
            if mode & (REPORT | FAST):
                y = (rewards[n, s, arm if rewards.shape[2] > 1 else 0] - lower) / width
            if mode & REPORT:
                _report(msgs.bins, msgs.U, msgs.V, s, n, bins, n_active[n], node, arm, y)
            if not mode & (UPDATE | FAST):
                continue
            na = n_active[n]  # the server: every active bin of the message
            for i in range(na):
                if (mode & UPDATE) and msgs.bins[s, n, i] != bins[n, i]:
                    raise ValueError("report: its bins are not the server's active partition")
                snapshot[i] = bins[n, i]
            for i in range(na):
                b = snapshot[i]
                users[n, b, src] += 1
                j, nk = depth[n, b], 0  # the bin's depth and active arms
                for k in range(k_arms):
                    if arms[n, b, k]:
                        nk += 1
                dead = nk == 1 and j >= max_depth  # one arm at the cap: nothing can change
                if mode & UPDATE:
                    _add_reported(indicator_sums, reward_sums, msgs.U, msgs.V, src, s, n, i, b)
                elif dead:
                    continue
                # (the departure NOISE_IN_BIN: noise only in the user's own bin)
                elif b == node or not (departures & NOISE_IN_BIN):
                    used = _add_released(indicator_sums, reward_sums, arms, noise_u, noise_v, grid_u, grid_v,
                                         nk, src, n, b, node, arm, y, pu, pv)
                    pu += used
                    if nk >= 2:
                        pv += used
                # the server's checks of bin b (Alg 2, lines 9-14; Alg 3)
                if (departures & REUSED_SUMS) and not _reuse_sums(
                        indicator_sums, reward_sums, users, reused, arms, eps, warmup, batch, src, n, b):
                    continue
                if dead or not _explored(users, warmup, multi_source, n, b):
                    continue  # below the warm-up
                tau = taus[j]
                if departures & REUSED_SUMS:
                    _reused_estimates(reused, arms, radius_c, n, b, estimate, radius)
                else:
                    _estimates(indicator_sums, reward_sums, users, eps, warmup, multi_source,
                               radius_c, arms, n, b, estimate, radius)
                if nk >= 2:
                    _eliminate(arms, n, b, estimate, radius, tau)  # eq. 16, 29
                if j < max_depth and _narrow(arms, n, b, radius, tau):  # refinement, eq. 17
                    decision_pos[0] += 1
                    _split(n, b, decisions[decision_pos[0] - 1], part, sums)  # Alg 1
    else:
        s = stop
    noise_pos[0], noise_pos[1] = pu, pv
    return s


@njit(**_JIT)
def partition_rounds(mode, obs, rewards, forced, src, start, stop, rule, part, sums, draws, msgs,
                     actions):  # pragma: no cover - compiled
    """LDPMAB rounds ``start .. stop - 1`` of every run, step by step over all runs.

    This is Ma et al. Alg 2, and Alg 3 for the auxiliary sources. Returns the round reached:
    ``stop`` when done, earlier when the node capacity, the decision uniforms or the noise
    buffers would not cover the next round (:func:`_fits`). The caller then grows or refills
    them and calls again.

    Steps (``mode``): ``CHOOSE``: the user's arm, uniform among the active arms of the bin of
    its context; a ``forced`` arm >= 0 is the logged or given arm. ``REPORT``: the inputs of
    every slot of its message into ``msgs`` (:func:`_report`), released by the caller's
    mechanisms. ``UPDATE``: the server adds the released messages of source ``src`` to the
    sums of the active bins (N(A) += 1; :func:`_add_reported`) and checks each bin
    (Alg 2, lines 9-14), with elimination by eq. 16/29 and refinement by eq. 17. ``FAST``:
    the same sums, each slot the server can still read being ``snap(input) + noise`` with
    the noise the mechanisms drew (:func:`_add_released`), then the checks. ``rewards`` (N,
    L, K) holds every arm's reward or (N, L, 1) the given arm's; contexts ``obs`` (N, L, d)
    lie in [0, 1]^d. Constants and state: :class:`Rule`, :class:`Partition`,
    :class:`BinSums`, :class:`Draws`, :class:`Messages`, each passed as that NamedTuple or
    as a plain tuple of its fields in order. The agents pass plain tuples, which numba
    dispatches about twice as fast."""
    return _rounds(mode, obs, rewards, forced, src, start, stop, Rule(*rule), Partition(*part),
                   BinSums(*sums), Draws(*draws), Messages(*msgs), actions, 0)


@njit(**_JIT)
def partition_rounds_departures(mode, obs, rewards, forced, src, start, stop, rule, part, sums,
                                draws, msgs, actions, departures):  # pragma: no cover - compiled
    """:func:`partition_rounds` with the public code's departures, given as bit flags.

    They are NOT private: this is the diagnostic ablation of :class:`LDPMAB`.
    ``REUSED_SUMS`` checks a bin only every ``batch`` users of a source and then adds the
    source's weighted cumulative sums again into ``reused`` (:func:`_reuse_sums`), which the
    estimate and radius read; ``NOISE_IN_BIN`` adds noise only to the slots of the user's own
    bin (``FAST``)."""
    return _rounds(mode, obs, rewards, forced, src, start, stop, Rule(*rule), Partition(*part),
                   BinSums(*sums), Draws(*draws), Messages(*msgs), actions, departures)


# =========================================================================== ABSE kernel


@njit(**_INLINE)
def _abse_leaf(obs, n, s, lo, side, child, active):  # pragma: no cover - compiled
    """The active hypercube of run n containing its context x = ``obs[n, s]``: child
    ``sum_j 1{x_j >= centre_j} 2^j`` of each refined one (read by index, as :func:`_leaf`)."""
    node = 0
    while not active[n, node]:
        idx = 0
        for j in range(obs.shape[2]):
            if obs[n, s, j] >= lo[n, node, j] + 0.5 * side[n, node]:
                idx += 1 << j
        node = child[n, node] + idx
    return node


@njit(**_INLINE)
def _abse_bound(tau, local_horizon):  # pragma: no cover - compiled
    """The SE bound of Perchet and Rigollet, ``U(tau, m) = 2 sqrt(2 max(1, log(m / tau)) / tau)``."""
    return 2.0 * math.sqrt(2.0 * max(1.0, math.log(local_horizon / tau)) / tau)


class Cubes(NamedTuple):
    """ABSE's partition of [0, 1]^d into hypercubes per run; axis 1 holds the nodes, grown
    between calls. It keeps each cube's lower corner ``lo`` (N, nodes, d) and ``side``,
    ``depth``, first ``child`` once split (N, nodes), whether it is ``active`` and its active
    ``arms`` (N, nodes, K), its arms' ``pulls`` and reward ``sums`` (N, nodes, K), its
    completed elimination ``rounds`` tau (N, nodes); the nodes used, ``n_nodes`` (N,)."""

    lo: np.ndarray
    side: np.ndarray
    depth: np.ndarray
    child: np.ndarray
    active: np.ndarray
    arms: np.ndarray
    pulls: np.ndarray
    sums: np.ndarray
    rounds: np.ndarray
    n_nodes: np.ndarray


@njit(**_INLINE)
def _round_robin(arms, pulls, n, node):  # pragma: no cover - compiled
    """The active arm with the fewest pulls in the cube, the first on ties."""
    best = -1
    for k in range(arms.shape[2]):
        if arms[n, node, k] and (best < 0 or pulls[n, node, k] < pulls[n, node, best]):
            best = k
    return best


@njit(**_INLINE)
def _round_done(arms, pulls, n, node, tau):  # pragma: no cover - compiled
    """The active arms left if every one has ``tau`` pulls, else 0.

    With ``tau`` pulls each, a round of successive elimination is complete."""
    m = 0
    for k in range(arms.shape[2]):
        if arms[n, node, k]:
            m += 1
            if pulls[n, node, k] < tau:
                return 0
    return m


@njit(**_INLINE)
def _abse_eliminate(arms, pulls, sums, n, node, bound):  # pragma: no cover - compiled
    """Successive elimination: arm i goes when ``max_j Ybar_j - Ybar_i > bound``; returns
    the arms eliminated."""
    top = -np.inf
    for k in range(arms.shape[2]):
        if arms[n, node, k]:
            top = max(top, sums[n, node, k] / pulls[n, node, k])
    gone = 0
    for k in range(arms.shape[2]):
        if arms[n, node, k] and top - sums[n, node, k] / pulls[n, node, k] > bound:
            arms[n, node, k] = False
            gone += 1
    return gone


@njit(**_JIT)
def _abse_split(cubes, n, node):  # pragma: no cover - compiled
    """Split cube ``node`` of run n into its 2^d half-side cubes, which inherit its active
    arms with fresh statistics."""
    lo, side, d = cubes.lo, cubes.side, cubes.lo.shape[2]
    width = side[n, node]
    c = cubes.n_nodes[n]
    cubes.n_nodes[n] += 1 << d
    for idx in range(1 << d):
        for j in range(d):
            lo[n, c + idx, j] = lo[n, node, j] + (0.5 * width if (idx >> j) & 1 else 0.0)
        side[n, c + idx] = 0.5 * width
        cubes.depth[n, c + idx] = cubes.depth[n, node] + 1
        cubes.child[n, c + idx] = -1
        cubes.active[n, c + idx] = True
        cubes.rounds[n, c + idx] = 0
        for k in range(cubes.arms.shape[2]):
            cubes.arms[n, c + idx, k] = cubes.arms[n, node, k]
            cubes.pulls[n, c + idx, k] = 0
            cubes.sums[n, c + idx, k] = 0.0
    cubes.child[n, node] = c
    cubes.active[n, node] = False


@njit(**_JIT)
def abse_rounds(mode, obs, rewards, forced, start, stop, horizon, split_constant, max_depth,
                cubes, actions):  # pragma: no cover - compiled
    """ABSE rounds ``start .. stop - 1`` (Perchet and Rigollet 2013, section 5) on the
    :class:`Cubes` ``cubes``; returns the round reached.

    ``cubes`` may also be a plain tuple of its fields in order. The round reached is earlier
    than ``stop`` when a split would exceed the node capacity.

    ``CHOOSE``: in the cube B of the context, the active arm with the fewest pulls in B, by
    round robin (:func:`_round_robin`). ``UPDATE``: the reward of the arm, chosen or given,
    enters B's statistics. When every active arm has ``tau`` pulls, a round of successive
    elimination is over (:func:`_round_done`). Then arms with
    ``max_j Ybar_j - Ybar_i > U(tau, T |B|^d)`` are eliminated (:func:`_abse_eliminate`).
    Once ``tau >= l_B = ceil(c |B|^-2 max(1, log(T |B|^(d+2))))`` with two or more arms left
    and the depth below the cap, B is split into its 2^d half-side hypercubes
    (:func:`_abse_split`)."""
    cubes = Cubes(*cubes)
    lo, side, depth, child, active, arms, pulls, sums, rounds, n_nodes = cubes
    n_runs, cap, d = n_nodes.shape[0], lo.shape[1], lo.shape[2]
    for s in range(start, stop):
        for n in range(n_runs):
            if n_nodes[n] + (1 << d) > cap:
                return s
        for n in range(n_runs):
            node = _abse_leaf(obs, n, s, lo, side, child, active)
            arm = forced[n, s]
            if arm < 0 and (mode & CHOOSE):
                arm = _round_robin(arms, pulls, n, node)
            actions[n, s] = arm
            if not (mode & UPDATE) or not arms[n, node, arm]:
                continue
            pulls[n, node, arm] += 1
            sums[n, node, arm] += rewards[n, s, arm if rewards.shape[2] > 1 else 0]
            tau = rounds[n, node] + 1
            m = _round_done(arms, pulls, n, node, tau)
            if m == 0:
                continue
            rounds[n, node] = tau
            width = side[n, node]
            if m >= 2:
                m -= _abse_eliminate(arms, pulls, sums, n, node,
                                     _abse_bound(tau, horizon * width ** d))
            length = math.ceil(split_constant * max(1.0, math.log(horizon * width ** (d + 2)))
                               / (width * width))
            if m >= 2 and tau >= length and depth[n, node] < max_depth:
                _abse_split(cubes, n, node)
    return stop


# =========================================================================== helpers


def _grow(agent: Any, names: tuple[str, ...], need: int, full: int) -> None:
    """Double the node axis (axis 1) of the agent's arrays ``names`` until it holds ``need``
    nodes (at most ``full``), zero-filled."""
    cap = getattr(agent, names[0]).shape[1]
    while cap < need:
        cap *= 2
    cap = max(min(cap, full), need)
    for name in names:
        a = getattr(agent, name)
        new = np.zeros(a.shape[:1] + (cap,) + a.shape[2:], dtype=a.dtype)
        new[:, :a.shape[1]] = a
        setattr(agent, name, new)


def _check_contexts(obs: Any, n: int, dim: int, lead: tuple[int, ...] = ()) -> np.ndarray:
    """``obs`` as float64 of shape (n,) + lead + (dim,), every coordinate in [0, 1]."""
    x = check_finite(obs, "obs")
    want = (n,) + lead + (dim,)
    if x.shape != want:
        raise ValueError(f"obs must have shape {want} (contexts in [0, 1]^d, d={dim}), "
                         f"got {x.shape}")
    if x.size and (x.min() < 0.0 or x.max() > 1.0):
        raise ValueError(f"obs must lie in [0, 1]^d (d={dim}): a context coordinate is outside "
                         f"[0, 1]")
    return np.ascontiguousarray(x, dtype=np.float64)


def _check_block_rewards(rewards: Any, n: int, k_arms: int) -> np.ndarray:
    r = check_finite(rewards, "rewards")
    length = r.shape[1] if r.ndim == 3 else -1
    if r.shape != (n, length, k_arms):
        raise ValueError(f"rewards must have shape (N, L, K) with N={n}, K={k_arms}, got "
                         f"{r.shape}")
    return np.ascontiguousarray(r, dtype=np.float64)


def _partition_env_params(cls: Any, env: Any) -> dict[str, Any]:
    """``dim`` of a setting with contexts in [0, 1]^d.

    Such a setting's public description has the auxiliary datasets' specifications."""
    setting = getattr(env.unwrapped, "setting", None) or {}
    if "auxiliary" not in setting or "dim" not in setting:
        raise ValueError(f"env: {cls.name} needs contexts in [0, 1]^d "
                         f"(LDPNonparametricBandit-v0 or LDPClassificationBandit-v0)")
    return {"dim": int(setting["dim"])}


# =========================================================================== LDPMAB


class LDPMAB(LocalDPAgent):
    """LDPMAB: Ma et al. (2025), Alg 1-2: the partition, the eq. 8 policy, the eq. 11-17 protocol.

    **Partition** (Alg 1): a max-edge dyadic tree on [0, 1]^d, grown adaptively; a
    bin is split at the midpoint of one of its longest edges, chosen uniformly among
    the tied ones from the agent's decision stream. Contexts below the midpoint go
    left. **Policy** (eq. 8): the user's arm is uniform over the active arms of the
    bin of its context.

    **User** (eq. 11-12): for every bin A of the active partition and every arm k,
    the user sends ``U~ = U + (4/eps) zeta`` and ``V~ = V + (4/eps) xi`` with
    ``U = 1{X in A, pulled k}``, ``V = Y U`` and one standard Laplace draw per slot.
    That makes K slots per bin, in the order of the public list ``bins``, whatever the
    user's data. ``Y`` is the reward mapped from the declared ``[lower, upper]`` to [0, 1]
    and clipped. Each slot is released by a float-safe
    :class:`~ldp_gym.wrappers.mechanisms.LaplaceMechanism` at ``eps/4`` for inputs in
    [0, 1], with scale ``(1 + g) 4/eps``. A user changes at most two slots of U and two of
    V, by at most 1 each: l1 sensitivity 2 per part, budget eps/2 each.

    **Server**: over the N(A) users since A became active, ``r^_k = sum V~ / sum U~``
    (eq. 13) and radius ``r_k = C sqrt(ln n) sqrt(max{sum U~, N(A)/eps^2}) / sum U~``
    (eq. 14). Every user reports to every active bin; the data of a refined bin are not
    passed on to its children. The radius is infinite while ``sum U~ <= 0``. By default
    ``C = sqrt(2/ln 2)``, i.e. ``C sqrt(ln n) = sqrt(2 log2 n)`` with n the horizon: the
    public code's constant. After every user, in every active bin past the warm-up
    ``N(A) >= floor(log2 n)^2``, arm k is eliminated if an active k' has
    ``r^_k' - max(r_k', tau_j) > r^_k + max(r_k, tau_j)`` (eq. 16), with
    ``tau_j = 2^(-j/d)`` at depth j (eq. 17). Then the bin is refined if
    ``r_k < tau_j`` for every active arm and ``j`` is below the cap
    ``floor(min{log2(2n) d/(2+d), log2(2n eps^2) d/(2+2d)})``. Children inherit the
    bin's active arms, so an elimination holds in all its descendants.

    Paths: ``act``/``observe`` run the per-user protocol, ``local_report`` then
    ``update``. ``play_block`` runs the compiled ``FAST`` step of the module docstring:
    the same law, fewer noise draws. ``play_block`` needs every reward inside
    ``[lower, upper]``, as that path does not clip; otherwise it plays the block
    through ``act``/``observe``.

    Privacy: pure epsilon-LDP per user, whose context, action and reward are protected
    together: two float-safe Laplace releases of l1 sensitivity 2 at eps/2 each. The slots
    and their layout depend on the public partition only.

    **Ablation: the public code's departures, NOT PRIVATE.** ``departures`` names
    departures of the authors' public code, for diagnosis only. ``"reused_sums"`` checks
    a bin once every ``departure_batch`` users of a source, by default 100 as in the code's
    batch. At each check it adds the source's weighted cumulative sums *again*:
    ``num += lambda sum V~``, ``den += lambda sum U~``,
    ``var += lambda^2 max{sum U~, N/eps^2}``. The estimate is ``num/(den + 1e-4)`` clipped
    to [0, 1] and the radius ``C sqrt(ln n) sqrt(var + 1e-4)/|den|``. So the radius shrinks
    with the number of batches as well as the users, and the results depend on the batch
    size. ``"noise_in_bin"`` adds Laplace noise only to the slots of the user's own bin, the
    other slots being exact zeros, which reveals the user's bin to the server. **With
    either departure the agent is NOT locally private**: ``privacy`` is ``None``,
    ``repr`` says so, and ``secure=True`` is refused. Never deploy it; it exists to show
    what drives the published curves.

    Args:
        n_arms: K.
        epsilon: the budget per user; nominal only with ``departures``.
        dim: d, the context dimension, read from the env by ``from_env``.
        C: the radius constant (> 0).
        lower, upper: declared reward bounds (mapped to [0, 1]).
        max_depth: override the depth cap (an int >= 0).
        warmup: override the warm-up length (an int >= 1).
        departures: NOT PRIVATE ablation, names among ``"reused_sums"``,
            ``"noise_in_bin"``. The default, none, is the faithful, private algorithm.
        departure_batch: the batch of ``"reused_sums"`` (an int >= 1).
        horizon: n (required).

    Example:
        >>> import numpy as np
        >>> from ldp_gym.agents import LDPMAB
        >>> agent = LDPMAB(3, epsilon=1.0, horizon=10_000, num_envs=2, seed=0)
        >>> agent.warmup, agent.max_depth, round(agent.radius_factor ** 2, 6)   # 2 log2 n
        (169, 4, 26.575425)
        >>> obs = np.array([[0.2, 0.7], [0.9, 0.1]])
        >>> msg = agent.local_report(obs, agent.act(obs), np.ones(2), obs, agent.public_state())
        >>> msg["bins"].tolist(), msg["U"].shape          # the root, K slots
        ([[0], [0]], (2, 1, 3))
    """

    name = "LDPMAB"
    needs_horizon = True
    test_env = "LDPNonparametricBandit-v0"
    test_params = {"epsilon": 1.0}
    #: :meth:`play_block` is available (the runner's block path)
    block_play = BlockPlay.PLAYS_BLOCKS
    #: several sources with the multi-source estimator (eq. 26-28)
    multi_source = False

    @classmethod
    def _unit_test_params(cls):
        return [dict(cls.test_params), {**cls.test_params, "epsilon": 8.0, "C": 0.5, "warmup": 2}]

    def __init__(self, n_arms: int, *, epsilon: float, dim: int = 2, C: float | None = None,
                 lower: float = 0.0, upper: float = 1.0, max_depth: int | None = None,
                 warmup: int | None = None, departures: Sequence[str] = (),
                 departure_batch: int = 100, **kwargs: Any):
        self.declare_privacy("local", epsilon, 0.0, "user", lower, upper)
        if isinstance(departures, (str, bytes)) or not isinstance(departures, Sequence) \
                or any(d not in DEPARTURES for d in departures) \
                or len(set(departures)) != len(departures):
            raise ValueError(f"departures must be a sequence of distinct names among "
                             f"{tuple(DEPARTURES)}, got {departures!r}")
        self._departures = tuple(d for d in DEPARTURES if d in departures)
        self._departure_flags = sum(DEPARTURES[d] for d in self._departures)
        self.departure_batch = check_int("departure_batch", departure_batch)
        if self.departures and kwargs.get("secure"):
            raise ValueError("departures: the public code's departures are NOT private; they "
                             "cannot be combined with secure=True (a deployment's privacy)")
        self._k = check_int("n_arms", n_arms)
        self.dim = check_int("dim", dim)
        self.C = DEFAULT_C if C is None else check_real("C", C, low=0.0)
        self._max_depth = None if max_depth is None else check_int("max_depth", max_depth, low=0)
        self._warmup = None if warmup is None else check_int("warmup", warmup)
        self._configure_sources(kwargs)
        super().__init__(n_arms, **kwargs)

    # ------------------------------------------------------------------ construction
    def _configure_sources(self, kwargs: dict[str, Any]) -> None:
        """The sources besides the target: none here."""
        self.aux_epsilons: tuple[float, ...] = ()
        self.aux_sizes: tuple[int, ...] = ()

    @override
    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        return _partition_env_params(cls, env)

    def _constants(self) -> None:
        """n, the warm-up, the radius factor and the depth cap of the class docstring."""
        assert self.horizon is not None  # needs_horizon
        sources = [(self.horizon, self.epsilon)] + list(zip(self.aux_sizes, self.aux_epsilons))
        n = max(size for size, _ in sources)
        self.n_max = n
        self.warmup = self._warmup if self._warmup is not None \
            else int(math.floor(math.log2(n))) ** 2
        self.radius_factor = self.C * math.sqrt(math.log(n))
        d, m = self.dim, len(self.aux_sizes)
        if self._max_depth is not None:
            self.max_depth = self._max_depth
        else:
            depths = [min(math.log2(2 * size * (m + 1)) * d / (2 + d),
                          math.log2(2 * size * eps ** 2 * (m + 1)) * d / (2 + 2 * d))
                      for size, eps in sources]
            self.max_depth = max(0, int(math.floor(max(depths))))
        self.source_epsilons = np.array([self.epsilon] + list(self.aux_epsilons))
        #: tau_j = 2^(-j/d) (eq. 17) at every depth j up to the cap
        self.taus = np.array([2.0 ** (-j / d) for j in range(self.max_depth + 1)])
        self._width = self.upper - self.lower

    #: the server's node arrays (axis 1: nodes; grown as bins are refined)
    NODE_ARRAYS = ("lo", "hi", "depth", "split", "left", "active", "arms", "indicator_sums",
                   "reward_sums", "bin_users", "bins", "reused_sums")

    def _init_state(self, n):
        self._constants()
        k, d, s = self.n_arms, self.dim, len(self.source_epsilons)
        self._full = (1 << (self.max_depth + 1)) - 1
        cap = int(min(self._full, 64))
        #: bounds of every node (N, nodes, d); depth, split coordinate and first child (N, nodes)
        self.lo, self.hi = np.zeros((n, cap, d)), np.zeros((n, cap, d))
        self.depth = np.zeros((n, cap), np.int64)
        self.split = np.full((n, cap), -1, np.int64)
        self.left = np.full((n, cap), -1, np.int64)
        #: in the active partition; its active arms (N, nodes, K)
        self.active = np.zeros((n, cap), np.bool_)
        self.arms = np.zeros((n, cap, k), np.bool_)
        #: noisy sums of U and V (N, nodes, sources, K) and users counted N_s(A) (N, nodes, sources)
        self.indicator_sums, self.reward_sums = np.zeros((n, cap, s, k)), np.zeros((n, cap, s, k))
        self.bin_users = np.zeros((n, cap, s), np.int64)
        #: the ablation's re-added weighted sums (N, nodes, sources, K, 3); empty otherwise
        reused = bool(self._departure_flags & REUSED_SUMS)
        self.reused_sums = np.zeros((n if reused else 0, cap, s if reused else 0,
                                     k if reused else 0, 3))
        #: the active bins in slot order (the first n_active of each row)
        self.bins = np.zeros((n, cap), np.int64)
        self.hi[:, 0] = 1.0
        self.active[:, 0] = True
        self.arms[:, 0] = True
        self.n_active = np.ones(n, np.int64)
        self.n_nodes = np.ones(n, np.int64)
        self.t = np.zeros(n, np.int64)
        #: one mechanism per part and source (0: the target users, m: auxiliary dataset m):
        #: U slots and V slots, inputs in [0, 1], eps_s/4 each
        shares = [check_share("epsilon" if m == 0 else f"aux_epsilons[{m - 1}]", e, 4.0)
                  for m, e in enumerate(self.source_epsilons)]
        self.mechanisms = [(LaplaceMechanism(e, 0.0, 1.0, **self.noise_source()),
                            LaplaceMechanism(e, 0.0, 1.0, **self.noise_source()))
                           for e in shares]
        #: the target users' two mechanisms
        self.mechanism_u, self.mechanism_v = self.mechanisms[0]
        self._noise = [(DrawnAhead(CHUNK), DrawnAhead(CHUNK)) for _ in self.source_epsilons]
        self._decisions = DrawnAhead(CHUNK)
        self._fed = not self.aux_sizes

    # ------------------------------------------------------------------ state views
    def public_state(self) -> dict[str, np.ndarray]:
        """The partition and the active arms, read-only.

        ``lo``, ``hi`` (N, nodes, d); ``split``, ``left`` (N, nodes), a refined node's
        coordinate and first child; ``active`` (N, nodes); ``arms`` (N, nodes, K); ``bins``
        and ``n_active``, the active list in slot order."""
        return readonly(lo=self.lo, hi=self.hi, split=self.split, left=self.left,
                        active=self.active, arms=self.arms, bins=self.bins,
                        n_active=self.n_active)

    def bin_of(self, obs: Any) -> np.ndarray:
        """The active bin (node id) of each run's context (N,)."""
        x = _check_contexts(obs, self._n, self.dim)
        rows = np.ascontiguousarray(x, dtype=np.float64)[:, None]
        return np.array([_leaf(rows, i, 0, self.lo, self.hi, self.split, self.left, self.active)
                         for i in range(self._n)], dtype=np.int64)

    # ------------------------------------------------------------------ the kernel
    def _kernel(self, mode: int, obs: np.ndarray, rewards: np.ndarray, forced: np.ndarray,
                src: int = 0, msgs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Run :func:`partition_rounds` over all L rounds of (N, L, ...) inputs, growing the
        node arrays and refilling the decision and noise buffers between calls."""
        n, length = forced.shape
        msgs = msgs if msgs is not None else _NO_MSGS
        actions = np.empty((n, length), np.int64)
        noise_u, noise_v = self._noise[src]
        mech_u, mech_v = self.mechanisms[src]
        draw_u, draw_v = (lambda c: mech_u(np.zeros(c))), (lambda c: mech_v(np.zeros(c)))
        pos = np.zeros(2, np.int64)
        step = 0
        while step < length:
            active = int(self.n_active.sum())
            need_dec = (n if mode & CHOOSE else 0) + (active if mode & (UPDATE | FAST) else 0)
            self._decisions.ensure(need_dec, self.rng.random)
            if mode & FAST:
                for buf, draw in ((noise_u, draw_u), (noise_v, draw_v)):
                    buf.ensure(active * self.n_arms, draw)
                    buf.prefetch(draw)  # drawn while the kernel runs
            if mode & (UPDATE | FAST):
                need = int((self.n_nodes + 2 * self._splittable()).max())
                if need > self.lo.shape[1]:
                    _grow(self, self.NODE_ARRAYS, need, self._full)
            pos[0], pos[1] = noise_u.pos[0], noise_v.pos[0]
            draws = (self._decisions.values, self._decisions.pos, noise_u.values,
                          noise_v.values, pos, float(mech_u.grid), float(mech_v.grid))
            step = self._rounds(mode, obs, rewards, forced, src, step, length, None, draws,
                                (msgs["bins"], msgs["U"], msgs["V"]), actions)
            noise_u.pos[0], noise_v.pos[0] = pos[0], pos[1]
        noise_u.settle()
        noise_v.settle()
        return actions

    def _rounds(self, mode: int, obs: np.ndarray, rewards: np.ndarray, forced: np.ndarray,
                src: int, start: int, stop: int, part: tuple | None, draws: tuple, msgs: tuple,
                actions: np.ndarray) -> int:
        """:func:`partition_rounds` on this agent's constants and sums, on ``part``.

        With the departures it is :func:`partition_rounds_departures`. ``part`` is a
        :class:`Partition` as a plain tuple, or ``None`` for the server's own."""
        rule, sums, own = self._structures_now()
        part = own if part is None else part
        if self._departure_flags:
            return partition_rounds_departures(mode, obs, rewards, forced, src, start, stop, rule,
                                               part, sums, draws, msgs, actions,
                                               self._departure_flags)
        return partition_rounds(mode, obs, rewards, forced, src, start, stop, rule, part, sums,
                                draws, msgs, actions)

    def _structures_now(self) -> tuple[tuple, tuple, tuple]:
        """The rounds' constants, the server's sums and its partition.

        They are a :class:`Rule`, :class:`BinSums` and :class:`Partition` as plain tuples,
        which numba dispatches faster than named ones. They are built once per set of node
        arrays, which :func:`_grow` replaces, rather than at every call on the per-round
        path."""
        cached = self.__dict__.get("_structures")
        if cached is None or cached[0] is not self.indicator_sums:
            rule = Rule(float(self.lower), float(self._width), self.source_epsilons,
                        int(self.warmup), float(self.radius_factor), bool(self.multi_source),
                        int(self.max_depth), self.taus, int(self.departure_batch))
            sums = BinSums(self.indicator_sums, self.reward_sums, self.bin_users,
                           self.reused_sums)
            cached = self._structures = (self.indicator_sums, tuple(rule), tuple(sums),
                                         tuple(self._partition()))
        return cached[1], cached[2], cached[3]

    def _partition(self) -> Partition:
        """The server's partition: its arrays, written in place by the rounds."""
        return Partition(self.lo, self.hi, self.depth, self.split, self.left, self.active,
                         self.arms, self.bins, self.n_active, self.n_nodes)

    def _splittable(self) -> np.ndarray:
        """Active bins below the depth cap, per run (N,): the node capacity a round may need
        is twice that."""
        rows = np.arange(self._n)[:, None]
        listed = np.arange(self.bins.shape[1])[None, :] < self.n_active[:, None]
        return (listed & (self.depth[rows, self.bins] < self.max_depth)).sum(axis=1)

    # ------------------------------------------------------------------ auxiliary data
    def _ensure_fed(self) -> None:
        """Feed the auxiliary datasets before the first target user (LDPMABAux)."""

    # ------------------------------------------------------------------ user side
    def _act(self, obs):
        x = _check_contexts(obs, self._n, self.dim)
        self._ensure_fed()
        return self._kernel(CHOOSE, x[:, None], _NO_REWARDS, np.full((self._n, 1), -1))[:, 0]

    def local_report(self, obs, actions, rewards, next_obs, public_state, source: int = 0):
        """As :meth:`LocalDPAgent.local_report`; ``source`` is the dataset of the users.

        0 is the target; m is auxiliary dataset m, released with its own budget."""
        return self._report(*self._user_inputs(obs, actions, rewards, next_obs),
                            _check_partition(self._broadcast(public_state), self.dim), source)

    def _report(self, obs, actions, rewards, next_obs, public_state, source: int = 0):
        """User side: the message of each run's user given the public partition.

        ``bins`` (N, B) holds the active bins in slot order, B being the largest number of
        active bins over the runs. -1 pads the runs with fewer; their padding slots carry no
        data and are ignored. ``U`` and ``V`` (N, B, K) are the released slots and ``source``
        (N,) the dataset: 0 for the target users, m for auxiliary dataset m, released with
        its own budget."""
        x = _check_contexts(obs, self._n, self.dim)
        acts, r = actions.astype(np.int64), rewards
        src = check_int("source", source, low=0)
        if src >= len(self.mechanisms):
            raise ValueError(f"source must be < {len(self.mechanisms)} (the target and the "
                             f"auxiliary datasets), got {src}")
        pub = {k: np.array(v) for k, v in public_state.items()}  # the kernel writes into them
        width = int(pub["n_active"].max())
        msgs = self._message_buffers(1, width)
        public = (pub["lo"], pub["hi"], self.depth, pub["split"], pub["left"], pub["active"],
                  pub["arms"], pub["bins"], pub["n_active"],
                  self.n_nodes.copy())  # a Partition: the user reads the broadcast one only
        no_draws = (_NO_FLOATS, np.zeros(1, np.int64), _NO_FLOATS, _NO_FLOATS,
                    np.zeros(2, np.int64), 1.0, 1.0)
        self._rounds(REPORT, x[:, None], r.reshape(-1, 1, 1), acts[:, None], src, 0, 1, public,
                     no_draws, (msgs["bins"], msgs["U"], msgs["V"]),
                     np.empty((self._n, 1), np.int64))
        mech_u, mech_v = self.mechanisms[src]
        out_u, out_v = mech_u(msgs["U"][0]), mech_v(msgs["V"][0])
        if self._departure_flags & NOISE_IN_BIN:  # NOT private: exact zeros outside the bin
            outside = msgs["bins"][0] != self.bin_of(x)[:, None]
            out_u[outside] = 0.0
            out_v[outside] = 0.0
        return {"bins": msgs["bins"][0], "U": out_u, "V": out_v,
                "source": np.full(self._n, src, np.int64)}

    def _message_buffers(self, rounds: int, width: int) -> dict[str, np.ndarray]:
        k = self.n_arms
        return {"bins": np.full((rounds, self._n, width), -1, np.int64),
                "U": np.zeros((rounds, self._n, width, k)),
                "V": np.zeros((rounds, self._n, width, k))}

    # ------------------------------------------------------------------ server side
    def report_schema(self):
        """``bins`` (N, B) node ids (-1 pads), ``U``, ``V`` (N, B, K) finite, ``source`` (N,)
        the dataset: 0 for the target, m for auxiliary dataset m."""
        n, k = self._n, self.n_arms
        bound = max(m.release_bound() for pair in self.mechanisms for m in pair)
        return {"bins": Part((n, None), "int", -1, self.lo.shape[1] - 1),
                "U": Part((n, None, k), bound=bound), "V": Part((n, None, k), bound=bound),
                "source": Part((n,), "int", 0, len(self.mechanisms) - 1)}

    def _consistent(self, report):
        """The slots are those of the server's active partition in every run, all from one
        source."""
        bins, src = report["bins"], report["source"]
        if bins.shape[1] < int(self.n_active.max()):
            raise ValueError(f"report['bins'] must have B >= {int(self.n_active.max())} slots "
                             f"(the active bins), got {bins.shape[1]}")
        for part in ("U", "V"):
            if report[part].shape[1] != bins.shape[1]:
                raise ValueError(f"report[{part!r}] must have shape {bins.shape + (self.n_arms,)}, "
                                 f"got {report[part].shape}")
        listed = np.arange(bins.shape[1])[None, :] < self.n_active[:, None]
        width = min(bins.shape[1], self.bins.shape[1])
        expected = np.where(listed[:, :width], self.bins[:, :width], -1)
        if not (np.array_equal(bins[:, :width], expected) and (bins[:, width:] == -1).all()):
            raise ValueError("report['bins']: not the server's active partition (padded by -1)")
        if (src != src[0]).any():
            raise ValueError("report['source'] must be the same dataset for every run")

    def _fold(self, report):
        """Server side: add a batch of messages to the active bins' sums, then eliminate and refine.

        The batch holds one message per run, all from one source. The class docstring gives
        the rules."""
        src = report["source"]
        msgs = {k: np.ascontiguousarray(report[k])[None] for k in ("bins", "U", "V")}
        self._kernel(UPDATE, _NO_OBS, _NO_REWARDS, np.full((self._n, 1), -1), int(src[0]), msgs)
        if int(src[0]) == 0:
            self.t += 1

    def _observe(self, obs, actions, rewards, next_obs):
        _check_contexts(obs, self._n, self.dim)
        self._ensure_fed()
        super()._observe(obs, actions, rewards, next_obs)

    # ------------------------------------------------------------------ block path
    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play L rounds drawn ahead: contexts ``obs`` (N, L + 1, d) and every arm's rewards
        (N, L, K); returns the actions (N, L).

        The last context opens the next round. This is the compiled ``FAST`` step of the
        module docstring, with the law of per-user play. The block's messages are not
        materialised: ``last_report`` is left as it was. Rewards
        outside ``[lower, upper]`` cannot be clipped on this path: such a block is played by
        ``act``/``observe`` instead.
        """
        r = _check_block_rewards(rewards, self._n, self.n_arms)
        length = r.shape[1]
        x = _check_contexts(obs, self._n, self.dim, (length + 1,))[:, :length]
        self._ensure_fed()
        if r.size and (r.min() < self.lower or r.max() > self.upper):
            rows = np.arange(self._n)
            out = np.empty((self._n, length), np.int64)
            for s in range(length):
                a = out[:, s] = self._act(x[:, s])
                self._observe(x[:, s], a, r[rows, s, a], x[:, s])
            return out
        actions = self._kernel(CHOOSE | FAST, np.ascontiguousarray(x), r,
                               np.full((self._n, length), -1))
        self.t += length
        return actions

    @property
    def departures(self) -> tuple[str, ...]:
        """The public code's departures this agent runs; read-only.

        They are fixed at construction, as the kernel's flags are."""
        return self._departures

    @property
    def privacy(self) -> Any:
        """epsilon-LDP per user; ``None`` (no guarantee) with ``departures``."""
        return None if self._departure_flags else super().privacy

    def __repr__(self) -> str:
        priv = f"departures={self.departures}, NOT PRIVATE" if self._departure_flags \
            else self.privacy
        return f"{type(self).__name__}(n_arms={self.n_arms}, dim={self.dim}, " \
               f"num_envs={self.num_envs}, {priv})"


def _check_partition(pub: dict[str, np.ndarray], dim: int) -> dict[str, np.ndarray]:
    """A broadcast partition the compiled user side can walk; one ``ValueError`` otherwise.

    From the root, every node is active or split on a coordinate in [0, d) into two children
    ``left, left + 1`` of higher ids, so every walk ends, inside the arrays. The active list
    ``bins`` holds node ids or -1, and ``n_active`` lies within its width."""
    split, left, active = pub["split"], pub["left"], pub["active"]
    nodes = left.shape[1]
    refined = ~active & (left >= 0)
    ids = np.arange(nodes)
    if ((refined & ((left <= ids) | (left >= nodes - 1) | (split < 0) | (split >= dim))).any()
            or not (active[:, 0] | refined[:, 0]).all()):
        raise ValueError("public_state: not a partition (split, left, active)")
    rows, parents = np.nonzero(refined)
    for child in (left[rows, parents], left[rows, parents] + 1):
        if not (active[rows, child] | refined[rows, child]).all():
            raise ValueError("public_state: not a partition (split, left, active)")
    bins, n_active = pub["bins"], pub["n_active"]
    if ((bins < -1) | (bins >= nodes)).any() or ((n_active < 0) | (n_active > bins.shape[1])).any():
        raise ValueError("public_state: bins must be node ids or -1, n_active within its width")
    return pub


#: placeholders of the arrays a kernel step does not read
_NO_OBS = np.zeros((1, 1, 1))
_NO_REWARDS = np.zeros((1, 1, 1))
_NO_FLOATS = np.zeros(0)
_NO_MSGS = {"bins": np.zeros((0, 0, 0), np.int64), "U": np.zeros((0, 0, 0, 0)),
            "V": np.zeros((0, 0, 0, 0))}


# =========================================================================== LDPMAB with auxiliary data


class LDPMABAux(LDPMAB):
    """LDPMAB with auxiliary data: Ma et al. (2025), Alg 3, the jump-start of eq. 24-29.

    Before the first target user, the M auxiliary datasets are fed once, in the given
    order, user by user. They hold logged contexts, arms and rewards under covariate
    shift. Each auxiliary user sends the same slot messages as a target user (eq. 24-25),
    released with its dataset's own budget eps_m, that is noise ``4/eps_m`` per slot. The
    server keeps separate sums and counts per source s = 0 (target), 1..M. After every
    user, auxiliary or target, the server checks every active bin with the
    multi-source estimator (eq. 26) ``r^_k = sum_s lambda_s sum V~_s / sum_s lambda_s
    sum U~_s``, weights (eq. 27) ``lambda_s = min{1, eps_s^2 sum U~_s / N_s(A)}`` when
    ``N_s(A)`` exceeds the warm-up, else 0, and radius (eq. 28)
    ``C sqrt(ln n) sqrt(sum_s lambda_s^2 max{sum U~_s, N_s/eps_s^2}) / sum_s lambda_s
    sum U~_s``. A weight is also 0 for a negative noisy sum, which would make it negative.
    Elimination (eq. 29) and refinement are as in :class:`LDPMAB`, once some source has
    passed the warm-up. Here n is the largest sample size, the horizon or an n_m, for the
    warm-up ``floor(log2 n)^2`` and ``C sqrt(ln n)``. The depth cap is
    ``floor(max_s min{log2(2 n_s (M+1)) d/(2+d), log2(2 n_s eps_s^2 (M+1)) d/(2+2d)})``
    over the target (n_0 = horizon) and the auxiliary datasets.

    **Where the datasets come from.** ``from_env`` reads the datasets' sizes and budgets
    from the env's public ``auxiliary`` specifications and keeps no reference to the env.
    The datasets of each episode come as data, by :meth:`receive_auxiliary`, after the
    env's reset. ``ldp_gym.run`` does it; in a Gymnasium loop, call
    ``agent.receive_auxiliary(env.unwrapped.auxiliary_datasets())``. They are fed at the
    agent's first ``act``, ``observe`` or ``play_block``, once, and not kept. Alternatively
    pass them explicitly: ``auxiliary`` is a per-run list of the M datasets
    ``(X (n_m, d), A (n_m,), Y (n_m,))``, with one entry per run, or a single one without
    ``num_envs``, and ``aux_epsilons`` their budgets. These are kept and fed again after
    every ``reset``. Without either, there is no auxiliary data: the multi-source
    estimator runs over the target alone.

    Paths: feeding runs the compiled ``FAST`` step, which has the law of feeding user by
    user with ``local_report(..., source=m)`` and ``update``. If a reward lies outside
    ``[lower, upper]``, feeding goes user by user instead.

    Privacy: pure epsilon-LDP per target user and eps_m-LDP per user of auxiliary dataset
    m, by the slot messages of :class:`LDPMAB`. Each user's context, action and reward are
    protected together.

    Args:
        auxiliary: explicit datasets, per run, as described above.
        aux_epsilons: their budgets eps_m (> 0), one per dataset.
        aux_sizes: the sizes n_m of datasets to be received by :meth:`receive_auxiliary`,
            one per ``aux_epsilons`` entry; ``from_env`` sets them.
        **kwargs: the others as :class:`LDPMAB`.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import LDPMABAux
        >>> env = gym.make("LDPNonparametricBandit-v0", max_episode_steps=2000,
        ...                auxiliary=[{"n": 3000, "epsilon": 8.0}])
        >>> agent = LDPMABAux.from_env(env, epsilon=1.0, seed=0)
        >>> agent.aux_epsilons, agent.aux_sizes
        ((8.0,), (3000,))
        >>> for part in str(agent.privacy).split("; "):   # one guarantee per data source
        ...     print(part)
        local DP, epsilon=1 per user (context, action and reward)
        auxiliary dataset 1: local DP, epsilon=8 per user (context, action and reward)
        >>> obs, _ = env.reset(seed=0)
        >>> agent.receive_auxiliary(env.unwrapped.auxiliary_datasets())   # this episode's
        >>> a = agent.act(obs)                   # the jump-start: 3000 auxiliary users first
        >>> int(agent.bin_users[0, 0, 1]) > 0, int(agent.t[0])
        (True, 0)
    """

    name = "LDPMAB-aux"
    multi_source = True

    @classmethod
    def _unit_test_params(cls):
        return [dict(cls.test_params), {**cls.test_params, "epsilon": 4.0, "warmup": 3}]

    def _configure_sources(self, kwargs: dict[str, Any]) -> None:
        auxiliary = kwargs.pop("auxiliary", None)
        aux_epsilons = kwargs.pop("aux_epsilons", None)
        aux_sizes = kwargs.pop("aux_sizes", None)
        n_runs = kwargs.get("num_envs") or 1
        self._aux_data: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] | None = None
        if auxiliary is not None and aux_sizes is not None:
            raise ValueError("auxiliary: give the datasets or their sizes (aux_sizes), not both")
        if auxiliary is None and aux_sizes is None:
            if aux_epsilons:
                raise ValueError("aux_epsilons: given without auxiliary datasets")
            self.aux_epsilons, self.aux_sizes = (), ()
            return
        if aux_epsilons is None or isinstance(aux_epsilons, (str, bytes)) \
                or not isinstance(aux_epsilons, Sequence):
            raise ValueError("aux_epsilons: a sequence of budgets, one per auxiliary dataset, is "
                             "required with auxiliary datasets")
        self.aux_epsilons = tuple(check_real(f"aux_epsilons[{m}]", e, low=MIN_EPSILON,
                                             low_open=False)
                                  for m, e in enumerate(aux_epsilons))
        if aux_sizes is not None:
            if isinstance(aux_sizes, (str, bytes)) or not isinstance(aux_sizes, Sequence) \
                    or len(aux_sizes) != len(self.aux_epsilons):
                raise ValueError(f"aux_sizes: one size per aux_epsilons entry "
                                 f"({len(self.aux_epsilons)}), got {aux_sizes!r}")
            self.aux_sizes = tuple(check_int(f"aux_sizes[{m}]", n) for m, n in enumerate(aux_sizes))
            return
        self._aux_data = self._check_datasets(auxiliary, n_runs)
        self.aux_sizes = tuple(int(x.shape[0]) for x, _, _ in self._aux_data[0])

    def __init__(self, n_arms: int, *, epsilon: float, auxiliary: Any = None,
                 aux_epsilons: Any = None, aux_sizes: Any = None, **kwargs: Any):
        super().__init__(n_arms, epsilon=epsilon, auxiliary=auxiliary, aux_epsilons=aux_epsilons,
                         aux_sizes=aux_sizes, **kwargs)

    def _init_state(self, n: int) -> None:
        super()._init_state(n)
        #: this episode's auxiliary datasets, received and not yet fed
        self._received: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] | None = None

    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        """:class:`LDPMAB`'s, and the auxiliary datasets' public specifications.

        These are their sizes and budgets; the datasets themselves come by
        :meth:`receive_auxiliary`."""
        params = super().env_params(env, is_vec)
        specs = env.unwrapped.setting["auxiliary"]
        params["aux_epsilons"] = [s["epsilon"] for s in specs]
        params["aux_sizes"] = [s["n"] for s in specs] if specs else None
        return params

    @property
    def privacy(self) -> Any:
        """epsilon-LDP per target user, and in ``sources`` eps_m-LDP per user of auxiliary
        dataset m; ``None`` with ``departures``. m is 1-based, as the paper's m."""
        target = super().privacy
        if target is None or not self.aux_epsilons:
            return target
        return dataclasses.replace(target, sources=tuple(
            (f"auxiliary dataset {m + 1}", Privacy("local", e, 0.0, target.unit,
                                                   secure=target.secure))
            for m, e in enumerate(self.aux_epsilons)))

    @classmethod
    def from_env(cls, env: Any, **kwargs: Any) -> Agent:
        """As :meth:`Agent.from_env`, with the auxiliary datasets' sizes and budgets from the
        env's specifications, unless the datasets are given (``auxiliary``)."""
        if kwargs.get("auxiliary") is not None:
            kwargs.setdefault("aux_sizes", None)
        return super().from_env(env, **kwargs)

    def receive_auxiliary(self, datasets: Any) -> None:
        """Receive this episode's auxiliary datasets, as data, before the first target user.

        ``datasets`` is a per-run list of the M datasets ``(X (n_m, d), A (n_m,), Y (n_m,))``
        of the declared sizes ``aux_sizes``, with one entry per run, or a single one without
        ``num_envs``. They are fed at the next ``act``, ``observe`` or ``play_block`` and not
        kept. ``ldp_gym.run`` calls it after every reset of the env. In a Gymnasium loop,
        call it with ``env.unwrapped.auxiliary_datasets()`` after ``env.reset``; from the
        second episode on, also after ``agent.reset()``.

        Raises:
            ValueError: datasets of other shapes or sizes, or the target users have begun.
        """
        if self._fed and self.aux_sizes:
            raise ValueError("auxiliary: this agent has fed its datasets already; at a new "
                             "episode call agent.reset(), then receive_auxiliary")
        data = self._check_datasets(datasets, self._n)
        sizes = tuple(int(x.shape[0]) for x, _, _ in data[0])
        if sizes != self.aux_sizes:
            raise ValueError(f"auxiliary: datasets of sizes {self.aux_sizes} declared, got {sizes}")
        self._received = data

    def _check_datasets(self, auxiliary: Any,
                        n_runs: int) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """Validate per-run datasets: the same M datasets (sizes) in every run, each
        ``(X (n_m, d) in [0, 1]^d, A (n_m,) arms, Y (n_m,) finite)``."""
        d, k, m_sets = self.dim, self._k, len(self.aux_epsilons)
        if isinstance(auxiliary, (str, bytes)) or not isinstance(auxiliary, Sequence) \
                or len(auxiliary) != n_runs:
            raise ValueError(f"auxiliary must be a per-run list of {n_runs} entries (one per run), "
                             f"each a list of datasets (X, A, Y)")
        out, sizes = [], None
        for i, sets in enumerate(auxiliary):
            if isinstance(sets, (str, bytes)) or not isinstance(sets, Sequence) \
                    or len(sets) != m_sets:
                raise ValueError(f"auxiliary[{i}] must be a list of {m_sets} datasets (X, A, Y), "
                                 f"one per aux_epsilons entry")
            run = []
            for m, data in enumerate(sets):
                where = f"auxiliary[{i}][{m}]"
                if not isinstance(data, Sequence) or len(data) != 3:
                    raise ValueError(f"{where} must be a dataset (X, A, Y)")
                x = check_finite(data[0], f"{where} X").astype(np.float64)
                a = np.asarray(data[1])
                y = check_finite(data[2], f"{where} Y").astype(np.float64)
                if x.ndim != 2 or x.shape[1] != d:
                    raise ValueError(f"{where}: X must have shape (n_m, d={d}), got {x.shape}")
                size = x.shape[0]
                if size < 1 or a.shape != (size,) or y.shape != (size,):
                    raise ValueError(f"{where}: X (n_m, d), A (n_m,) and Y (n_m,) must have the "
                                     f"same n_m >= 1, got {x.shape}, {a.shape}, {y.shape}")
                if x.min() < 0.0 or x.max() > 1.0:
                    raise ValueError(f"{where}: X must lie in [0, 1]^d")
                if a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= k:
                    raise ValueError(f"{where}: A must hold arms in {{0, ..., {k - 1}}}")
                run.append((np.ascontiguousarray(x), a.astype(np.int64), y))
            these = [x.shape[0] for x, _, _ in run]
            if sizes is not None and these != sizes:
                raise ValueError(f"auxiliary[{i}]: every run needs datasets of the same sizes "
                                 f"{sizes}, got {these}")
            sizes = these
            out.append(run)
        return out

    def _ensure_fed(self) -> None:
        if self._fed:
            return
        data = self._aux_data if self._aux_data is not None else self._received
        if data is None:
            raise RuntimeError(f"{self.name} needs this episode's auxiliary datasets before its "
                               f"first round: call receive_auxiliary("
                               f"env.unwrapped.auxiliary_datasets()) after env.reset")
        self._received = None
        self._fed = True
        for m in range(len(self.aux_epsilons)):
            self.feed(m + 1, np.stack([run[m][0] for run in data]),
                      np.stack([run[m][1] for run in data]), np.stack([run[m][2] for run in data]))

    def feed(self, source: int, X: np.ndarray, A: np.ndarray, Y: np.ndarray,
             per_user: bool = False) -> None:
        """Feed one auxiliary dataset (source m >= 1) of every run: contexts X (N, n_m, d),
        logged arms A (N, n_m), rewards Y (N, n_m). Compiled (``FAST``), or ``per_user``:
        ``local_report(..., source=m)`` then ``update``, user by user. The per-user path is
        also taken when a reward lies outside ``[lower, upper]``."""
        src = check_int("source", source)
        if src >= len(self.mechanisms):
            raise ValueError(f"source must be < {len(self.mechanisms)}, got {src}")
        x = _check_contexts(X, self._n, self.dim, (np.shape(X)[1],) if np.ndim(X) == 3 else ())
        a = np.ascontiguousarray(A, np.int64)
        y = np.ascontiguousarray(check_finite(Y, "Y"), np.float64)
        length = x.shape[1]
        if a.shape != (self._n, length) or y.shape != (self._n, length):
            raise ValueError(f"A and Y must have shape (N, n_m) = {(self._n, length)}")
        if per_user or (y.size and (y.min() < self.lower or y.max() > self.upper)):
            for j in range(length):
                report = self.local_report(x[:, j], a[:, j], y[:, j], x[:, j],
                                           self.public_state(), source=src)
                self.update(report)
            return
        self._kernel(FAST, x, y[..., None], a, src)
        self._noise[src] = (DrawnAhead(CHUNK), DrawnAhead(CHUNK))  # a dataset is fed once


# =========================================================================== ABSE


class ABSE(Agent):
    """ABSE: adaptively binned successive elimination (Perchet and Rigollet 2013, section 5).

    Bins are hypercubes of [0, 1]^d. A bin B of side |B| runs successive elimination on its
    active arms I_B, as in their section 3. The user whose context falls in B pulls the
    active arm with the fewest pulls in B, by round robin. After each round tau, when every
    active arm has been pulled tau times in B, arm i is eliminated if
    ``max_j Ybar_j(tau) - Ybar_i(tau) > U(tau, T |B|^d)`` with
    ``U(tau, m) = 2 sqrt(2 max(1, log(m/tau)) / tau)``. Here T |B|^d is the bin's share of
    the horizon under a bounded density. Once ``tau >= l_B = ceil(c |B|^-2
    max(1, log(T |B|^(d+2))))`` with two or more arms left, B is replaced by its 2^d
    half-side hypercubes, which inherit I_B with fresh statistics. Bins are not split
    below side ``2^-max_depth``, with ``max_depth = floor(log2(T) / (d + 2))`` by default:
    the bin width ``T^(-1/(d+2))`` of their binned policy, up to logs. ``c``, the
    ``split_constant`` (default 1), scales the rounds before a split. Rewards enter the
    statistics as observed; an arm given to ``observe`` that is not active in the bin is
    ignored.

    Privacy: none. ABSE is the non-private reference of Ma et al. 2025's experiments.

    Example:
        >>> import gymnasium as gym
        >>> import ldp_gym
        >>> from ldp_gym.agents import ABSE
        >>> env = gym.make("LDPNonparametricBandit-v0", max_episode_steps=1000)
        >>> agent = ABSE.from_env(env, seed=0)
        >>> obs, _ = env.reset(seed=0)
        >>> [agent.act(obs) for _ in range(2)]      # round robin: arm 0 until it is pulled
        [0, 0]
        >>> agent.observe(obs, 0, 1.0, obs)
        >>> agent.act(obs), agent.max_depth
        (1, 2)
    """

    name = "ABSE"
    needs_horizon = True
    test_env = "LDPNonparametricBandit-v0"
    test_params = {}
    block_play = BlockPlay.PLAYS_BLOCKS

    @classmethod
    def _unit_test_params(cls):
        return [{}, {"split_constant": 0.05, "max_depth": 3}]

    def __init__(self, n_arms: int, *, dim: int = 2, split_constant: float = 1.0,
                 max_depth: int | None = None, **kwargs: Any):
        check_int("n_arms", n_arms)
        self.dim = check_int("dim", dim)
        self.split_constant = check_real("split_constant", split_constant, low=0.0)
        self._max_depth = None if max_depth is None else check_int("max_depth", max_depth, low=0)
        super().__init__(n_arms, **kwargs)

    @override
    @classmethod
    def env_params(cls, env: Any, is_vec: bool) -> dict[str, Any]:
        return _partition_env_params(cls, env)

    #: the node arrays (axis 1: nodes; grown as bins are split)
    NODE_ARRAYS = ("lo", "side", "depth", "child", "active", "arms", "pulls", "sums", "rounds")

    def _init_state(self, n):
        d, k = self.dim, self.n_arms
        self.max_depth = self._max_depth if self._max_depth is not None \
            else int(math.floor(math.log2(self.horizon) / (d + 2)))
        cap = 1 + (1 << d)
        #: lower corner (N, nodes, d) and side of every hypercube; depth, first child (N, nodes)
        self.lo, self.side = np.zeros((n, cap, d)), np.ones((n, cap))
        self.depth = np.zeros((n, cap), np.int64)
        self.child = np.full((n, cap), -1, np.int64)
        #: in the partition; active arms, pulls and reward sums in the bin (N, nodes, K)
        self.active = np.zeros((n, cap), np.bool_)
        self.arms = np.zeros((n, cap, k), np.bool_)
        self.pulls = np.zeros((n, cap, k), np.int64)
        self.sums = np.zeros((n, cap, k))
        #: completed rounds of successive elimination in the bin
        self.rounds = np.zeros((n, cap), np.int64)
        self.active[:, 0] = True
        self.arms[:, 0] = True
        self.n_nodes = np.ones(n, np.int64)

    def _kernel(self, mode: int, obs: np.ndarray, rewards: np.ndarray,
                forced: np.ndarray) -> np.ndarray:
        n, length = forced.shape
        actions = np.empty((n, length), np.int64)
        step = 0
        assert self.horizon is not None  # needs_horizon
        while step < length:
            need = int(self.n_nodes.max()) + (1 << self.dim)
            if need > self.lo.shape[1]:
                _grow(self, self.NODE_ARRAYS, need, need * 2)
            cubes = (self.lo, self.side, self.depth, self.child, self.active, self.arms,
                     self.pulls, self.sums, self.rounds, self.n_nodes)  # a Cubes, plain
            step = abse_rounds(mode, obs, rewards, forced, step, length, float(self.horizon),
                               self.split_constant, self.max_depth, cubes, actions)
        return actions

    def _act(self, obs):
        x = _check_contexts(obs, self._n, self.dim)
        return self._kernel(CHOOSE, x[:, None], _NO_REWARDS, np.full((self._n, 1), -1))[:, 0]

    def _observe(self, obs, actions, rewards, next_obs):
        x = _check_contexts(obs, self._n, self.dim)
        self._kernel(UPDATE, x[:, None], rewards.reshape(-1, 1, 1).astype(np.float64),
                     np.asarray(actions, np.int64).reshape(-1, 1))

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play L rounds drawn ahead: contexts (N, L + 1, d) and every arm's rewards (N, L, K).

        It runs the same kernel as ``act``/``observe``, so bitwise the same actions and state."""
        r = _check_block_rewards(rewards, self._n, self.n_arms)
        length = r.shape[1]
        x = _check_contexts(obs, self._n, self.dim, (length + 1,))[:, :length]
        return self._kernel(CHOOSE | UPDATE, np.ascontiguousarray(x), r,
                            np.full((self._n, length), -1))


# =========================================================================== uniform


class UniformRandom(Agent):
    """The uniform-random policy: every arm with probability 1/K, whatever it observes.

    The floor of every comparison; Ma et al. 2025 draw it on their regret plots. An
    arm is ``floor(K u)`` for a uniform u of the decision stream, so ``act`` and
    ``play_block`` give bitwise the same arms from the same seed.

    Privacy: none needed, as nothing is learned from the users.

    Example:
        >>> from ldp_gym.agents import UniformRandom
        >>> agent = UniformRandom(4, num_envs=3, seed=0)
        >>> agent.act([[0.0]] * 3).shape
        (3,)
    """

    name = "Uniform"
    block_play = BlockPlay.PLAYS_BLOCKS

    def _init_state(self, n):
        self.t = np.zeros(n, np.int64)

    def _act(self, obs):
        return np.minimum((self.rng.random(self._n) * self.n_arms).astype(np.int64),
                          self.n_arms - 1)

    def _observe(self, obs, actions, rewards, next_obs):
        self.t += 1

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Arms (N, L) for L rounds drawn ahead, with the rounds' uniforms in the order of ``act``."""
        r = check_finite(rewards, "rewards")
        if r.ndim != 3 or r.shape[0] != self._n:
            raise ValueError(f"rewards must have shape (N={self._n}, L, K), got {r.shape}")
        length = r.shape[1]
        u = self.rng.random((length, self._n))
        self.t += length
        return np.minimum((u * self.n_arms).astype(np.int64), self.n_arms - 1).T.copy()


#: The nonparametric agents by display name (the contract suite and the CLI read this).
AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (LDPMAB, LDPMABAux, ABSE, UniformRandom)}
