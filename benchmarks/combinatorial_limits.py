"""The combinatorial semi-bandit agents through ``ldp_gym.run`` against two yardsticks, in one invocation.

For CUCB, CUCB-LDP1, CUCB-LDP2 and CUCB-DP (Chen et al. 2020, Alg 1, 2 and 3; epsilon = 1) on
``LDPCombinatorialBandit-v0`` (top-K family, m = 20 Bernoulli base arms of means uniform in
[0, 1], K = 4), N runs of T rounds, CPU seconds of:

* ``numpy``: the algorithm over runs as a user would write it in plain numpy, one vectorised
  step per round: every base arm's Bernoulli outcome (``uniform < mean``, as the env draws them),
  the capped UCB index of every base arm (CUCB: ``mean + sqrt(1.5 ln t / T_i)``; CUCB-LDP1:
  ``noisy mean + 4 sqrt(2 K^2 ln T) / (epsilon sqrt(T_i))``) with the agent's random tie-break
  at the cap (unpulled arms first), the super arm by ``argpartition`` (the K largest weights,
  after the first only the positive ones), the semi-bandit update of S's counts and sums;
  CUCB-LDP1's user clips each outcome of S to [0, 1], snaps it to the mechanism's grid and adds
  discrete Laplace noise (a difference of two geometric draws), as its ``LaplaceMechanism`` does;
* ``limit``: one numba function doing ldp-gym's arithmetic per run-round with the same draws
  (every base arm's outcome uniform, every base arm's tie-break uniform, two geometric draws
  per noised outcome of S; the index kept as the block kernel keeps it, CUCB's ``1.5 ln t``
  once per round, the family's compiled oracle ``_block_best_row``), with no env object, no
  runner and no block arrays;
* CUCB-LDP2 and CUCB-DP (``numpy_private``, ``limit_private``): the same round with their
  constant widths (LDP2: ``noisy mean + 4 sqrt(2 ln T) / (epsilon sqrt(T_i))``; DP:
  ``noisy mean + sqrt(4 ln(mT) / T_i) + 12 K ln^3 T / (epsilon T_i)``). CUCB-LDP2's user sends
  the least-pulled arm of S (lowest index on ties) released by its ``LaplaceMechanism`` (one
  noise value per user), and only that arm is updated. CUCB-DP's server puts each outcome of S
  into its arm's binary tree: the node of level j (the trailing zeros of T_i) closes with the
  sum of the open nodes below it, released snapped plus discrete Laplace on the tree's grid,
  and the sum is the prefix over T_i's binary digits. The numpy user does this for all the
  outcomes of a round at once (node sums by numpy's ``sum``); the limit calls the library's
  ``tree_add`` and takes the env's, the decisions' and the noise's generators apart (the same
  one here). Fed ldp-gym's own generators and instance, it gives ``ldp_gym.run``'s mean regret
  to 1e-12 (the order of the regret's sum), at epsilon 1 and 3000 (checked apart, 8 runs);
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks of outcomes, the agent's compiled kernel
  plays them, the env scores the super arms).

The mean regret at T of each (in brackets) must agree within noise: that is the check that the
three run the same algorithm. With epsilon = 1 and K = 4, CUCB-LDP1's width (71 / sqrt(T_i) at
T = 20000) keeps its indices at the cap 1 until the arms have some 5000 pulls (each is pulled
about T/5 times), so up to T = 20000 its regret is that of random super arms: it checks the
tie-break and the oracle, and the noise costs time but moves no regret (at T = 100000 it learns,
and the three still agree). CUCB-DP's privacy width, 46600 / T_i at T = 20000 (73000 / T_i at
T = 100000), keeps it at the cap at either horizon: its regret too is that of random super
arms, and its trees cost time only. CUCB-LDP2's width, 18 / sqrt(T_i) with some T/20 updates of
each arm, lets it start learning before T = 20000. Each figure is the best of ``--repeat``
timings (CPU time of this process on one core, where ldp-gym draws the next block of outcomes
and of noise in the thread that plays them); the ratios ``ldp-gym / numpy`` (speed-up) and
``limit / ldp-gym`` (share of the limit) compare figures of the same invocation. Usage::

    python benchmarks/combinatorial_limits.py [--runs 100] [--horizon 20000] [--repeat 3]
"""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
from mab_speed import yardstick_parser, yardstick_row  # benchmarks/ is the script's path
from numba import njit

import ldp_gym
from ldp_gym.agents import CUCB, CUCBDP, CUCBLDP1, CUCBLDP2
from ldp_gym.agents.combinatorial import _cucb_a
from ldp_gym.oracles import _block_best_row
from ldp_gym.wrappers.mechanisms.compiled import snap_add
from ldp_gym.wrappers.mechanisms.continual import tree_add

ENV = "LDPCombinatorialBandit-v0"
ENV_KWARGS = {"n_arms": 20, "max_size": 4, "family": "topk"}
AGENT = {"CUCB": (CUCB, {}), "CUCB-LDP1": (CUCBLDP1, {"epsilon": 1.0}),
         "CUCB-LDP2": (CUCBLDP2, {"epsilon": 1.0}), "CUCB-DP": (CUCBDP, {"epsilon": 1.0})}


def constants(horizon: int, epsilon: float = 1.0) -> dict:
    """The instance's and the agents' constants, read from the env and the agents themselves;
    CUCB-LDP2's and CUCB-DP's under their names: the width terms ``b``, ``c`` of the index
    ``mean + b/sqrt(T_i)`` (LDP2) or ``mean + sqrt(b/T_i) + c/T_i`` (DP), the noise's grid and
    geometric p, the trees' levels."""
    env = gym.make(ENV, max_episode_steps=horizon, **ENV_KWARGS)
    ldp1 = CUCBLDP1.from_env(env, epsilon=epsilon, seed=0)
    mech = ldp1.mechanism
    ldp2 = CUCBLDP2.from_env(env, epsilon=epsilon, seed=0)
    dp = CUCBDP.from_env(env, epsilon=epsilon, seed=0)
    m2, tree = ldp2.mechanism, dp.tree
    return {"m": ldp1.n_arms, "K": ldp1.K, "a": float(_cucb_a(np.e)),  # CUCB's 1.5 of 1.5 ln t
            "width": ldp1.width, "grid": mech.grid, "lower": mech.lower, "upper": mech.upper,
            "p": float(mech._geometric_p(mech.sensitivity, mech.grid)),
            "CUCB-LDP2": {"b": ldp2.width, "c": 0.0, "grid": m2.grid, "levels": 0,
                          "p": float(m2._geometric_p(m2.sensitivity, m2.grid))},
            "CUCB-DP": {"b": dp._c1, "c": dp._c2, "grid": tree.grid, "levels": tree.levels,
                        "p": float(tree._geometric_p(tree.node_sensitivity, tree.grid))}}


def _means(rng: np.random.Generator, runs: int, c: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every run's means, uniform in [0, 1] as the env draws them, and opt, the K largest."""
    mu = rng.random((runs, c["m"]))
    return mu, np.sort(mu, axis=1)[:, -c["K"]:].sum(axis=1)


# ----------------------------------------------------------------------------- numpy yardstick
def _numpy_super_arm(counts: np.ndarray, sums: np.ndarray, n: np.ndarray, width: np.ndarray,
                     u: np.ndarray, k: int) -> np.ndarray:
    """The user's super arm S (N, m) bool: the capped index ``min(sums/n + width, 1)``, ties at
    the cap broken by the uniforms u (unpulled arms first, above every uncapped index), then
    the top-K oracle."""
    unpulled = counts == 0
    index = np.minimum(sums / n + width, 1.0)
    uncapped = ~unpulled & (index < 1.0)
    top = np.where(uncapped, index, 0.0).max(axis=1, initial=0.0)[:, None]
    q = 0.25 - 0.25 * top  # capped arms above every uncapped one, unpulled first
    w = np.where(uncapped, index, 1.0 - q + 0.5 * q * (u + unpulled))
    pick = np.argpartition(-w, k - 1, axis=1)[:, :k]
    wk = np.take_along_axis(w, pick, axis=1)
    S = np.zeros(counts.shape, dtype=bool)
    np.put_along_axis(S, pick, (wk > 0.0) | (wk == wk.max(axis=1, keepdims=True)), axis=1)
    return S


def numpy_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """The agent in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    rng = np.random.default_rng(seed)
    mu, opt = _means(rng, runs, c)
    m, k, g, ldp = c["m"], c["K"], c["grid"], agent == "CUCB-LDP1"
    counts, sums, regret = np.zeros((runs, m)), np.zeros((runs, m)), 0.0
    for t in range(horizon):
        x = rng.random((runs, m)) < mu  # the env: every base arm's outcome
        u = rng.random((runs, m))  # the agent's tie-break uniforms
        n = np.maximum(counts, 1)
        width = c["width"] / np.sqrt(n) if ldp else np.sqrt(c["a"] * math.log(max(t, 1)) / n)
        S = _numpy_super_arm(counts, sums, n, width, u, k)
        regret += (opt - np.where(S, mu, 0.0).sum(axis=1)).sum()
        counts += S
        if ldp:  # the user's LaplaceMechanism on each outcome of S: clip, snap, discrete Laplace
            geo = rng.geometric(c["p"], size=(int(S.sum()), 2))
            sums[S] += np.rint(np.clip(x[S], c["lower"], c["upper"]) / g) * g \
                + (geo[:, 0] - geo[:, 1]) * g + 0.0
        else:
            sums += S & x
    return regret / runs


def numpy_private(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    """CUCB-LDP2 or CUCB-DP in plain numpy (as :func:`numpy_agent`); returns the mean regret."""
    rng = np.random.default_rng(seed)
    mu, opt = _means(rng, runs, c)
    m, k, dp, q = c["m"], c["K"], agent == "CUCB-DP", c[agent]
    b, cc, g, levels = q["b"], q["c"], q["grid"], np.arange(q["levels"])
    counts, sums, regret = np.zeros((runs, m), np.int64), np.zeros((runs, m)), 0.0
    alpha, noisy = np.zeros((runs, m, q["levels"])), np.zeros((runs, m, q["levels"]))  # DP's trees
    for _ in range(horizon):
        x = rng.random((runs, m)) < mu  # the env: every base arm's outcome
        u = rng.random((runs, m))  # the agent's tie-break uniforms
        n = np.maximum(counts, 1)
        width = np.sqrt(b / n) + cc / n if dp else b / np.sqrt(n)
        S = _numpy_super_arm(counts, sums, n, width, u, k)
        regret += (opt - np.where(S, mu, 0.0).sum(axis=1)).sum()
        if dp:  # each outcome of S enters its arm's tree: the node of level j closes, released
            r, i = np.nonzero(S)
            e, cnt = np.arange(r.size), counts[r, i] + 1
            j = np.log2(cnt & -cnt).astype(np.int64)  # the trailing zeros of the element's index
            below = levels < j[:, None]
            a, nz = alpha[r, i], noisy[r, i]
            a[e, j] = np.where(below, a, 0.0).sum(axis=1) + np.clip(x[r, i], c["lower"], c["upper"])
            a[below] = 0.0
            geo = rng.geometric(q["p"], size=(r.size, 2))
            nz[e, j] = np.rint(a[e, j] / g) * g + (geo[:, 0] - geo[:, 1]) * g + 0.0
            alpha[r, i], noisy[r, i] = a, nz
            sums[r, i] = np.where((cnt[:, None] >> levels) & 1, nz, 0.0).sum(axis=1)  # prefix sum
            counts[r, i] = cnt
        else:  # the user sends the least-pulled arm of S, released by its LaplaceMechanism
            rows, arm = np.arange(runs), np.where(S, counts, np.iinfo(np.int64).max).argmin(axis=1)
            geo = rng.geometric(q["p"], size=(runs, 2))
            sums[rows, arm] += np.rint(np.clip(x[rows, arm], c["lower"], c["upper"]) / g) * g \
                + (geo[:, 0] - geo[:, 1]) * g + 0.0
            counts[rows, arm] += 1
    return regret / runs


# ----------------------------------------------------------------------------- the limit
@njit(cache=True, error_model="numpy")
def _limit(ldp, runs, horizon, rng, mu, opt, k, a, width, grid, p):  # pragma: no cover - compiled
    m = mu.shape[1]
    counts, sums = np.zeros((runs, m), np.int64), np.zeros((runs, m))
    index = np.zeros((runs, m))  # CUCB: the mean; CUCB-LDP1: the capped index (constant width)
    x, w = np.empty(m), np.empty(m)
    S = np.zeros(m, np.bool_)
    vals, picks = np.empty(k), np.empty(k, np.int64)
    regret = 0.0
    for t in range(horizon):
        at = a * math.log(max(t, 1))
        for n in range(runs):
            for i in range(m):  # the env: every base arm's outcome
                x[i] = 1.0 if rng.random() < mu[n, i] else 0.0
            top = 0.0
            for i in range(m):  # the capped index of the pulled arms, and the largest below 1
                if counts[n, i] > 0:
                    v = index[n, i] if ldp else min(index[n, i] + np.sqrt(at / counts[n, i]), 1.0)
                    w[i] = v
                    if v < 1.0 and v > top:
                        top = v
            q = 0.25 - 0.25 * top
            for i in range(m):  # the tie-break at the cap: one uniform per arm, unpulled first
                uu = rng.random()
                if counts[n, i] == 0:
                    w[i] = 1.0 - q + 0.5 * q * (uu + 1.0)
                elif w[i] >= 1.0:
                    w[i] = 1.0 - q + 0.5 * q * (uu + 0.0)
            S[:] = False
            _block_best_row(w, m, k, vals, picks, S)  # the top-K oracle
            mean = 0.0
            for i in range(m):
                if S[i]:
                    mean += mu[n, i]
                    counts[n, i] += 1
                    kn = float(counts[n, i])
                    if ldp:  # the user's release: x snapped to the grid + discrete Laplace
                        noise = (rng.geometric(p) - rng.geometric(p)) * grid
                        sums[n, i] += np.rint(x[i] * (1.0 / grid)) * grid + noise + 0.0
                        index[n, i] = min(sums[n, i] / kn + width / np.sqrt(kn), 1.0)
                    else:
                        sums[n, i] += x[i]
                        index[n, i] = sums[n, i] / kn
            regret += opt[n] - mean
    return regret / runs


def limit_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    mu, opt = _means(rng, runs, c)
    return _limit(agent == "CUCB-LDP1", runs, horizon, rng, mu, opt, c["K"], c["a"], c["width"],
                  c["grid"], c["p"])


@njit(cache=True, error_model="numpy")
def _limit_private(dp, runs, horizon, env, dec, noise, mu, opt, k, b, c, grid, p,
                   levels):  # pragma: no cover - compiled
    """CUCB-LDP2 (``dp`` False) or CUCB-DP as :func:`_limit`, with the env's, the decisions' and
    the noise's generators apart (one and the same here; ldp-gym's own to check it on its draws)."""
    m = mu.shape[1]
    counts, sums = np.zeros((runs, m), np.int64), np.zeros((runs, m))
    index = np.zeros((runs, m))  # the capped index (constant widths)
    alpha, noisy = np.zeros((runs, m, levels)), np.zeros((runs, m, levels))  # CUCB-DP's trees
    x, w = np.empty(m), np.empty(m)
    S = np.zeros(m, np.bool_)
    vals, picks = np.empty(k), np.empty(k, np.int64)
    regret = 0.0
    for _ in range(horizon):
        for n in range(runs):
            for i in range(m):  # the env: every base arm's outcome
                x[i] = 1.0 if env.random() < mu[n, i] else 0.0
            top = 0.0
            for i in range(m):
                v = index[n, i]
                if counts[n, i] > 0 and v < 1.0 and v > top:
                    top = v
            q = 0.25 - 0.25 * top
            for i in range(m):  # the tie-break at the cap: one uniform per arm, unpulled first
                uu = dec.random()
                if counts[n, i] == 0:
                    w[i] = 1.0 - q + 0.5 * q * (uu + 1.0)
                elif index[n, i] >= 1.0:
                    w[i] = 1.0 - q + 0.5 * q * (uu + 0.0)
                else:
                    w[i] = index[n, i]
            S[:] = False
            _block_best_row(w, m, k, vals, picks, S)  # the top-K oracle
            mean, arm, least = 0.0, -1, np.iinfo(np.int64).max
            for i in range(m):
                if S[i]:
                    mean += mu[n, i]
                    if counts[n, i] < least:  # LDP2's arm: the least pulled, lowest index
                        arm, least = i, counts[n, i]
            regret += opt[n] - mean
            if dp:  # each outcome of S enters its arm's tree with the next noise value
                for i in range(m):
                    if S[i]:
                        g = (noise.geometric(p) - noise.geometric(p)) * grid
                        _, sums[n, i] = tree_add(alpha[n, i], noisy[n, i], counts[n, i], x[i], g,
                                                 grid)
                        counts[n, i] += 1
                        kn = float(counts[n, i])
                        index[n, i] = min(sums[n, i] / kn + np.sqrt(b / kn) + c / kn, 1.0)
            else:  # the user's release of the least-pulled arm of S; one noise value per user
                g = (noise.geometric(p) - noise.geometric(p)) * grid
                sums[n, arm] += snap_add(x[arm], g, grid)
                counts[n, arm] += 1
                kn = float(counts[n, arm])
                index[n, arm] = min(sums[n, arm] / kn + b / np.sqrt(kn), 1.0)
    return regret / runs


def limit_private(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    mu, opt = _means(rng, runs, c)
    q = c[agent]
    return _limit_private(agent == "CUCB-DP", runs, horizon, rng, rng, rng, mu, opt, c["K"], q["b"],
                          q["c"], q["grid"], q["p"], max(q["levels"], 1))


# ----------------------------------------------------------------------------- ldp-gym
def ldp_gym_agent(agent: str, runs: int, horizon: int, c: dict, seed: int = 0) -> float:
    res = ldp_gym.run(ENV, {agent: AGENT[agent]}, horizon=horizon, n_runs=runs, seed=seed,
                      progress=False, env_kwargs=ENV_KWARGS)
    return float(res.regret[agent][:, -1].mean())


#: each agent's numpy and limit yardsticks
YARDSTICKS = {"CUCB": (numpy_agent, limit_agent), "CUCB-LDP1": (numpy_agent, limit_agent),
              "CUCB-LDP2": (numpy_private, limit_private), "CUCB-DP": (numpy_private, limit_private)}


def main() -> None:
    args = yardstick_parser(__doc__, 20_000).parse_args()
    c = constants(args.horizon)
    print(f"{args.runs} runs x {args.horizon} rounds; m = {c['m']}, K = {c['K']}, top-K; load "
          f"average {os.getloadavg()[0]:.2f}; best of {args.repeat}; CPU seconds (mean regret "
          f"at T)")
    print(f"{'agent':<11}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}{'x numpy':>9}{'% limit':>9}")
    for agent in AGENT:
        fns = (*YARDSTICKS[agent], ldp_gym_agent)
        for fn in fns:  # compile and warm up
            fn(agent, 2, 50, c)
        text, _ = yardstick_row(fns, args.repeat, agent, args.runs, args.horizon, c)
        print(f"{agent:<11}{text}", flush=True)


if __name__ == "__main__":
    main()
