"""The compiled MAB rules through ``ldp_gym.run`` against two yardsticks, in one invocation.

For UCB1, KL-UCB, Thompson sampling, LDP-UCB and DP-UCB (epsilon = 1), Exp3 and Tsallis-INF on
``LDPMAB-v0`` (the paper's five Bernoulli arms), N runs of T rounds, CPU seconds of:

* ``numpy``: the rule over runs as a user would write it in plain numpy, one vectorised step per
  round (ties broken at random, the chosen arm's reward drawn);
* ``limit``: one numba function doing the same arithmetic with the same draws as ldp-gym (every
  arm's Bernoulli reward drawn, as the env draws them; a tie-break uniform only on ties). KL-UCB's
  and Thompson's choice is the kernel's own :func:`~ldp_gym.agents.mab_kernels.choose` (its
  cached index bounds and pass chances), inlined into the limit's loop;
* ``ldp-gym``: ``ldp_gym.run`` (the env draws blocks, the agent's compiled kernel plays them).

Exp3 and Tsallis-INF sample each run's distribution with one uniform and add ``(1 - r)/p`` to
the loss estimate of the arm played. Their numpy yardstick computes the distributions of all runs
at once (Tsallis-INF's normaliser by Newton's method, at most 12 steps, until no run's root
moves), their limit the kernel's arithmetic (its learning rate and distribution,
:func:`~ldp_gym.agents.mab_kernels._learning_rate` and ``_distribution``, inlined) on
the loss estimates (N, K), with no per-arm count or round counter. Fed the agent's and the env's
generators, the limit gives ldp-gym's regret bitwise (checked on single runs, where the env's
block draws are the limit's draws in order).

Each figure is the best of ``--repeat`` timings (CPU time of this process, so another process's
load costs little), taken on one core (:func:`one_core`), where ldp-gym draws its blocks in
the thread that plays them, as it does in a parallel run's workers; the ratios
``ldp-gym / numpy`` (speed-up) and ``limit / ldp-gym`` (share of the limit) compare figures of
the same invocation. Usage::

    python benchmarks/mab_speed.py [--runs 100] [--horizon 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time

import numpy as np
from numba import njit
from scipy import special

import ldp_gym
from ldp_gym.agents import DPUCB, KLUCB, LDPUCB, UCB1, Exp3, ThompsonSampling, TsallisINF
from ldp_gym.agents.mab_kernels import EXP3, TSALLIS_INF, _distribution, _learning_rate, choose
from ldp_gym.envs.mab import DEFAULT_MEANS
from ldp_gym.runner.loop import make_vector_env
from ldp_gym.wrappers.mechanisms import LaplaceMechanism, TreeMechanism

MEANS = np.array(DEFAULT_MEANS)
#: the adversarial rules' kernel kinds
ADVERSARIAL = {"Exp3": EXP3, "Tsallis-INF": TSALLIS_INF}


def ldp_width(horizon: int) -> float:
    """LDP-UCB's width at epsilon = 1 for rewards in [0, 1]."""
    return 4.0 * math.sqrt(2.0 * math.log(horizon))


def dp_ucb_constants(horizon: int) -> tuple[float, float, TreeMechanism]:
    """DP-UCB's c1 and c2 (epsilon = 1, gamma = 0.1) and its tree's calibration."""
    lg = math.log(2.0 / 0.1)
    return (2.0 * lg, math.sqrt(8.0) * math.log(horizon) ** 1.5 * lg,
            TreeMechanism(1.0, horizon, (1,), seed=0))


# ----------------------------------------------------------------------------- numpy yardstick
def numpy_kl_ucb(p: np.ndarray, level: np.ndarray) -> np.ndarray:
    """KL-UCB's index by 10 Newton steps in numpy (as a user would vectorise it)."""
    p = np.clip(p, 0.0, 1.0)
    neg_entropy = special.xlogy(p, p) + special.xlogy(1 - p, 1 - p)
    u_p = -np.log1p(-np.minimum(p, 1.0 - 1e-15))
    u = -np.log1p(-np.minimum(p + np.sqrt(level / 2.0), 1.0 - 1e-15))
    for _ in range(10):
        kl = neg_entropy - special.xlogy(p, -np.expm1(-u)) + (1 - p) * u
        slope = (1 - p) - p / np.maximum(np.expm1(u), 1e-300)
        step = np.where(kl > level, (kl - level) / np.maximum(slope, 1e-300), 0.0)
        u = np.maximum(u - step, u_p)
    return np.where(p >= 1.0, 1.0, np.maximum(-np.expm1(-u), p))


def numpy_rule(rule: str, runs: int, horizon: int, seed: int = 0) -> float:
    """The rule in plain numpy; returns the mean regret (so the work cannot be skipped)."""
    if rule in ADVERSARIAL:
        return numpy_adversarial(rule, runs, horizon, seed)
    rng = np.random.default_rng(seed)
    k = len(MEANS)
    counts, sums, wins = np.zeros((runs, k)), np.zeros((runs, k)), np.zeros((runs, k))
    rows, regret = np.arange(runs), 0.0
    c1, c2, tree = dp_ucb_constants(horizon)
    bits = np.arange(tree.levels)
    alpha, noisy = np.zeros((runs, k, tree.levels)), np.zeros((runs, k, tree.levels))
    for t in range(horizon):
        n = np.maximum(counts, 1)
        if rule == "DP-UCB":
            idx = np.where(counts > 0, sums / n + np.sqrt(c1 / n) + c2 / n, np.inf)
        elif rule == "UCB1":
            idx = np.where(counts > 0, sums / n + np.sqrt(2 * math.log(max(t, 1)) / n), np.inf)
        elif rule == "LDP-UCB":
            idx = np.where(counts > 0, np.minimum(sums / n + ldp_width(horizon) / np.sqrt(n), 1.0),
                           np.inf)
        elif rule == "KL-UCB":
            idx = np.where(counts > 0, numpy_kl_ucb(sums / n, math.log(max(t, 1)) / n), np.inf)
        else:
            idx = rng.beta(1 + wins, 1 + counts - wins)
        ties = idx == idx.max(axis=1, keepdims=True)
        arm = (rng.random((runs, k)) * ties).argmax(axis=1)
        r = (rng.random(runs) < MEANS[arm]).astype(np.float64)
        if rule == "LDP-UCB":  # the user's report: reward + Laplace(1/epsilon), epsilon = 1
            r = r + rng.laplace(0.0, 1.0, runs)
        if rule == "Thompson":
            wins[rows, arm] += rng.random(runs) < r
        if rule == "DP-UCB":  # the binary tree over runs: close node j, noise it, sum the digits
            i = counts[rows, arm].astype(np.int64) + 1
            j = np.log2(i & -i).astype(np.int64)
            below = bits < j[:, None]
            node = alpha[rows, arm]
            closed = (node * below).sum(axis=1) + r
            node[below] = 0.0
            node[rows, j] = closed
            alpha[rows, arm] = node
            released = noisy[rows, arm]
            released[rows, j] = closed + rng.laplace(0.0, tree.scale, runs)
            noisy[rows, arm] = released
            r = (released * ((i[:, None] >> bits) & 1)).sum(axis=1) - sums[rows, arm]
        counts[rows, arm] += 1
        sums[rows, arm] += r
        regret += (MEANS.max() - MEANS[arm]).sum()
    return regret / runs


def numpy_adversarial(rule: str, runs: int, horizon: int, seed: int = 0) -> float:
    """Exp3 or Tsallis-INF in plain numpy: every run's distribution, one uniform to sample it."""
    rng = np.random.default_rng(seed)
    k, kind, agent_horizon = len(MEANS), ADVERSARIAL[rule], agent_for(rule, horizon).horizon or 0
    losses, rows, regret = np.zeros((runs, k)), np.arange(runs), 0.0
    for t in range(horizon):
        eta = _learning_rate.py_func(kind, agent_horizon, k, t)
        if kind == EXP3:
            w = np.exp(-eta * losses - (-eta * losses).max(axis=1, keepdims=True))
        else:  # q^2 with q = 2/(eta (L - x)), x by Newton's method on sum = 1 (derivative eta q^3)
            x = losses.min(axis=1, keepdims=True) - 2.0 / eta
            for _ in range(12):
                q = 2.0 / (eta * (losses - x))
                step = x - ((q * q).sum(axis=1, keepdims=True) - 1.0) \
                    / (eta * (q * q * q).sum(axis=1, keepdims=True))
                if (step == x).all():
                    break
                x = step
            q = 2.0 / (eta * (losses - x))
            w = q * q
        p = w / w.sum(axis=1, keepdims=True)
        arm = np.minimum((p.cumsum(axis=1) < rng.random((runs, 1))).sum(axis=1), k - 1)
        r = (rng.random(runs) < MEANS[arm]).astype(np.float64)
        losses[rows, arm] += (1.0 - r) / p[rows, arm]
        regret += (MEANS.max() - MEANS[arm]).sum()
    return regret / runs


# ----------------------------------------------------------------------------- the limit
@njit(cache=True, error_model="numpy")
def _limit(kind, runs, horizon, means, rng, grid, p, width, c1, c2, levels, tree_grid,
           tree_p):  # pragma: no cover - compiled
    k = means.shape[0]
    counts, sums = np.zeros((runs, k)), np.zeros((runs, k))
    alpha, noisy = np.zeros((runs, k, levels)), np.zeros((runs, k, levels))
    values, x = np.empty(k), np.empty(k)
    best_mean, regret = means.max(), 0.0
    arms = np.empty(runs, np.int64)
    for t in range(horizon):
        for r in range(runs):
            log_t = math.log(max(t, 1))
            for a in range(k):
                if counts[r, a] == 0:
                    values[a] = np.inf
                elif kind == 3:
                    values[a] = min(sums[r, a] / counts[r, a] + width / math.sqrt(counts[r, a]),
                                    1.0)
                elif kind == 4:
                    n = counts[r, a]
                    values[a] = sums[r, a] / n + math.sqrt(c1 / n) + c2 / n
                else:
                    values[a] = sums[r, a] / counts[r, a] + math.sqrt(2.0 * log_t / counts[r, a])
            top, ties, arm = -np.inf, 0, 0
            for a in range(k):
                if values[a] > top:
                    top, ties, arm = values[a], 1, a
                elif values[a] == top:
                    ties += 1
            if ties > 1:
                j = int(rng.random() * ties)
                for a in range(k):
                    if values[a] == top:
                        if j == 0:
                            arm = a
                            break
                        j -= 1
            arms[r] = arm
        for r in range(runs):  # every arm's reward, as the env draws them
            for a in range(k):
                x[a] = 1.0 if rng.random() < means[a] else 0.0
            arm = arms[r]
            value = x[arm]
            if kind == 3:  # float-safe Laplace: snapped input plus a discrete Laplace draw
                value = np.rint(value / grid) * grid + (rng.geometric(p) - rng.geometric(p)) * grid
            if kind == 4:  # the tree: close node j, release it on the grid, sum the digits
                i = int(counts[r, arm]) + 1
                j = 0
                while (i >> j) & 1 == 0:
                    j += 1
                closed = value
                for b in range(j):
                    closed += alpha[r, arm, b]
                    alpha[r, arm, b] = 0.0
                alpha[r, arm, j] = closed
                noisy[r, arm, j] = np.rint(closed / tree_grid) * tree_grid \
                    + (rng.geometric(tree_p) - rng.geometric(tree_p)) * tree_grid
                value = -sums[r, arm]
                for b in range(levels):
                    if (i >> b) & 1:
                        value += noisy[r, arm, b]
            counts[r, arm] += 1.0
            sums[r, arm] += value
            regret += best_mean - means[arm]
    return regret / runs


@njit(cache=True, error_model="numpy")
def _limit_choice(kind, runs, horizon, means, rng, c):  # pragma: no cover - compiled
    """KL-UCB (kind 1) and Thompson (kind 2): the kernel's choice, Bernoulli rewards, the update."""
    k = means.shape[0]
    counts, sums = np.zeros((runs, k), np.int64), np.zeros((runs, k))
    wins = np.zeros((runs, k if kind == 2 else 0))
    t, cache = np.zeros(runs, np.int64), np.full((runs, k + 1, 4), -1.0)
    params, values, x = np.array([c]), np.empty(k), np.empty(k)
    best_mean, regret = means.max(), 0.0
    arms = np.empty(runs, np.int64)
    for _ in range(horizon):
        for r in range(runs):
            arms[r] = choose(kind, params, r, counts, sums, wins, t, rng, values, cache)
        for r in range(runs):  # every arm's reward, as the env draws them
            for a in range(k):
                x[a] = 1.0 if rng.random() < means[a] else 0.0
            arm = arms[r]
            if kind == 2:  # a 0/1 reward is its own success: no binarising uniform
                wins[r, arm] += x[arm]
            counts[r, arm] += 1
            sums[r, arm] += x[arm]
            t[r] += 1
            regret += best_mean - means[arm]
    return regret / runs


@njit(cache=True, error_model="numpy")
def _limit_adversarial(kind, runs, horizon, means, rng, env_rng, agent_horizon):  # pragma: no cover
    """Exp3 and Tsallis-INF: the kernel's distribution and sample (``rng``), every arm's reward
    (``env_rng``), the loss estimate's update."""
    k = means.shape[0]
    losses, probs, drawn = np.zeros((runs, k)), np.zeros((runs, k)), np.empty(k)
    best_mean, regret = means.max(), 0.0
    arms = np.empty(runs, np.int64)
    for t in range(horizon):
        eta = _learning_rate(kind, agent_horizon, k, t)
        for r in range(runs):
            _distribution(kind, eta, losses, r, probs)  # the kernel's, inlined
            u, arm, cumulative = rng.random(), 0, 0.0
            for a in range(k):  # the arm: how many partial sums lie below u
                cumulative += probs[r, a]
                if cumulative < u:
                    arm += 1
            arms[r] = min(arm, k - 1)
        for r in range(runs):  # every arm's reward, as the env draws them
            for a in range(k):
                drawn[a] = 1.0 if env_rng.random() < means[a] else 0.0
            arm = arms[r]
            losses[r, arm] += (1.0 - drawn[arm]) / probs[r, arm]
            regret += best_mean - means[arm]
    return regret / runs


def agent_for(rule: str, horizon: int, runs: int = 1):
    """The rule's agent as ``ldp_gym.run`` builds it (from_env on the registered env)."""
    cls, kwargs = AGENT[rule]
    return cls.from_env(make_vector_env("LDPMAB-v0", runs, horizon, means=MEANS), **kwargs)


def limit_rule(rule: str, runs: int, horizon: int, seed: int = 0) -> float:
    if rule in ADVERSARIAL:  # one generator for both streams, as the other limits
        rng = np.random.default_rng(seed)
        return _limit_adversarial(ADVERSARIAL[rule], runs, horizon, MEANS, rng, rng,
                                  agent_for(rule, horizon).horizon or 0)
    kind = {"UCB1": 0, "KL-UCB": 1, "Thompson": 2, "LDP-UCB": 3, "DP-UCB": 4}[rule]
    if kind in (1, 2):
        return _limit_choice(kind, runs, horizon, MEANS, np.random.default_rng(seed), 0.0)
    mech = LaplaceMechanism(1.0, 0.0, 1.0, seed=0)
    p = float(mech._geometric_p(mech.sensitivity, mech.grid))
    c1, c2, tree = dp_ucb_constants(horizon)
    return _limit(kind, runs, horizon, MEANS, np.random.default_rng(seed), mech.grid, p,
                  ldp_width(horizon), c1, c2, tree.levels, tree.grid,
                  float(tree._geometric_p(tree.node_sensitivity, tree.grid)))


# ----------------------------------------------------------------------------- ldp-gym
AGENT = {"UCB1": (UCB1, {}), "KL-UCB": (KLUCB, {}), "Thompson": (ThompsonSampling, {}),
         "LDP-UCB": (LDPUCB, {"epsilon": 1.0}), "DP-UCB": (DPUCB, {"epsilon": 1.0}),
         "Exp3": (Exp3, {}), "Tsallis-INF": (TsallisINF, {})}


def ldp_gym_rule(rule: str, runs: int, horizon: int, seed: int = 0) -> float:
    res = ldp_gym.run("LDPMAB-v0", {rule: AGENT[rule]}, horizon=horizon, n_runs=runs, seed=seed,
                      progress=False, env_kwargs={"means": MEANS})
    return float(res.regret[rule][:, -1].mean())


def cpu_time(fn, *args) -> tuple[float, float]:
    start = time.process_time()
    value = fn(*args)
    return time.process_time() - start, value


def yardstick_parser(doc: str, horizon: int,
                     horizon_help: str | None = None) -> argparse.ArgumentParser:
    """The flags every yardstick script takes: ``--runs`` (100), ``--horizon`` (its default
    ``horizon``) and ``--repeat`` (3), described by the first line of the script's ``doc``."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--horizon", type=int, default=horizon, help=horizon_help)
    p.add_argument("--repeat", type=int, default=3)
    return p


@contextlib.contextmanager
def one_core():
    """This thread, and the threads it starts, on one core. ldp-gym then draws ahead in this
    thread (no core is spare: :func:`ldp_gym.background.spare_core`), so every column of a
    yardstick row is the work of one thread on one core."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)


def yardstick_row(fns, repeat: int, *args, value: str = ">5.0f") -> tuple[str, list[float]]:
    """One row of a yardstick table (this script's and the ``*_limits.py`` ones).

    Each of ``fns`` (numpy, limit, ldp-gym) runs on ``args``. Its cell is the best of
    ``repeat`` CPU timings with the result it returned (a mean regret, formatted by
    ``value``), then ``x numpy`` (numpy / ldp-gym) and ``% limit`` (limit / ldp-gym). The
    timings are interleaved (numpy, limit, ldp-gym, numpy, ...), so that a slow spell of a
    shared machine does not take all the timings of one column. They are taken on one core
    (:func:`one_core`). Returns the text and the three CPU times."""
    with one_core():
        rounds = [[cpu_time(fn, *args) for fn in fns] for _ in range(repeat)]
    cells = [min(timings[i] for timings in rounds) for i in range(len(fns))]
    seconds = [t for t, _ in cells]
    text = "".join(f"{t:>9.2f} ({v:{value}})" for t, v in cells)
    return text + f"{seconds[0] / seconds[2]:>9.2f}{100 * seconds[1] / seconds[2]:>8.0f}%", seconds


def main() -> None:
    p = yardstick_parser(__doc__, 100_000)
    p.add_argument("--rules", default="UCB1,KL-UCB,Thompson,LDP-UCB,DP-UCB,Exp3,Tsallis-INF")
    args = p.parse_args()
    rules = args.rules.split(",")
    for rule in rules:  # compile and warm up
        for fn in (numpy_rule, limit_rule, ldp_gym_rule):
            fn(rule, 4, 200)
    print(f"{args.runs} runs x {args.horizon} rounds; load average {os.getloadavg()[0]:.2f}; "
          f"best of {args.repeat}; CPU seconds (mean regret at T)")
    print(f"{'rule':<12}{'numpy':>17}{'limit':>17}{'ldp-gym':>17}{'x numpy':>9}{'% limit':>9}")
    for rule in rules:
        text, _ = yardstick_row((numpy_rule, limit_rule, ldp_gym_rule), args.repeat, rule,
                                args.runs, args.horizon)
        print(f"{rule:<12}{text}", flush=True)


if __name__ == "__main__":
    main()
