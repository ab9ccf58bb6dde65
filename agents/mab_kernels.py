"""Compiled decision rules of the stochastic multi-armed bandit agents.

Each rule is written once here, on one run's arrays, and every path runs it.
``act`` plays one round and only chooses; ``observe`` plays one round and only updates.
``play_block`` is the runner's block path: it draws L rounds ahead, then chooses and
updates in turn. The kernels draw from the agent's own ``numpy.random.Generator``, and
numba draws exactly numpy's numbers from it. They draw in the order of per-round play:
in each round, every run's choice, then every run's update. So the per-round
and the block path give bitwise the same actions and state from the same seed.

Rules (``kind``):

* :data:`UCB1` (Auer et al. 2002): ``mean + sqrt(2 ln t / n)``;
* :data:`KL_UCB` (Garivier and Cappe 2011): ``max{q : kl(mean, q) <= (ln t + c ln ln t)/n}``
  for Bernoulli kl, by Newton's method in :func:`kl_ucb`. The other arms' indices are bounded
  by cached values (valid for t/1024 more rounds), so most rounds compute no Newton step: the
  most pulled arm wins for sure by one kl value (:func:`_kl_ucb_sure`), bitwise the choice of
  the full scan;
* :data:`THOMPSON` (Agrawal and Goyal 2012): the arm of the largest Beta(1 + successes,
  1 + failures) draw. The reward r in [0, 1] is a success with probability r, as in their
  binarisation (one uniform only for 0 < r < 1). The most pulled arm is drawn first; another
  arm is drawn only when one uniform says it passes a threshold below that draw
  (:func:`_thompson`): the same law of the choice, about one Beta draw per round;
* :data:`EXP3` (Auer et al. 2002; Bubeck and Cesa-Bianchi 2012, Thm 3.1) and
  :data:`TSALLIS_INF` (Zimmert and Seldin 2021, Alg 1, alpha = 1/2): a distribution over the
  arms from the importance-weighted loss estimates ``L[a] += (1 - r)/p[a]``. It is sampled
  with one uniform, in :func:`adversarial_rounds`;
* :data:`LDP_UCB` (Chen et al. 2020, Alg 1 with one base arm): ``min(mu~ + width/sqrt(n),
  cap)`` on noisy sums. The kernel builds the round's user report too: the reward clipped,
  snapped to the Laplace mechanism's grid, plus its next noise value;
* :data:`DP_UCB` (Mishra and Thakurta 2015, as Azize and Basu run it):
  ``S~/n + sqrt(c1/n) + c2/n`` on each arm's binary-tree noisy sum S~. The kernel adds the
  clipped reward to the pulled arm's tree with the tree mechanism's own code,
  :func:`~ldp_gym.wrappers.mechanisms.continual.tree_add`, and its next noise value.

The batched eliminations without a trusted learner, Shuffle-SE and Dist-DP-SE, run
:func:`elimination_rounds`: the public schedule, and each user's message (:data:`SHUFFLE_BITS`:
the privacy blanket's bit; :data:`SECAGG_SHARES`: the rounded reward plus two Polya shares).
It stops after each round in which epochs ended, for the agent's analyser to eliminate and
plan in Python, and resumes with the next round. Each user's message is a function of three
uniforms, taken from the users' stream (the OS CSPRNG in secure mode); the survivor's rounds
take none.

The index rules are all but Exp3 and Tsallis-INF. They share one round loop, :func:`_rounds`,
and take their constants as one array ``params``. KL-UCB's is ``c``. LDP-UCB's are
``width, cap, lower, upper, grid``: the mechanism's bounds and grid. DP-UCB's are
``c1, c2, lower, upper, grid, horizon``: the tree's bounds, grid and length.

An arm not yet pulled has index +inf. Ties are broken uniformly at random:
one uniform is drawn when the best index is shared, none otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, vectorize

from ldp_gym.envs.mab import d_epsilon_value
from ldp_gym.wrappers.mechanisms.compiled import blanket_bit, secagg_message, snap_add, unit_uniform
from ldp_gym.wrappers.mechanisms.continual import tree_add

__all__ = ["CHOOSE", "DP_UCB", "EXP3", "KL_UCB", "LDP_UCB", "PLAY", "ROUNDS", "SECAGG_SHARES",
           "SHUFFLE_BITS", "THOMPSON", "TSALLIS_INF", "UCB1", "UPDATE", "WORDS_GUARD", "adversarial_rounds",
           "binomial_below", "choose", "distributions", "dp_klucb_index", "elimination_rounds",
           "dp_ucb_rounds", "index_values", "kl_ucb", "kl_ucb_index", "kl_ucb_rounds",
           "ldp_ucb_rounds", "thompson_rounds", "ucb1_rounds"]

#: steps of a kernel call (bit flags), as in :mod:`ldp_gym.agents.glm_kernels`
CHOOSE, UPDATE = 1, 2
PLAY = CHOOSE | UPDATE
#: the decision rules
UCB1, KL_UCB, THOMPSON, EXP3, TSALLIS_INF, LDP_UCB, DP_UCB = 0, 1, 2, 3, 4, 5, 6
#: the users' messages of the batched eliminations
SHUFFLE_BITS, SECAGG_SHARES = 0, 1

_JIT: dict[str, Any] = {"cache": True, "nogil": True, "error_model": "numpy"}
_INLINE: dict[str, Any] = {**_JIT, "inline": "always"}


@njit(**_INLINE)
def _xlogx(x):  # pragma: no cover - compiled
    return x * math.log(x) if x > 0.0 else 0.0


@njit(**_JIT)
def kl_ucb(p, level):  # pragma: no cover - compiled
    """``max{q in [p, 1] : kl(p, q) <= level}`` for Bernoulli kl.

    Newton's method in ``u = -log(1 - q)``, where ``kl(p, q(u))`` is convex and increasing
    for ``q >= p``. Started on the right of the root, at the Pinsker bound
    ``q = p + sqrt(level/2)``, the iterates decrease monotonically to it. 10 steps agree
    with a 100-step bisection to 1e-12 over p in [0, 1] and levels in [1e-8, 300].
    """
    p = min(max(p, 0.0), 1.0)
    if p >= 1.0:
        return 1.0
    level = max(level, 0.0)
    neg_entropy = _xlogx(p) + _xlogx(1.0 - p)
    u_p = -math.log1p(-min(p, 1.0 - 1e-15))  # the minimum of kl(p, .)
    u = -math.log1p(-min(p + math.sqrt(level / 2.0), 1.0 - 1e-15))
    for _ in range(10):  # stopped once u no longer moves: the 10 steps' result, sooner
        q = -math.expm1(-u)
        kl = neg_entropy - (p * math.log(q) if p > 0.0 else 0.0) + (1.0 - p) * u
        if not kl > level:
            break
        slope = (1.0 - p) - p / max(math.expm1(u), 1e-300)
        step = max(u - (kl - level) / max(slope, 1e-300), u_p)
        if step == u:
            break
        u = step
    return max(-math.expm1(-u), p)


@njit(**_INLINE)
def _below(p, level, best):  # pragma: no cover - compiled
    """Whether ``kl_ucb(p, level) < best`` is sure without computing it.

    It is sure when ``kl(p, best) > level`` for ``p < best``, since kl(p, .) increases on
    [p, 1]. This costs one logarithm instead of Newton's steps. The test keeps a relative
    margin of 1e-9, because Newton's result lies a hair right of the root. So an arm whose
    exact index equals the best is never ruled out, and the tie is broken uniformly. Such an
    exact tie arises, for example, between two arms with the same pulls and sums.
    """
    if not p < best:
        return False
    if best >= 1.0:
        return True
    kl = (p * math.log(p / best) if p > 0.0 else 0.0) + (1.0 - p) * math.log((1.0 - p) / (1.0 - best))
    return kl > level * (1.0 + 1e-9)


@vectorize(["float64(float64, float64)"], cache=True)
def kl_ucb_index(p, level):  # pragma: no cover - compiled
    """:func:`kl_ucb` as a numpy ufunc, which broadcasts over arrays."""
    return kl_ucb(p, level)


@vectorize(["float64(float64, float64, float64)"], cache=True)
def dp_klucb_index(x, level, epsilon):  # pragma: no cover - compiled
    """DP-KLUCB's index ``max{mu in [x, 1] : d_eps(x, mu) <= level}`` (Azize et al. 2025).

    It is exactly 1 when ``d_eps(x, 1) = eps (1 - x) <= level``. Otherwise it is found by 60
    bisection steps on ``[x, 1]``, where ``d_eps(x, .)`` is nondecreasing
    (:func:`~ldp_gym.envs.mab.d_epsilon_value`). The result is the lower end of the last
    bracket, so it never leaves the set. A numpy ufunc: it broadcasts over arrays.

    Example:
        >>> from ldp_gym.agents.mab_kernels import dp_klucb_index
        >>> dp_klucb_index([0.5, 0.5], [0.01, 1.0], 0.5).round(4).tolist()
        [0.5704, 1.0]
    """
    if epsilon * (1.0 - x) <= level:
        return 1.0
    lo, hi = x, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if d_epsilon_value(x, mid, epsilon) <= level:
            lo = mid
        else:
            hi = mid
    return lo


@njit(**_INLINE)
def _width(kind, params, t):  # pragma: no cover - compiled
    """The numerator of the exploration term at round t.

    It is UCB1's ``2 ln t``, KL-UCB's level ``ln t + c ln ln t`` and LDP-UCB's constant
    width. DP-UCB has none, as its terms are constants.
    """
    if kind == LDP_UCB or kind == DP_UCB:
        return params[0]
    log_t = math.log(max(t, 1))
    if kind == UCB1:
        return 2.0 * log_t
    return log_t + params[0] * math.log(max(log_t, 1.0)) if params[0] != 0.0 else log_t


@njit(**_INLINE)
def _index(kind, params, n, total, width):  # pragma: no cover - compiled
    """The index of an arm pulled ``n >= 1`` times with reward sum ``total``.

    ``width`` is :func:`_width` of the round.
    """
    if kind == UCB1:
        return total / n + math.sqrt(width / n)
    if kind == LDP_UCB:
        return min(total / n + width / math.sqrt(n), params[1])
    if kind == DP_UCB:
        return total / n + math.sqrt(params[0] / n) + params[1] / n
    return kl_ucb(total / n, width / n)


#: KL-UCB's cached index bound of an arm is valid for t >> SLACK_SHIFT + SLACK_ROUNDS more
#: rounds (t/1024 + 16): tighter than the change of one pull, and rarely recomputed
SLACK_SHIFT, SLACK_ROUNDS = 10, 16
#: the gap by which the leader's index must beat every other arm's cached bound
SURE_MARGIN = 1e-7
#: Thompson's threshold lies this many posterior standard deviations below the leader's mean
THRESHOLD_SDS = 6.0
#: Thompson draws an arm's Beta directly when its chance to pass the threshold is above this,
#: or its binomial terms shrink slower than RATIO_DIRECT per step
TAIL_DIRECT, RATIO_DIRECT = 0.25, 0.95


@njit(**_INLINE)
def _leader(r, counts):  # pragma: no cover - compiled
    """Run r's most pulled arm (the first of them)."""
    leader = 0
    for k in range(1, counts.shape[1]):
        if counts[r, k] > counts[r, leader]:
            leader = k
    return leader


@njit(**_INLINE)
def _kl_ucb_sure(params, r, counts, sums, t, cache):  # pragma: no cover - compiled
    """KL-UCB's arm when it is sure without Newton's steps for the round; -1 otherwise.

    An arm's index increases with the round while its pulls and sums stay, so the index
    computed at a later round ``until`` bounds it until then. ``cache[r, k]`` keeps
    ``(bound, pulls, sum, until)`` and is recomputed when the arm's pulls or sum changed or
    ``until`` passed.
    The most pulled arm (the leader) wins for sure when its index exceeds every other arm's
    bound by :data:`SURE_MARGIN`. That is one kl value, ``kl(mean, bound + margin) <= level``,
    instead of Newton's steps; ``kl_ucb``'s results are within 1e-9 of the root, far inside
    the margin. Then no other arm is in the tie either, so the choice is bitwise the full
    scan's. Unpulled arms, or an arm too close to the leader, fall back to that scan.
    """
    leader = _leader(r, counts)
    top = -np.inf
    for k in range(counts.shape[1]):
        n = counts[r, k]
        if n == 0:
            return -1
        if k == leader:
            continue
        if cache[r, k, 1] != n or cache[r, k, 2] != sums[r, k] or t[r] > cache[r, k, 3]:
            until = t[r] + (t[r] >> SLACK_SHIFT) + SLACK_ROUNDS
            cache[r, k, 0] = kl_ucb(sums[r, k] / n, _width(KL_UCB, params, until) / n)
            cache[r, k, 1], cache[r, k, 2], cache[r, k, 3] = n, sums[r, k], until
        top = max(top, cache[r, k, 0])
    x = top + SURE_MARGIN
    p = min(max(sums[r, leader] / counts[r, leader], 0.0), 1.0)
    if p >= x:
        return leader
    if x >= 1.0:
        return -1
    level = _width(KL_UCB, params, t[r]) / counts[r, leader]
    kl = (p * math.log(p / x) if p > 0.0 else 0.0) + (1.0 - p) * math.log((1.0 - p) / (1.0 - x))
    return leader if kl <= level * (1.0 - 1e-9) else -1


@njit(**_INLINE)
def binomial_below(s, n, x, target):  # pragma: no cover - compiled
    """``P(B <= s)`` for B ~ Binomial(n, x), summed from j = s down; or where it passes ``target``.

    Returns ``(sum, j)``: the sum of the pmf from s down to j, stopped at the first j where
    the sum exceeds ``target``, or when the terms no longer count (below 1e-17 of the sum).
    With ``target = inf`` the sum is the probability. With a uniform ``w`` below it, j is a
    draw of B given ``B <= s`` (inversion, the same additions in the same order). The first
    term comes from ``lgamma``: relative error about 1e-16 n log n, 2e-8 at n = 1e7.
    """
    term = math.exp(math.lgamma(n + 1.0) - math.lgamma(s + 1.0) - math.lgamma(n - s + 1.0)
                    + s * math.log(x) + (n - s) * math.log1p(-x))
    odds = (1.0 - x) / x
    total, j = 0.0, s
    while True:
        total += term
        if total > target or j == 0 or not term > 1e-17 * total:  # (an underflow: at once)
            return total, j
        term *= j / (n - j + 1.0) * odds
        j -= 1.0


@njit(**_INLINE)
def _thompson(r, counts, successes, cache, rng, values):  # pragma: no cover - compiled
    """Thompson's arm for run r: exactly the arm of the largest Beta draw, most arms undrawn.

    With Beta(1 + s, 1 + f) and n = s + f + 1, a draw is the (s + 1)-th smallest of n
    uniforms. So it exceeds a threshold x iff B <= s, for B ~ Binomial(n, x) the uniforms
    below x; and given B = j it is ``x + (1 - x) Beta(1 + s - j, 1 + f)``. The kernel draws
    the most pulled arm's Beta first. When it is at least the run's threshold x
    (:data:`THRESHOLD_SDS` below that arm's posterior mean, renewed as its pulls grow by an
    eighth), every other arm passes x with probability ``tail = P(B <= s)``: one uniform
    ``w`` decides, and only if ``w < tail`` is j drawn by inversion of ``w`` and the arm's
    draw made. Otherwise its draw lies below x, and below the leader's. So the argmax has
    exactly the law of Thompson's (up to the tails' rounding, :func:`binomial_below`). Arms
    likely to pass (``tail >`` :data:`TAIL_DIRECT`) and every arm when the leader's draw
    falls below x draw their Beta directly. ``cache[r, k]`` keeps ``(tail, pulls, successes,
    x)`` (tail 2 for a direct draw) and ``cache[r, K]`` ``(x, leader, leader's pulls)``; any x
    gives the law, so only the tails must match the arms' current posteriors.
    """
    k_arms = counts.shape[1]
    leader = _leader(r, counts)
    run = cache[r, k_arms]
    if run[1] != leader or counts[r, leader] > 1.125 * run[2] + 8.0:
        a = 1.0 + successes[r, leader]
        b = 1.0 + counts[r, leader] - successes[r, leader]
        run[0] = (a - THRESHOLD_SDS * math.sqrt(a * b / (a + b + 1.0))) / (a + b)
        run[1], run[2] = leader, counts[r, leader]
    x = run[0]
    best = rng.beta(1.0 + successes[r, leader], 1.0 + counts[r, leader] - successes[r, leader])
    values[leader] = best
    sure = x > 0.0 and best >= x
    ties, arm = 1, leader
    for k in range(k_arms):
        if k == leader:
            continue
        s, f = successes[r, k], counts[r, k] - successes[r, k]
        tail = 2.0
        if sure:
            if cache[r, k, 1] != counts[r, k] or cache[r, k, 2] != s or cache[r, k, 3] != x:
                cache[r, k, 0] = _pass_chance(s, f, x)
                cache[r, k, 1], cache[r, k, 2], cache[r, k, 3] = counts[r, k], s, x
            tail = cache[r, k, 0]
        if tail > 1.0:
            v = rng.beta(1.0 + s, 1.0 + f)
        else:
            w = rng.random()
            v = -np.inf
            if w < tail:
                j = binomial_below(s, s + f + 1.0, x, w)[1]
                v = x + (1.0 - x) * rng.beta(1.0 + s - j, 1.0 + f)
        best, ties, arm = _tally(values, k, v, best, ties, arm)
    return _tie_break(values, best, ties, arm, rng)


@njit(**_INLINE)
def _pass_chance(s, f, x):  # pragma: no cover - compiled
    """``P(Beta(1 + s, 1 + f) > x)``, or 2 (draw directly) when it is large or slow to sum."""
    n = s + f + 1.0
    if s * (1.0 - x) >= RATIO_DIRECT * (n - s + 1.0) * x:
        return 2.0
    tail = binomial_below(s, n, x, np.inf)[0]
    return tail if tail <= TAIL_DIRECT else 2.0


@njit(**_INLINE)
def choose(kind, params, r, counts, sums, successes, t, rng, values,
           cache):  # pragma: no cover - compiled
    """Run r's arm: the one with the largest index, or Thompson's largest draw.

    Ties are broken uniformly by one draw; without ties nothing is drawn. ``values`` is
    scratch of length K. ``cache`` is KL-UCB's and Thompson's (N, K + 1, 4) cache
    (:func:`_kl_ucb_sure`, :func:`_thompson`); empty for the other rules.
    """
    if kind == THOMPSON:
        return _thompson(r, counts, successes, cache, rng, values)
    if kind == KL_UCB and cache.shape[0]:
        sure = _kl_ucb_sure(params, r, counts, sums, t, cache)
        return sure if sure >= 0 else _kl_ucb_scan(params, r, counts, sums, t, rng, values)
    return _scan(kind, params, r, counts, sums, t, rng, values)


@njit(**_JIT)
def _kl_ucb_scan(params, r, counts, sums, t, rng, values):  # pragma: no cover - compiled
    """:func:`_scan` of KL-UCB, compiled apart: it runs only when the leader is not sure."""
    return _scan(KL_UCB, params, r, counts, sums, t, rng, values)


@njit(**_INLINE)
def _scan(kind, params, r, counts, sums, t, rng, values):  # pragma: no cover - compiled
    """The index rules' choice from every arm's index (KL-UCB: Newton's steps only for arms
    that may beat the best so far)."""
    width = _width(kind, params, t[r])
    best, ties, arm = -np.inf, 0, 0
    for k in range(counts.shape[1]):
        if counts[r, k] == 0:
            v = np.inf
        elif kind == KL_UCB and _below(sums[r, k] / counts[r, k], width / counts[r, k], best):
            v = -np.inf  # cannot beat the best so far (its index need not be computed)
        else:
            v = _index(kind, params, counts[r, k], sums[r, k], width)
        best, ties, arm = _tally(values, k, v, best, ties, arm)
    return _tie_break(values, best, ties, arm, rng)


@njit(**_INLINE)
def _tally(values, k, v, best, ties, arm):  # pragma: no cover - compiled
    """Arm k's value ``v`` kept in ``values``; returns the best value so far, how many arms
    share it, and the first of them."""
    values[k] = v
    if v > best:
        return v, 1, k
    return best, ties + 1 if v == best else ties, arm


@njit(**_INLINE)
def _tie_break(values, best, ties, arm, rng):  # pragma: no cover - compiled
    """``arm``, or one of the ``ties`` arms drawn uniformly by one uniform if there are several.

    ``arm`` is the first of the ``ties`` arms whose value is ``best``.
    """
    if ties > 1:
        j = int(rng.random() * ties)
        for k in range(values.shape[0]):
            if values[k] == best:
                if j == 0:
                    return k
                j -= 1
    return arm


@njit(**_INLINE)
def _update(kind, params, r, arm, reward, noise, counts, sums, successes, tree, t,
            rng):  # pragma: no cover
    """Run r's statistics after ``reward`` of ``arm``.

    Thompson counts a Bernoulli(r) success. With LDP-UCB the server adds the user's report:
    the reward clipped and snapped to the mechanism's grid, plus the ``noise`` value of this
    report. With DP-UCB the clipped reward enters the arm's tree, and the tree's noisy prefix
    sum replaces the sum. Returns the exact value the round's release protects. This is
    DP-UCB's closed node, and 0 for the other rules.
    """
    protected = 0.0
    if kind == THOMPSON:  # a uniform only for a reward strictly inside (0, 1)
        p = min(max(reward, 0.0), 1.0)
        if p == 1.0 or (p > 0.0 and rng.random() < p):
            successes[r, arm] += 1.0
    if kind == LDP_UCB:
        reward = snap_add(min(max(reward, params[2]), params[3]), noise, params[4])
    if kind == DP_UCB:
        if counts[r, arm] >= params[5]:
            raise ValueError("a stream is longer than the horizon")  # (its tree's levels)
        alpha, noisy = tree
        protected, sums[r, arm] = tree_add(alpha[r, arm], noisy[r, arm], counts[r, arm],
                                           min(max(reward, params[2]), params[3]), noise,
                                           params[4])
    else:
        sums[r, arm] += reward
    counts[r, arm] += 1
    t[r] += 1
    return protected


@njit(**_INLINE)
def _no_tree():  # pragma: no cover - compiled
    """The tree argument of the rules without trees."""
    return np.zeros((0, 0, 0)), np.zeros((0, 0, 0))


@njit(**_INLINE)
def _rounds(kind, mode, params, noise, rng, rewards, actions, counts, sums, successes, tree,
            protected, t, cache):  # pragma: no cover - compiled
    """Rounds of the rule ``kind`` over all runs, in place.

    Args:
        kind: the rule. It is a constant in each compiled entry point below, so its other
            branches are compiled away.
        mode: :data:`CHOOSE` writes ``actions[:, 0]``. :data:`UPDATE` learns
            ``rewards[:, 0, 0]`` of ``actions[:, 0]``. :data:`PLAY` plays every round of a
            block: it reads rewards (N, L, K) of every arm and writes actions (N, L).
        params: the rule's constants, listed in the module docstring.
        noise: LDP-UCB's and DP-UCB's noise values, round-major, N per round. This is the
            order in which the mechanism's stream serves the per-round releases. Empty
            otherwise.
        rng: the agent's decision generator.
        rewards: the rewards of the rounds, as ``mode`` says.
        actions: the actions of the rounds, as ``mode`` says.
        counts: (N, K) int64 plays of every arm, in place.
        sums: (N, K) reward sums of every arm, in place.
        successes: (N, K) binarised successes of Thompson, in place; (N, 0) otherwise.
        tree: DP-UCB's ``(alpha, noisy)``, each (N, K, levels), the arms' trees, in place.
        protected: (L N,) where DP-UCB writes what each round's release protects,
            round-major. The mechanism's trace reads it.
        t: (N,) int64 rounds played by every run, in place.
        cache: KL-UCB's and Thompson's (N, K + 1, 4) cache, in place (:func:`choose`).
    """
    n, k = counts.shape
    values = np.empty(k)
    every_arm = rewards.shape[2] > 1
    for s in range(actions.shape[1]):
        if mode & CHOOSE:
            for r in range(n):
                actions[r, s] = choose(kind, params, r, counts, sums, successes, t, rng,
                                       values, cache)
        if mode & UPDATE:
            for r in range(n):
                arm = actions[r, s]
                reward = rewards[r, s, arm] if every_arm else rewards[r, s, 0]
                closed = _update(kind, params, r, arm, reward,
                                 noise[s * n + r] if noise.size else 0.0, counts, sums,
                                 successes, tree, t, rng)
                if kind == DP_UCB:
                    protected[s * n + r] = closed


@njit(**_JIT)
def ucb1_rounds(mode, params, noise, rng, rewards, actions, counts, sums, successes,
                t, cache):  # pragma: no cover - compiled
    """:func:`_rounds` of UCB1."""
    _rounds(UCB1, mode, params, noise, rng, rewards, actions, counts, sums, successes,
            _no_tree(), np.zeros(0), t, cache)


@njit(**_JIT)
def kl_ucb_rounds(mode, params, noise, rng, rewards, actions, counts, sums, successes,
                  t, cache):  # pragma: no cover - compiled
    """:func:`_rounds` of KL-UCB."""
    _rounds(KL_UCB, mode, params, noise, rng, rewards, actions, counts, sums, successes,
            _no_tree(), np.zeros(0), t, cache)


@njit(**_JIT)
def thompson_rounds(mode, params, noise, rng, rewards, actions, counts, sums, successes,
                    t, cache):  # pragma: no cover - compiled
    """:func:`_rounds` of Thompson sampling."""
    _rounds(THOMPSON, mode, params, noise, rng, rewards, actions, counts, sums, successes,
            _no_tree(), np.zeros(0), t, cache)


@njit(**_JIT)
def ldp_ucb_rounds(mode, params, noise, rng, rewards, actions, counts, sums, successes,
                   t):  # pragma: no cover - compiled
    """:func:`_rounds` of LDP-UCB: the server's index and the user's choice, the user's
    report and the server's update.

    The user's report is exactly the mechanism's release, from its noise stream.
    """
    _rounds(LDP_UCB, mode, params, noise, rng, rewards, actions, counts, sums, successes,
            _no_tree(), np.zeros(0), t, np.zeros((0, 0, 4)))


@njit(**_JIT)
def dp_ucb_rounds(mode, params, noise, rng, rewards, actions, counts, sums, alpha, noisy,
                  protected, t):  # pragma: no cover - compiled
    """:func:`_rounds` of DP-UCB: the index on the trees' noisy sums.

    The reward is added to the pulled arm's tree with the tree mechanism's next noise value.
    ``alpha`` and ``noisy`` hold the tree's open and released nodes. ``protected`` (L N,)
    gets the closed nodes' exact sums.
    """
    _rounds(DP_UCB, mode, params, noise, rng, rewards, actions, counts, sums,
            np.zeros((0, 0)), (alpha, noisy), protected, t, np.zeros((0, 0, 4)))


#: The compiled entry point of each index rule (DP-UCB's takes its trees too).
ROUNDS = {UCB1: ucb1_rounds, KL_UCB: kl_ucb_rounds, THOMPSON: thompson_rounds,
          LDP_UCB: ldp_ucb_rounds, DP_UCB: dp_ucb_rounds}


@njit(**_JIT)
def index_values(kind, params, counts, sums, t, out):  # pragma: no cover - compiled
    """Every run's index (N, K) of a deterministic rule, +inf for unpulled arms.

    The deterministic rules are UCB1, KL-UCB and LDP-UCB's broadcast.
    """
    n, k = counts.shape
    for r in range(n):
        width = _width(kind, params, t[r])
        for a in range(k):
            out[r, a] = np.inf if counts[r, a] == 0 else _index(kind, params, counts[r, a],
                                                                 sums[r, a], width)
    return out


# --------------------------------------------------------------------------- adversarial rules


@njit(**_INLINE)
def _learning_rate(kind, horizon, k, t):  # pragma: no cover - compiled
    """Exp3's or Tsallis-INF's learning rate eta.

    Exp3's is ``sqrt(2 ln K/(T K))`` with a horizon T > 0, else the anytime
    ``sqrt(ln K/(t K))``. Tsallis-INF's is ``eta_t = 2/sqrt(t + 1)``.
    """
    if kind == TSALLIS_INF:
        return 2.0 / math.sqrt(max(t, 0) + 1.0)
    if horizon > 0:
        return math.sqrt(2.0 * math.log(k) / (horizon * k))
    return math.sqrt(math.log(k) / (max(t, 1) * k))


@njit(**_INLINE)
def _distribution(kind, eta, losses, r, out):  # pragma: no cover - compiled
    """Run r's distribution over the arms from its loss estimates ``losses[r]``, into
    ``out[r]`` (both (N, K), read by index rather than through row views). Exp3's
    ``exp(-eta L)`` normalised; Tsallis-INF's ``4 (eta (L - x))^-2`` normalised, with x the
    root of ``sum_a 4 (eta (L_a - x))^-2 = 1`` (Zimmert and Seldin 2021, Alg 1).

    Newton's method finds x, from ``min L - 2/eta``, where the smallest loss's weight alone is
    1: right of the root, so x decreases to it, the weights being convex and increasing in x.
    With ``q = 2/(eta (L - x))`` the weight is ``q^2`` and its derivative ``eta q^3``. At most
    12 steps; it stops at a step that leaves x unchanged, after which every step would repeat
    it (so the result is that of all 12 steps)."""
    k = losses.shape[1]
    total = 0.0
    if kind == EXP3:
        top = -np.inf
        for a in range(k):
            top = max(top, -eta * losses[r, a])
        for a in range(k):
            out[r, a] = math.exp(-eta * losses[r, a] - top)
            total += out[r, a]
    else:
        x = losses[r, 0]
        for a in range(1, k):
            x = min(x, losses[r, a])
        x -= 2.0 / eta
        for _ in range(12):
            mass, curve = 0.0, 0.0
            for a in range(k):
                q = 2.0 / (eta * (losses[r, a] - x))
                mass += q * q
                curve += q * q * q
            step = x - (mass - 1.0) / (eta * curve)
            if step == x:
                break
            x = step
        for a in range(k):
            q = 2.0 / (eta * (losses[r, a] - x))
            out[r, a] = q * q
            total += out[r, a]
    for a in range(k):
        out[r, a] /= total


@njit(**_INLINE)
def _sample(p, r, u):  # pragma: no cover - compiled
    """The arm of uniform ``u`` under run r's distribution ``p[r]``: how many partial sums lie
    below u."""
    k = p.shape[1]
    arm, cumulative = 0, 0.0
    for a in range(k):
        cumulative += p[r, a]
        if cumulative < u:
            arm += 1
    return min(arm, k - 1)


@njit(**_JIT)
def adversarial_rounds(mode, kind, horizon, rng, rewards, actions, counts, losses, probs,
                       t):  # pragma: no cover - compiled
    """Rounds of Exp3 or Tsallis-INF over all runs, in place.

    ``mode``, ``rewards`` and ``actions`` are as in :func:`_rounds`. Choose draws every
    run's distribution and one uniform per run. The distribution is kept in ``probs``
    (N, K): it is the p of the update. Update adds ``(1 - clip(r, 0, 1))/p[a]`` to the loss
    estimate of the arm played.

    Args:
        mode: as :func:`_rounds`.
        kind: :data:`EXP3` or :data:`TSALLIS_INF`.
        horizon: T for Exp3's rate; 0 gives the anytime rate.
        rng: the agent's decision generator.
        rewards: as :func:`_rounds`.
        actions: as :func:`_rounds`.
        counts: (N, K) int64 plays of every arm, in place.
        losses: (N, K) importance-weighted loss estimates, in place.
        probs: (N, K) the distributions drawn from, in place.
        t: (N,) int64 rounds played by every run, in place.
    """
    n, k = counts.shape
    every_arm = rewards.shape[2] > 1
    for s in range(actions.shape[1]):
        if mode & CHOOSE:
            for r in range(n):
                _distribution(kind, _learning_rate(kind, horizon, k, t[r]), losses, r, probs)
                actions[r, s] = _sample(probs, r, rng.random())
        if mode & UPDATE:
            for r in range(n):
                arm = actions[r, s]
                reward = rewards[r, s, arm] if every_arm else rewards[r, s, 0]
                losses[r, arm] += (1.0 - min(max(reward, 0.0), 1.0)) / probs[r, arm]
                counts[r, arm] += 1
                t[r] += 1


@njit(**_JIT)
def distributions(kind, horizon, losses, t, out):  # pragma: no cover - compiled
    """Every run's distribution (N, K) of Exp3 or Tsallis-INF, as ``adversarial_rounds``
    draws from it."""
    n, k = losses.shape
    for r in range(n):
        _distribution(kind, _learning_rate(kind, horizon, k, t[r]), losses, r, out)
    return out


# --------------------------------------------------------------------------- batched eliminations


@njit(**_INLINE)
def _scheduled(active, owed_to, r, size):  # pragma: no cover - compiled
    """Run r's first active arm owed pulls this epoch (fewer than ``size``); -1 if none. The
    (N, K) arrays are read by index, not through row views."""
    for a in range(active.shape[1]):
        if active[r, a] and owed_to[r, a] < size:
            return a
    return -1


@njit(**_INLINE)
def _first_two_active(active, r):  # pragma: no cover - compiled
    """Run r's first active arm (0 if none, as ``np.argmax``), and whether a second one is
    active."""
    first = -1
    for a in range(active.shape[1]):
        if active[r, a]:
            if first >= 0:
                return first, True
            first = a
    return max(first, 0), False


#: The words of random bits left before each user's message; fewer, and the kernel returns
#: for more (:func:`elimination_rounds`).
WORDS_GUARD = 64


@njit(**_JIT)
def elimination_rounds(mode, kind, start, run, words, cur, rewards, actions, state,
                       bounds):  # pragma: no cover - compiled
    """Rounds of a batched elimination over all runs, round-major, from run ``run`` of round
    ``start``.

    ``state = (active, epoch_counts, held, size, p0, p1, counts, t, ended)``: the schedule's
    and the aggregator's arrays, updated in place (``size`` the epoch's batch size per arm,
    ``p0``, ``p1`` the users' parameters, ``ended`` the runs whose epoch ended);
    ``bounds = (lower, upper)``, the rewards' declared bounds.

    :data:`CHOOSE` writes each run's scheduled arm (the first active arm owed pulls this
    epoch, else the survivor) into ``actions``. :data:`UPDATE` counts ``actions``' rounds
    and, while two arms or more are active, adds each user's message to ``held`` and the user
    to ``epoch_counts``. Rewards are (N, L, K) of every arm, or (N, L, 1) of the arm played.
    The reward x, clipped and rescaled to [0, 1], becomes:

    * SHUFFLE_BITS (``p0`` = gamma): the bit ``u0 < x`` through the blanket,
      :func:`~ldp_gym.wrappers.mechanisms.compiled.blanket_bit` with ``u1, u2``, three
      uniforms of 53 bits, one word each;
    * SECAGG_SHARES (``p0`` = g, ``p1`` = s, the shares' ratio exp(-s/2^40)): the rounding
      and the two exact Polya shares of
      :func:`~ldp_gym.wrappers.mechanisms.compiled.secagg_message`,

    from the 64-bit ``words`` at position ``cur[0]``: only the users who send a message take
    any, in round-major order, so a block takes what its rounds played one by one would.

    Returns:
        ``(round, run)``: where to resume. It stops after a round in which some run's epoch
        got its last user (``ended`` marks those runs), for the analyser to close those
        epochs; before a user with fewer than :data:`WORDS_GUARD` words left or whose words
        ran out, with ``cur[1] = 1`` and ``cur[0]`` at that user's first word, for more words;
        at ``(L, 0)`` when every round is done.
    """
    active, epoch_counts, held, size, p0, p1, counts, t, ended = state
    lower, upper = bounds
    n, length = actions.shape
    every_arm = rewards.shape[2] > 1
    stop = False
    for s in range(start, length):
        for r in range(run if s == start else 0, n):
            survivor, several = _first_two_active(active, r)
            if mode & CHOOSE:
                arm = _scheduled(active, epoch_counts, r, size[r])
                actions[r, s] = arm if arm >= 0 else survivor
            if not mode & UPDATE:
                continue
            arm = actions[r, s]
            if several:  # the survivor's users send nothing
                begin = cur[0]
                if words.shape[0] - begin < WORDS_GUARD:
                    cur[1] = 1
                    return s, r
                reward = rewards[r, s, arm] if every_arm else rewards[r, s, 0]
                x = (min(max(reward, lower), upper) - lower) / (upper - lower)
                if kind == SHUFFLE_BITS:
                    bit = 1 if unit_uniform(words, cur) < x else 0
                    message = blanket_bit(bit, unit_uniform(words, cur), unit_uniform(words, cur),
                                          p0[r])
                else:
                    message = secagg_message(x, size[r], p0[r], p1[r], words, cur)
                if cur[1]:
                    cur[0] = begin
                    return s, r
                held[r, arm] += message
                epoch_counts[r, arm] += 1
                if _scheduled(active, epoch_counts, r, size[r]) < 0:
                    ended[r] = stop = True
            counts[r, arm] += 1
            t[r] += 1
        if stop:
            return s + 1, 0
    return length, 0
